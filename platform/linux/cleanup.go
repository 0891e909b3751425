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
// everything else are left alone. It returns one Done per thing it did. mount opens a
// recorded resctrl root (nil: the filesystem at that path).
func Cleanup(ctx context.Context, stateDir string, mount func(root string) resctrl.FS) ([]Done, error) {
	rs, err := journal.ListAll(stateDir)
	if err != nil {
		return nil, err
	}
	var did []Done
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
			did = append(did, Done{Kind: "unchecked", Run: r.Run, Instance: r.Instance,
				Detail: fmt.Sprintf("Docker is not reachable (%v); its containers were not checked", dockErr)})
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
				did = append(did, Done{Kind: "container", Run: r.Run, Instance: r.Instance, Name: w.Name,
					Detail: fmt.Sprintf("removed %s %s", x.Name(), w.Name)})
			}
		}
		if r.Network != "" && dock != nil {
			if err := dock.RemoveNetwork(ctx, r.Network); err != nil {
				errs = append(errs, err)
				runsDone = false
			} else {
				did = append(did, Done{Kind: "network", Run: r.Run, Instance: r.Instance, Name: r.Network,
					Detail: "removed network " + r.Network})
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
	// back) or "unchecked" (Docker not reachable: the run's containers were not checked).
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
		return "resctrl at " + d.ResctrlRoot + ": " + d.Detail
	}
	return "run " + d.Run + ": " + d.Detail
}
