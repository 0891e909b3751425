package linux

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"

	"colo/resctrl"
	"colo/resctrl/journal"
	"colo/workload"
	"colo/workload/docker"
	"colo/workload/process"
)

// Cleanup removes what dead colo runs left, as their journals under stateDir record it
// (resctrl/journal): the containers (Docker, or the process runtime's workloads) and the
// Docker network labelled with each dead run, the resctrl groups each recorded on its
// mount, and system/default's schemata as each found it. Live runs, other agents and
// everything else are left alone. It returns one line per thing it did. mount opens a
// recorded resctrl root (nil: the filesystem at that path).
func Cleanup(ctx context.Context, stateDir string, mount func(root string) resctrl.FS) ([]string, error) {
	rs, err := journal.ListAll(stateDir)
	if err != nil {
		return nil, err
	}
	var did []string
	var errs []error
	roots := map[string]bool{}
	runsDone := true
	var dock *docker.Runtime
	var dockErr error
	var proc *process.Runtime
	for _, r := range rs {
		if r.Alive() {
			continue
		}
		roots[r.Root] = true
		if r.Run == "" {
			continue
		}
		if dock == nil && dockErr == nil {
			dock, dockErr = docker.New(ctx, docker.Options{})
		}
		if proc == nil {
			proc, _ = process.New(process.Options{StateDir: filepath.Join(stateDir, "process")})
		}
		var rts []workload.Runtime
		if dock != nil {
			rts = append(rts, dock)
		} else {
			did = append(did, fmt.Sprintf("run %s: Docker is not reachable (%v); its containers were not checked", r.Run, dockErr))
			runsDone = false
		}
		if proc != nil {
			rts = append(rts, proc)
		}
		for _, x := range rts {
			ws, err := x.List(ctx, map[string]string{workload.LabelRun: r.Run})
			if err != nil {
				errs = append(errs, err)
				runsDone = false
				continue
			}
			for _, w := range ws {
				if err := x.Remove(ctx, w.ID); err != nil && !errors.Is(err, workload.ErrNotFound) {
					errs = append(errs, err)
					runsDone = false
					continue
				}
				did = append(did, fmt.Sprintf("run %s: removed %s %s", r.Run, x.Name(), w.Name))
			}
		}
		if r.Network != "" && dock != nil {
			if err := dock.RemoveNetwork(ctx, r.Network); err != nil {
				errs = append(errs, err)
				runsDone = false
			} else {
				did = append(did, fmt.Sprintf("run %s: removed network %s", r.Run, r.Network))
			}
		}
	}
	if dock != nil {
		dock.Close()
	}
	keys := make([]string, 0, len(roots))
	for k := range roots {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, root := range keys {
		var fsys resctrl.FS
		switch {
		case root != "" && mount != nil:
			fsys = mount(root)
		case root != "":
			fsys = resctrl.OSFS{Root: root}
		}
		done, err := journal.Reconcile(fsys, stateDir, root, runsDone && len(errs) == 0)
		if err != nil {
			errs = append(errs, fmt.Errorf("resctrl at %s: %w", root, err))
		}
		for _, u := range done {
			if len(u.Removed) > 0 || u.Default != "" || u.DefaultLeft != "" {
				did = append(did, "resctrl at "+root+": "+u.String())
			}
		}
	}
	return did, errors.Join(errs...)
}
