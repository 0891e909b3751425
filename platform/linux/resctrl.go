package linux

import (
	"errors"
	"fmt"
	"syscall"

	"colo/resctrl"
)

// resctrlRDT adapts the resctrl client to RDT. It owns only groups with the client's
// prefix; the default group (system/default) is changed through a second client allowed
// to touch it (its L3 masks, and flushing tasks back into it).
type resctrlRDT struct {
	c, def *resctrl.Client
	root   string
}

// OpenResctrl opens the resctrl mount at root (the kernel's or an emulator's).
func OpenResctrl(root string) (RDT, error) {
	st := resctrl.Check(root)
	if !st.Mounted {
		return nil, fmt.Errorf("resctrl is not usable at %s: %s", root, st.Reason)
	}
	fs := resctrl.OSFS{Root: root}
	return &resctrlRDT{c: resctrl.New(fs, resctrl.Options{}), def: resctrl.New(fs, resctrl.Options{AllowForeign: true}), root: root}, nil
}

func (r *resctrlRDT) client(path string) *resctrl.Client {
	if path == "" {
		return r.def
	}
	return r.c
}

func (r *resctrlRDT) Prefix() string                  { return r.c.Prefix() }
func (r *resctrlRDT) Root() string                    { return r.root }
func (r *resctrlRDT) MonPath(ctrl, mon string) string { return resctrl.MonPath(ctrl, mon) }
func (r *resctrlRDT) CreateGroup(path string) error   { return r.c.CreateGroup(path) }
func (r *resctrlRDT) RemoveGroup(path string) error   { return r.c.RemoveGroup(path) }
func (r *resctrlRDT) Exists(path string) bool         { return r.c.Exists(path) }
func (r *resctrlRDT) Tasks(path string) ([]int, error) {
	return r.c.Tasks(path)
}

func (r *resctrlRDT) SetSchemata(path string, domain int, mask uint64, mba int) error {
	s := resctrl.Schemata{}.Set("L3", domain, mask)
	if mba > 0 {
		s = s.Set("MB", domain, uint64(mba))
	}
	return r.client(path).SetSchemata(path, s)
}

func (r *resctrlRDT) ReadSchemata(path string, domain int) (uint64, int, error) {
	s, err := r.c.Schemata(path)
	if err != nil {
		return 0, 0, err
	}
	mask, ok := s.Get("L3", domain)
	if !ok {
		return 0, 0, fmt.Errorf("resctrl: %q has no L3 value for domain %d (schemata %q)", path, domain, s.String())
	}
	mb, _ := s.Get("MB", domain)
	return mask, int(mb), nil
}

// AddTasks writes one thread at a time; a thread that exited between listing and
// writing (ESRCH) is skipped.
func (r *resctrlRDT) AddTasks(path string, tids []int) (int, error) {
	gone := 0
	cl := r.client(path)
	for _, t := range tids {
		if err := cl.AddTasks(path, t); err != nil {
			if errors.Is(err, syscall.ESRCH) {
				gone++
				continue
			}
			return gone, err
		}
	}
	return gone, nil
}

func (r *resctrlRDT) MonData(path string) (occ, total, local uint64, err error) {
	ds, err := r.c.MonData(path)
	if err != nil {
		return 0, 0, 0, err
	}
	for _, d := range ds {
		occ += d.LLCOccupancy
		total += d.MBMTotalBytes
		local += d.MBMLocalBytes
	}
	return occ, total, local, nil
}

func (r *resctrlRDT) Reconcile() ([]string, error) { return r.c.Reconcile(nil) }
