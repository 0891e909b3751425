package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"colo/cbm"
	"colo/resctrl"
	rt "colo/runtime"

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
func withApply(cmd *cobra.Command, policies, workload, workloads *string) *applyFlags {
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
		if *workloads != "" || *workload == "" {
			return badInputf("--apply: give the one workload with --workload a,b,c")
		}
		if f.domain < 0 {
			return badInputf("--domain %d: must be ≥ 0", f.domain)
		}
		tasks, err := f.resolveTasks(strings.Split(*workload, ","))
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
		if err := add("cgroup", kv, threadsOfCgroup); err != nil {
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
	es, err := os.ReadDir(filepath.Join("/proc", v, "task"))
	if err != nil {
		return nil, fmt.Errorf("process %d: %w", pid, err)
	}
	var out []int
	for _, e := range es {
		if t, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, t)
		}
	}
	sort.Ints(out)
	return out, nil
}

// threadsOfCgroup lists the threads of the cgroup v2 directory dir.
func threadsOfCgroup(dir string) ([]int, error) {
	tids, err := rt.Cgroup{Version: 2, Dirs: map[string]string{"": dir}}.Threads()
	if err == nil && len(tids) == 0 {
		err = fmt.Errorf("%s has no threads", dir)
	}
	return tids, err
}

var unsafeGroupChars = regexp.MustCompile(`[^a-z0-9-]+`)

// applyPartition writes doc's single result into resctrl (colo partition --apply): the
// mount's cache bitmask must have the machine's way count. Every group is created and its
// schemata written first; if any of that fails the groups created so far are removed, so
// nothing is half-applied. Then the tasks move (threads that exited meanwhile are skipped).
func applyPartition(w io.Writer, f *applyFlags, doc outputDoc, ways int) error {
	if f == nil || !f.apply {
		return nil
	}
	if len(doc.Results) != 1 {
		return fmt.Errorf("--apply: %d results, want one", len(doc.Results))
	}
	res := doc.Results[0]
	a, err := resctrl.OpenAdapter(f.root)
	if err != nil {
		return err
	}
	in, err := a.Client().Info()
	if err != nil {
		return err
	}
	r := in.Resource("L3")
	if r == nil {
		r = in.Resource("L3DATA")
	}
	if r == nil {
		return fmt.Errorf("--apply: resctrl at %s has no L3 allocation", a.Root())
	}
	if n := r.CBMLen; n != ways {
		return badInputf("--apply: resctrl at %s has %d-bit cache masks, machine %s has %d ways: the decision does not fit this host (pick --machine for this host)", a.Root(), n, doc.Machine, ways)
	}
	type cluster struct {
		mask uint64
		apps []string
	}
	var cl []*cluster
	for _, app := range res.Apps {
		for len(cl) < app.Cluster {
			cl = append(cl, &cluster{})
		}
		m, err := cbm.Parse(app.Mask)
		if err != nil {
			return err
		}
		c := cl[app.Cluster-1]
		c.mask, c.apps = uint64(m), append(c.apps, app.Name)
	}
	pol := unsafeGroupChars.ReplaceAllString(strings.ToLower(strings.ReplaceAll(res.Policy, "+", "plus")), "-")
	var created []string
	undo := func(err error) error {
		for _, g := range created {
			a.RemoveGroup(g)
		}
		return fmt.Errorf("--apply: %w (the groups created are removed again)", err)
	}
	paths := make([]string, len(cl))
	for i, c := range cl {
		if c == nil || len(c.apps) == 0 {
			continue
		}
		p := fmt.Sprintf("%spart-%s-c%d", a.Prefix(), pol, i+1)
		paths[i] = p
		if !a.Exists(p) {
			if err := a.CreateGroup(p); err != nil {
				return undo(err)
			}
			created = append(created, p)
		}
		if err := a.SetSchemata(p, f.domain, c.mask, 0); err != nil {
			return undo(err)
		}
	}
	for i, c := range cl {
		if paths[i] == "" {
			continue
		}
		n := 0
		for _, app := range c.apps {
			gone, err := a.AddTasks(paths[i], f.tasks[app])
			if err != nil {
				return fmt.Errorf("--apply: %s: %w", app, err)
			}
			n += len(f.tasks[app]) - gone
		}
		fmt.Fprintf(w, "applied: %s L3:%d=%s ← %s (%d tasks)\n", paths[i], f.domain, cbm.Mask(c.mask), strings.Join(c.apps, ","), n)
	}
	return nil
}
