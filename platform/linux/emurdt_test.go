package linux

import (
	"sort"
	"strings"
	"sync"
	"testing"

	"colo/internal/machinetest"
	"colo/machine"
	"colo/resctrl"
	"colo/resctrl/emu"
)

// emuRDT is the in-process resctrl emulator behind the real client (resctrl.Adapter):
// the kernel's rules for groups, schemata and tasks. Every positive PID exists except
// those marked gone (a thread that exits between listing and writing: ESRCH).
type emuRDT struct {
	*resctrl.Adapter
	em   *emu.Emulator
	m    *machine.Profile
	mu   sync.Mutex
	gone map[int]bool
}

// newEmuRDT emulates machine name (e.g. icx-4314-2s) with its own resctrl profile.
func newEmuRDT(t *testing.T, name string) *emuRDT {
	t.Helper()
	m := machinetest.Get(t, name)
	r := &emuRDT{m: m, gone: map[int]bool{}}
	p, err := emu.ProfileFromMachine(m, "")
	if err != nil {
		t.Fatal(err)
	}
	r.em, err = emu.New(p, emu.Options{PIDExists: func(pid int) bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return pid > 0 && !r.gone[pid]
	}})
	if err != nil {
		t.Fatal(err)
	}
	r.Adapter, err = resctrl.NewAdapter(resctrl.New(r.em.FS(), resctrl.Options{AllowDefault: true}), "emu:"+name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *emuRDT) vanish(pid int, gone bool) {
	r.mu.Lock()
	r.gone[pid] = gone
	r.mu.Unlock()
}

// groups lists the paths of the groups whose name starts with prefix.
func (r *emuRDT) groups(prefix string) []string {
	var out []string
	for _, g := range r.em.State().Groups {
		if g.Path != "" && strings.HasPrefix(g.Path[strings.LastIndex(g.Path, "/")+1:], prefix) {
			out = append(out, g.Path)
		}
	}
	sort.Strings(out)
	return out
}

func (r *emuRDT) exists(path string) bool {
	_, ok := r.em.State().Group(path)
	return ok
}
