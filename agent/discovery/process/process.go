// Package process follows plain cgroups for the agent (colo agent --runtime process).
package process

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"colo/agent/core"
	"colo/agent/discovery"
	"colo/workload"
)

// Source follows cgroups that are not containers (colo agent --runtime process): every
// child cgroup of Parent that holds at least one process is one tenant. Its ID and Name
// are the cgroup's directory name, its PID the lowest PID in it, its labels come from
// LabelsDir/<name>.labels. Processes polls Parent every Interval: a Sync at start (and
// after the parent reappears), then Upsert for a new or changed tenant and Gone for one
// that was removed or has no process left, each batch in name order.
type Source struct {
	// Parent is the parent cgroup, relative to every hierarchy root (e.g. "colo", the
	// parent colo's process runtime uses, or "/batch.slice"); resolved on each mounted
	// hierarchy (v1, hybrid, v2).
	Parent string
	// LabelsDir, when set, holds <name>.labels files: KEY=VALUE lines (the colo.io/…
	// vocabulary), blank lines and #-comments ignored.
	LabelsDir string
	// StateDir is colo's process runtime state directory (<name>.json per workload):
	// the workloads it records as colo run's (colo.owner=colo) are left to colo run,
	// the labels it records for other cgroups are used under LabelsDir's.
	StateDir string
	// Interval is the polling period; default 1 s.
	Interval time.Duration
	Log      *slog.Logger

	// resolve maps the parent's path onto the host's hierarchies (once a poll); nil:
	// workload.CgroupAtPath (tests fake a cgroup tree with it).
	resolve func(path string) (workload.Cgroup, error)
	// warned remembers the labels file content already warned about (no log per poll).
	warned map[string]string
}

// Name implements Discovery.
func (p *Source) Name() string { return "process" }

// Run implements Discovery.
func (p *Source) Run(ctx context.Context, out chan<- discovery.Event) {
	every := p.Interval
	if every <= 0 {
		every = time.Second
	}
	var known map[string]core.Container // nil: not synced
	lastErr := ""
	for {
		cs, err := p.scan()
		var evs []discovery.Event
		switch {
		case err != nil:
			if err.Error() != lastErr && p.Log != nil {
				p.Log.Warn("cgroup parent unreadable; retrying every interval", "runtime", "process", "err", err)
			}
			lastErr, known = err.Error(), nil
			evs = []discovery.Event{{Kind: discovery.Down, Err: err}}
		case known == nil:
			lastErr = ""
			evs = []discovery.Event{{Kind: discovery.Sync, Containers: cs}}
		default:
			evs = changes(known, cs)
		}
		if err == nil {
			known = map[string]core.Container{}
			for _, c := range cs {
				known[c.ID] = c
			}
		}
		for _, ev := range evs {
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
		select {
		case <-time.After(every):
		case <-ctx.Done():
			return
		}
	}
}

// changes are the events that turn known into now (ascending by ID): Gone first, then
// Upsert for the new and the changed.
func changes(known map[string]core.Container, now []core.Container) []discovery.Event {
	var evs []discovery.Event
	seen := map[string]bool{}
	for _, c := range now {
		seen[c.ID] = true
	}
	for _, id := range sortedKeys(known) {
		if !seen[id] {
			evs = append(evs, discovery.Event{Kind: discovery.Gone, ID: id})
		}
	}
	for _, c := range now {
		if k, ok := known[c.ID]; !ok || !reflect.DeepEqual(k, c) {
			evs = append(evs, discovery.Event{Kind: discovery.Upsert, Containers: []core.Container{c}})
		}
	}
	return evs
}

func sortedKeys(m map[string]core.Container) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// scan lists the tenants under Parent, by name.
func (p *Source) scan() ([]core.Container, error) {
	resolve := p.resolve
	if resolve == nil {
		resolve = workload.CgroupAtPath
	}
	parent := path.Join("/", p.Parent)
	pcg, err := resolve(parent)
	if err != nil {
		return nil, fmt.Errorf("cgroup parent %s: %w", parent, err)
	}
	dir := pcg.Dir("cpu") // the v1 cpu hierarchy, else the unified one
	if dir == "" {
		return nil, fmt.Errorf("cgroup parent %s: no cpu (v1) or unified (v2) hierarchy is mounted", parent)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("cgroup parent %s: %w (create it, or point --cgroup-parent at the cgroup holding the tenants)", parent, err)
	}
	pcg.Path = parent
	var cs []core.Container
	for _, e := range ents { // ReadDir sorts by name
		if !e.IsDir() {
			continue
		}
		if c, ok := p.tenant(pcg, e.Name()); ok {
			cs = append(cs, c)
		}
	}
	return cs, nil
}

// tenant describes the child cgroup name of parent (ok false: no process in it, or colo
// run's). Its directories are the parent's, on the hierarchies where the child exists.
func (p *Source) tenant(parent workload.Cgroup, name string) (core.Container, bool) {
	cg := workload.Cgroup{Version: parent.Version, Path: path.Join(parent.Path, name), Dirs: map[string]string{}}
	for k, d := range parent.Dirs {
		d = filepath.Join(d, name)
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			cg.Dirs[k] = d
		}
	}
	procs, err := cg.Procs()
	if err != nil || len(procs) == 0 {
		return core.Container{}, false
	}
	labels := p.stateLabels(name)
	if labels[workload.LabelOwner] == workload.OwnerValue {
		return core.Container{}, false
	}
	for k, v := range p.fileLabels(name) {
		if labels == nil {
			labels = map[string]string{}
		}
		labels[k] = v
	}
	return core.Container{ID: name, Name: name, Labels: labels, PID: procs[0],
		Cgroup: cg.Path, CgroupDirs: cg.Dirs, CgroupV: cg.Version}, true
}

// stateLabels are the labels colo's process runtime recorded for workload name (nil: none).
func (p *Source) stateLabels(name string) map[string]string {
	if p.StateDir == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(p.StateDir, name+".json"))
	if err != nil {
		return nil
	}
	var st struct {
		Labels map[string]string `json:"labels"`
	}
	if json.Unmarshal(b, &st) != nil {
		return nil
	}
	return st.Labels
}

// fileLabels reads LabelsDir/<name>.labels (nil: none). A line that is not KEY=VALUE is
// ignored with one warning (file:line) per content of the file.
func (p *Source) fileLabels(name string) map[string]string {
	if p.LabelsDir == "" {
		return nil
	}
	file := filepath.Join(p.LabelsDir, name+".labels")
	b, err := os.ReadFile(file)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) && p.Log != nil && p.warned[file] != err.Error() {
			p.Log.Warn("labels file unreadable; the tenant is unlabelled", "file", file, "err", err)
			p.remember(file, err.Error())
		}
		return nil
	}
	labels, bad := parseLabelLines(b)
	if len(bad) > 0 && p.Log != nil && p.warned[file] != string(b) {
		for _, n := range bad {
			p.Log.Warn("label line ignored: want KEY=VALUE", "at", fmt.Sprintf("%s:%d", file, n))
		}
		p.remember(file, string(b))
	}
	return labels
}

func (p *Source) remember(file, what string) {
	if p.warned == nil {
		p.warned = map[string]string{}
	}
	p.warned[file] = what
}

// parseLabelLines reads KEY=VALUE lines (blank lines and lines starting with # are
// skipped; spaces around key and value trimmed). bad lists the 1-based numbers of lines
// that are not KEY=VALUE with a non-empty key; they are left out.
func parseLabelLines(b []byte) (labels map[string]string, bad []int) {
	labels = map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			bad = append(bad, n)
			continue
		}
		labels[k] = strings.TrimSpace(v)
	}
	return labels, bad
}
