package main

import (
	"math/bits"
	"strings"
	"syscall"
	"testing"
	"time"

	"colo/resctrl/emu"
)

// TestProfileMatrix (issue #32 must-show, with agent/TestProfileMatrixAgent for the
// agent column and resctrl/emu's conformance suite, which runs over every profile, for
// the conformance column): on every built-in emulator profile, `colo run
// examples/linux/colocation.yaml --platform linux` on real Docker puts both jobs in
// groups of their own with narrowed masks on the mount's first L3 domain id, is killed
// with SIGKILL, and `colo cleanup` leaves no container, network or group and the
// default schemata as before. Profiles run four at a time (each is a few Docker
// containers and one FUSE mount).
//
// This VM has one socket and one L3, so colo run's machine has one domain: it writes
// the mount's first domain id (amd-genoa's 0, amd-gap's 0); the agent column writes on
// each profile's own topology.
func TestProfileMatrix(t *testing.T) {
	sem := make(chan struct{}, 4)
	for _, name := range emu.ProfileNames() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sem <- struct{}{}
			defer func() { <-sem }()
			start := time.Now()
			e := newLinuxRunEnvOn(t, name)
			cmd, log, dir := e.startRun(t)
			e.waitAllocatedAndSampled(t, dir, log)
			first := e.em.Profile().L3IDs()[0]
			for _, g := range e.em.State().Groups {
				if g.IsMon || !strings.HasPrefix(g.Path, "colo.") {
					continue
				}
				res := "L3"
				if _, ok := g.Schemata["L3CODE"]; ok {
					res = "L3CODE"
				}
				full := uint32(1)<<e.em.Profile().L3.CBMLen - 1
				if m := g.Schemata[res][0]; m == 0 || m == full || bits.OnesCount32(m) == 0 {
					t.Errorf("group %s holds %s %#x on domain id %d: not a partition", g.Path, res, m, first)
				}
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			for try := 1; ; try++ {
				out, err := runColo(t, "cleanup", "--state-dir", e.state)
				if err == nil {
					break
				}
				if try == 5 {
					t.Fatalf("colo cleanup: %v\n%s", err, out)
				}
				time.Sleep(time.Second)
			}
			if cn, nn, gn, defOK := e.leftovers(t, cmd.Process.Pid); cn != 0 || nn != 0 || gn != 0 || !defOK {
				t.Fatalf("kill -9 + colo cleanup on %s: %d containers, %d networks, %d groups, default schemata restored %v",
					name, cn, nn, gn, defOK)
			}
			t.Logf("%s: run, kill -9, cleanup in %v", name, time.Since(start).Round(time.Millisecond))
		})
	}
}
