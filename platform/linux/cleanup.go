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
// (resctrl/journal), each record on its own: the containers (Docker, or the process
// runtime's workloads) and the Docker network labelled with each dead run, the resctrl
// groups each recorded on its mount, and system/default's administrator's schemata
// (never while a live instance on the mount holds it). A record whose mount is gone is
// dropped with a note; a record whose step failed is kept for a later call and the
// others go on. Live runs, other agents and everything else are left alone. It returns
// one Done per thing it did (nothing that was already gone). mount opens a recorded
// resctrl root (nil: the filesystem at that path).
func Cleanup(ctx context.Context, stateDir string, mount func(root string) resctrl.FS) ([]Done, error) {
	rs, err := journal.ListAll(stateDir)
	if err != nil {
		return nil, err
	}
	var did []Done
	var errs []error
	roots := map[string]bool{}
	gone := map[string]bool{} // dead runs whose containers and network are gone
	var dock *docker.Runtime
	var dockErr error
	var proc *process.Runtime
	var nets map[string]bool
	for _, r := range rs {
		if r.Alive() {
			continue
		}
		roots[r.Root] = true
		if r.Run == "" {
			continue
		}
		if dock == nil && dockErr == nil {
			if dock, dockErr = docker.New(ctx, docker.Options{}); dockErr == nil {
				nets = map[string]bool{}
				ns, err := dock.ListNetworks(ctx, nil)
				if err != nil {
					errs = append(errs, err)
				}
				for _, n := range ns {
					nets[n] = true
				}
			}
		}
		if proc == nil {
			proc, _ = process.New(process.Options{StateDir: filepath.Join(stateDir, "process")})
		}
		var rts []workload.Runtime
		runErrs := 0
		if dock != nil {
			rts = append(rts, dock)
		} else {
			did = append(did, Done{Kind: "unchecked", Run: r.Run, Instance: r.Instance,
				Detail: fmt.Sprintf("Docker is not reachable (%v); its containers were not checked (record kept)", dockErr)})
			runErrs++
		}
		if proc != nil {
			rts = append(rts, proc)
		}
		for _, x := range rts {
			ws, err := x.List(ctx, map[string]string{workload.LabelRun: r.Run})
			if err != nil {
				errs = append(errs, fmt.Errorf("run %s: %w", r.Run, err))
				runErrs++
				continue
			}
			for _, w := range ws {
				if err := x.Remove(ctx, w.ID); err != nil && !errors.Is(err, workload.ErrNotFound) {
					errs = append(errs, fmt.Errorf("run %s: %w", r.Run, err))
					runErrs++
					continue
				}
				did = append(did, Done{Kind: "container", Run: r.Run, Instance: r.Instance, Name: w.Name,
					Detail: fmt.Sprintf("removed %s %s", x.Name(), w.Name)})
			}
		}
		if r.Network != "" && dock != nil && nets[r.Network] {
			if err := dock.RemoveNetwork(ctx, r.Network); err != nil {
				errs = append(errs, fmt.Errorf("run %s: %w", r.Run, err))
				runErrs++
			} else {
				did = append(did, Done{Kind: "network", Run: r.Run, Instance: r.Instance, Name: r.Network,
					Detail: "removed network " + r.Network})
			}
		}
		gone[r.Instance] = runErrs == 0
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
		done, err := journal.Reconcile(fsys, stateDir, root, func(r journal.Record) bool { return gone[r.Instance] })
		if err != nil {
			errs = append(errs, fmt.Errorf("resctrl at %s: %w", root, err))
		}
		for _, u := range done {
			if u.Did() && u.Err == nil {
				did = append(did, Done{Kind: "resctrl", Run: u.Record.Run, Instance: u.Record.Instance,
					ResctrlRoot: root, Detail: u.String()})
			}
		}
	}
	return did, errors.Join(errs...)
}

// Done is one thing Cleanup did (or could not check), the entries of `colo cleanup --json`.
type Done struct {
	// Kind is "container", "network", "resctrl" (groups removed, system/default written
	// back, a record dropped) or "unchecked" (Docker not reachable: the run's containers
	// were not checked).
	Kind string `json:"kind"`
	// Name is the container's or network's name ("" for resctrl).
	Name string `json:"name"`
	// Run and Instance name the dead colo run and its journal.
	Run      string `json:"run"`
	Instance string `json:"instance"`
	// ResctrlRoot is the mount a resctrl entry is about ("" otherwise).
	ResctrlRoot string `json:"resctrl_root"`
	// Detail says what was done, in words.
	Detail string `json:"detail"`
}

// String is the line `colo cleanup` prints.
func (d Done) String() string {
	if d.Kind == "resctrl" {
		if d.ResctrlRoot == "" {
			return d.Detail
		}
		return "resctrl at " + d.ResctrlRoot + ": " + d.Detail
	}
	return "run " + d.Run + ": " + d.Detail
}
