package linux

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"syscall"
)

// fakeRDT is an in-memory resctrl with the task rules the platform relies on: a thread is
// in exactly one control group; a monitoring group only takes threads of its parent.
type fakeRDT struct {
	mu       sync.Mutex
	prefix   string
	groups   map[string]bool           // existing groups ("" always)
	ctrlOf   map[int]string            // tid -> control group
	monOf    map[int]string            // tid -> monitoring group ("" none)
	schemata map[string]map[int][2]int // group -> domain -> {mask, mba}
	writes   int
	vanished map[int]bool // tids that exist no more (ESRCH)
}

func newFakeRDT() *fakeRDT {
	return &fakeRDT{prefix: "colo.", groups: map[string]bool{"": true}, ctrlOf: map[int]string{}, monOf: map[int]string{},
		schemata: map[string]map[int][2]int{"": {0: {0xffff, 100}}}, vanished: map[int]bool{}}
}

func (f *fakeRDT) Prefix() string { return f.prefix }
func (f *fakeRDT) Root() string   { return "/fake/resctrl" }
func (f *fakeRDT) MonPath(ctrl, mon string) string {
	if ctrl == "" {
		return "mon_groups/" + mon
	}
	return ctrl + "/mon_groups/" + mon
}

func parent(path string) (ctrl string, isMon bool) {
	if i := strings.Index(path, "mon_groups/"); i >= 0 {
		return strings.TrimSuffix(path[:i], "/"), true
	}
	return path, false
}

func (f *fakeRDT) CreateGroup(path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.groups[path] {
		return syscall.EEXIST
	}
	ctrl, mon := parent(path)
	if !mon {
		ctrl = ""
	}
	if !f.groups[ctrl] {
		return fmt.Errorf("parent %q: %w", ctrl, syscall.ENOENT)
	}
	f.groups[path] = true
	if !mon {
		f.schemata[path] = map[int][2]int{0: {0xffff, 100}}
	}
	return nil
}

func (f *fakeRDT) RemoveGroup(path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.groups[path] || path == "" {
		return syscall.ENOENT
	}
	_, mon := parent(path)
	for tid, g := range f.ctrlOf {
		if !mon && g == path {
			f.ctrlOf[tid] = "" // the kernel moves them to the default group
			f.monOf[tid] = ""
		}
		if mon && f.monOf[tid] == path {
			f.monOf[tid] = ""
		}
	}
	for p := range f.groups {
		if strings.HasPrefix(p, path+"/") {
			delete(f.groups, p)
		}
	}
	delete(f.groups, path)
	delete(f.schemata, path)
	return nil
}

func (f *fakeRDT) Exists(path string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.groups[path]
}

func (f *fakeRDT) SetSchemata(path string, dom int, mask uint64, mba int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.schemata[path]
	if !ok {
		return syscall.ENOENT
	}
	if mask == 0 || mask > 0xffff {
		return fmt.Errorf("L3:%d=%x: invalid mask: %w", dom, mask, syscall.EINVAL)
	}
	v := s[dom]
	v[0] = int(mask)
	if mba > 0 {
		v[1] = mba
	}
	s[dom] = v
	f.writes++
	return nil
}

func (f *fakeRDT) ReadSchemata(path string, dom int) (uint64, int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.schemata[path]
	if !ok {
		return 0, 0, syscall.ENOENT
	}
	return uint64(s[dom][0]), s[dom][1], nil
}

func (f *fakeRDT) Tasks(path string) ([]int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.groups[path] {
		return nil, syscall.ENOENT
	}
	_, mon := parent(path)
	var out []int
	for tid, c := range f.ctrlOf {
		if (!mon && c == path) || (mon && f.monOf[tid] == path) {
			out = append(out, tid)
		}
	}
	if path == "" {
		out = out[:0]
		for tid, c := range f.ctrlOf {
			if c == "" {
				out = append(out, tid)
			}
		}
	}
	sort.Ints(out)
	return out, nil
}

func (f *fakeRDT) AddTasks(path string, tids []int) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.groups[path] {
		return 0, syscall.ENOENT
	}
	ctrl, mon := parent(path)
	gone := 0
	for _, t := range tids {
		if f.vanished[t] {
			gone++
			continue
		}
		if mon {
			if f.ctrlOf[t] != ctrl {
				return gone, fmt.Errorf("tid %d is not in %q: %w", t, ctrl, syscall.EINVAL)
			}
			f.ctrlOf[t], f.monOf[t] = ctrl, path
		} else {
			f.ctrlOf[t], f.monOf[t] = ctrl, ""
		}
		f.writes++
	}
	return gone, nil
}

func (f *fakeRDT) MonData(path string) (uint64, uint64, uint64, error) {
	if !f.Exists(path) {
		return 0, 0, 0, syscall.ENOENT
	}
	n, _ := f.Tasks(path)
	return uint64(len(n)) << 20, uint64(len(n)) << 30, uint64(len(n)) << 29, nil
}

func (f *fakeRDT) Reconcile() ([]string, error) {
	f.mu.Lock()
	var owned []string
	for p := range f.groups {
		if p == "" {
			continue
		}
		last := p[strings.LastIndex(p, "/")+1:]
		if strings.HasPrefix(last, f.prefix) {
			owned = append(owned, p)
		}
	}
	f.mu.Unlock()
	sort.Slice(owned, func(i, j int) bool { return len(owned[i]) > len(owned[j]) })
	var done []string
	for _, p := range owned {
		if f.Exists(p) {
			f.RemoveGroup(p)
			done = append(done, p)
		}
	}
	return done, nil
}

func (f *fakeRDT) ownedGroups() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for p := range f.groups {
		if p != "" {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}
