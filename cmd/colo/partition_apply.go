package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"colo/cbm"
	"colo/resctrl"
	"colo/resctrl/emu"
	"colo/workload"

	"github.com/spf13/cobra"
)

// applyFlags are colo partition's --apply flags: write the chosen policy's masks for one
// workload into resctrl, one control group per cluster, with the applications' tasks.
type applyFlags struct {
	apply   bool
	root    string
	pids    []string // name=PID
	cgroups []string // name=PATH (cgroup v2 directory; its cgroup.threads)
	domain  int
	tasks   map[string][]int // resolved before the search
}

// withApply adds the --apply flags to colo partition and checks them before the search
// runs (bad input stops the command before anything is computed or written).
func withApply(cmd *cobra.Command, policies, wl, workloads *string) *applyFlags {
	f := &applyFlags{}
	fl := cmd.Flags()
	fl.BoolVar(&f.apply, "apply", false, "write the policy's masks into resctrl: one control group per cluster (colo.part-POLICY-cN) holding its applications' tasks; needs one --policy, one workload, and --pid/--cgroup for every application")
	fl.StringVar(&f.root, "resctrl-root", "", "with --apply: the resctrl mount (default /sys/fs/resctrl)")
	fl.StringArrayVar(&f.pids, "pid", nil, "with --apply: NAME=PID, an application's process (all its threads); repeatable")
	fl.StringArrayVar(&f.cgroups, "cgroup", nil, "with --apply: NAME=DIR, an application's cgroup v2 directory (its cgroup.threads); repeatable")
	fl.IntVar(&f.domain, "domain", 0, "with --apply: the L3 domain (socket) whose masks are written")
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if !f.apply {
			if len(f.pids) > 0 || len(f.cgroups) > 0 || c.Flags().Changed("resctrl-root") || c.Flags().Changed("domain") {
				return badInputf("--pid, --cgroup, --resctrl-root and --domain go with --apply")
			}
			return run(c, args)
		}
		if strings.Contains(*policies, ",") {
			return badInputf("--apply: give one --policy (got %q)", *policies)
		}
		if *workloads != "" || *wl == "" {
			return badInputf("--apply: give the one workload with --workload a,b,c")
		}
		if f.domain < 0 {
			return badInputf("--domain %d: must be ≥ 0", f.domain)
		}
		tasks, err := f.resolveTasks(strings.Split(*wl, ","))
		if err != nil {
			return err
		}
		f.tasks = tasks
		return run(c, args)
	}
	return f
}

// resolveTasks maps every application of the workload to thread IDs: all threads of
// --pid NAME=PID (/proc/PID/task) and the threads of --cgroup NAME=DIR.
func (f *applyFlags) resolveTasks(names []string) (map[string][]int, error) {
	want := map[string]bool{}
	for _, n := range names {
		want[strings.TrimSpace(n)] = true
	}
	out := map[string][]int{}
	add := func(flag, kv string, get func(v string) ([]int, error)) error {
		name, v, ok := strings.Cut(kv, "=")
		if !ok || name == "" || v == "" {
			return badInputf("--%s %q: want NAME=%s", flag, kv, strings.ToUpper(map[string]string{"pid": "pid", "cgroup": "dir"}[flag]))
		}
		if !want[name] {
			return badInputf("--%s %s: %s is not an application of the workload (%s)", flag, kv, name, strings.Join(names, ","))
		}
		tids, err := get(v)
		if err != nil {
			return badInputf("--%s %s: %v", flag, kv, err)
		}
		out[name] = append(out[name], tids...)
		return nil
	}
	for _, kv := range f.pids {
		if err := add("pid", kv, threadsOfPID); err != nil {
			return nil, err
		}
	}
	for _, kv := range f.cgroups {
		if err := add("cgroup", kv, workload.CgroupDirThreads); err != nil {
			return nil, err
		}
	}
	var missing []string
	for _, n := range names {
		if len(out[strings.TrimSpace(n)]) == 0 {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return nil, badInputf("--apply: no tasks for %s: give --pid NAME=PID or --cgroup NAME=DIR for every application", strings.Join(missing, ", "))
	}
	return out, nil
}

func threadsOfPID(v string) ([]int, error) {
	pid, err := strconv.Atoi(v)
	if err != nil || pid <= 0 {
		return nil, fmt.Errorf("%q is not a process ID", v)
	}
	return workload.ProcessThreads(pid)
}

// applyPartition writes doc's single result into resctrl (colo partition --apply) through
// resctrl.Adapter.ApplyPartition, one control group per cluster, and says what it wrote
// and how to undo it (colo resctrl rm). On a mount of another geometry it names the
// emulator profile of the decision's machine.
func applyPartition(w io.Writer, f *applyFlags, doc outputDoc, machineName string, ways int) error {
	if f == nil || !f.apply {
		return nil
	}
	if len(doc.Results) != 1 {
		return fmt.Errorf("--apply: %d results, want one", len(doc.Results))
	}
	res := doc.Results[0]
	var cl []*resctrl.PartitionClass
	for _, app := range res.Apps {
		for len(cl) < app.Cluster {
			cl = append(cl, &resctrl.PartitionClass{Tasks: f.tasks})
		}
		m, err := cbm.Parse(app.Mask)
		if err != nil {
			return err
		}
		c := cl[app.Cluster-1]
		c.Mask, c.Apps = uint64(m), append(c.Apps, app.Name)
	}
	a, err := resctrl.OpenAdapter(f.root)
	if err != nil {
		return err
	}
	done, err := a.ApplyPartition(res.Policy, f.domain, ways, cl)
	if errors.Is(err, resctrl.ErrCacheMismatch) {
		return badInputf("--apply: %v (pick --machine for this host; on the emulator, mount the decision's machine: colo resctrl emulate --profile %s)",
			err, emu.ProfileFor(machineName))
	}
	for _, d := range done {
		fmt.Fprintf(w, "applied: %s L3:%d=%s ← %s (%d tasks)\n", d.Group, f.domain, cbm.Mask(d.Mask), strings.Join(d.Apps, ","), d.Tasks)
	}
	if len(done) > 0 {
		pattern := strings.TrimRightFunc(done[0].Group, func(r rune) bool { return r >= '0' && r <= '9' }) + "*"
		rootFlag := ""
		if f.root != "" {
			rootFlag = " --root " + f.root
		}
		fmt.Fprintf(w, "undo: colo resctrl%s rm '%s'\n", rootFlag, pattern)
	}
	if err != nil {
		return fmt.Errorf("--apply: %w", err)
	}
	return nil
}
