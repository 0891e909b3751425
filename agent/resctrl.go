package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"colo/resctrl"
	"colo/resctrl/plan"
)

// Resctrl implements Groups over colo's resctrl client and its platform adapter (the
// same code colo run's linux platform uses).
type Resctrl struct {
	*resctrl.Adapter
	c     *resctrl.Client
	local bool // root is a directory (not an in-process FS): Available checks it
	// monFiles are the mon_data files of a group ("mon_data/mon_L3_00/llc_occupancy"…),
	// the same for every group of a mount: listed once, then read directly each interval
	monFiles []string
	// paths are a group's monFiles, joined once per group
	paths map[string][]string
	// open keeps each counter file of a real mount open: an interval re-reads it with
	// pread at offset 0 (seq_file and the emulator regenerate it), saving the path walk
	// and open/close of every read
	open map[string]*os.File
	buf  []byte
	// Domains, when > 0, limits monitoring reads to the first Domains L3 domains: the
	// machine the agent manages (an emulator mount may show more domains than this host
	// has sockets).
	Domains int
}

// GroupPrefix is the name prefix of an agent instance's groups: "colo-agent.<instance>.".
// It does not start with resctrl.DefaultPrefix, so `colo run` never takes them for its own.
func GroupPrefix(instance string) string { return "colo-agent." + instance + "." }

// OpenResctrl opens the mount at root for the agent instance.
func OpenResctrl(root, instance string) (*Resctrl, error) {
	return NewResctrl(resctrl.New(resctrl.OSFS{Root: root}, resctrl.Options{Prefix: GroupPrefix(instance), AllowDefault: true}), root, true)
}

// NewResctrl wraps a client (an in-process emulator in tests).
func NewResctrl(c *resctrl.Client, root string, local bool) (*Resctrl, error) {
	a, err := resctrl.NewAdapter(c, root)
	if err != nil {
		return nil, err
	}
	return &Resctrl{Adapter: a, c: c, local: local}, nil
}

// SaveDefault implements Groups.
func (r *Resctrl) SaveDefault() (string, error) {
	s, err := r.c.Schemata("")
	if err != nil {
		return "", fmt.Errorf("read system/default schemata: %w", err)
	}
	return s.String(), nil
}

// RestoreDefault implements Groups.
func (r *Resctrl) RestoreDefault(text string) error {
	s, err := resctrl.ParseSchemata(text)
	if err != nil {
		return fmt.Errorf("saved system/default schemata: %w", err)
	}
	return r.c.SetSchemata("", s)
}

// MonData implements Groups: the group's counters summed over its L3 domains. The
// mon_data layout is listed once per mount; each interval reads only the counter files.
func (r *Resctrl) MonData(path string) (occupancy, mbmTotal, mbmLocal uint64, err error) {
	fs := r.c.FS()
	if r.monFiles == nil {
		doms, err := fs.ReadDir(joinPath(path, "mon_data"))
		if err != nil {
			return 0, 0, 0, err
		}
		var files []string
		k := 0 // the domain's index: ids have gaps on real parts (mon_L3_16 may be the 9th)
		for _, d := range doms {
			if !strings.HasPrefix(d, "mon_L3_") || !strings.HasSuffix(d, "/") {
				continue
			}
			k++
			if r.Domains > 0 && k > r.Domains {
				continue
			}
			for _, f := range []string{"llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"} {
				files = append(files, "mon_data/"+d+f)
			}
		}
		if len(files) == 0 {
			return 0, 0, 0, fmt.Errorf("resctrl at %s: no L3 monitoring domains", r.Root())
		}
		r.monFiles = files
	}
	paths := r.paths[path]
	if paths == nil {
		if r.paths == nil {
			r.paths = map[string][]string{}
		}
		for _, f := range r.monFiles {
			paths = append(paths, joinPath(path, f))
		}
		r.paths[path] = paths
	}
	for i, f := range r.monFiles {
		b, rerr := r.readCounter(paths[i])
		if rerr != nil {
			if strings.HasSuffix(f, "llc_occupancy") && err == nil {
				err = rerr
			}
			continue // a counter this platform lacks (Unavailable, or no MBM)
		}
		v, perr := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if perr != nil {
			// "Unassigned" (no counter in mbm_event mode) or "Unavailable" (just
			// reconfigured): not measured, never a zero
			if err == nil && !strings.HasSuffix(f, "llc_occupancy") {
				err = fmt.Errorf("%s: %q: %w", paths[i], strings.TrimSpace(string(b)), resctrl.ErrNotCounted)
			}
			continue
		}
		switch {
		case strings.HasSuffix(f, "llc_occupancy"):
			occupancy += v
		case strings.HasSuffix(f, "mbm_total_bytes"):
			mbmTotal += v
		default:
			mbmLocal += v
		}
	}
	return occupancy, mbmTotal, mbmLocal, err
}

func (r *Resctrl) readCounter(rel string) ([]byte, error) {
	if !r.local {
		return r.c.FS().ReadFile(rel)
	}
	if r.open == nil {
		r.open, r.buf = map[string]*os.File{}, make([]byte, 64)
	}
	f := r.open[rel]
	if f == nil {
		var err error
		if f, err = os.Open(filepath.Join(r.Root(), rel)); err != nil {
			return nil, err
		}
		r.open[rel] = f
	}
	n, err := f.ReadAt(r.buf, 0)
	if n == 0 && err != nil {
		f.Close()
		delete(r.open, rel)
		return nil, err
	}
	return r.buf[:n], nil
}

// ApplyPlan implements Groups: the open counter files of groups about to be removed are
// closed first.
func (r *Resctrl) ApplyPlan(ops []plan.Op) error {
	for _, o := range ops {
		if o.Kind == plan.Rmdir {
			r.closeUnder(o.Group)
		}
	}
	return r.Adapter.ApplyPlan(ops)
}

// FS implements Groups.
func (r *Resctrl) FS() resctrl.FS { return r.c.FS() }

// RemoveGroup implements Groups: the group's open counter files are closed first.
func (r *Resctrl) RemoveGroup(path string) error {
	r.closeUnder(path)
	return r.Adapter.RemoveGroup(path)
}

func (r *Resctrl) closeUnder(path string) {
	pre := strings.Trim(path, "/") + "/"
	for g := range r.paths {
		if path == "" || g == strings.Trim(path, "/") || strings.HasPrefix(g, pre) {
			delete(r.paths, g)
		}
	}
	for k, f := range r.open {
		if path == "" || strings.HasPrefix(k, pre) {
			f.Close()
			delete(r.open, k)
		}
	}
}

func joinPath(dir, file string) string {
	if dir == "" {
		return file
	}
	return strings.Trim(dir, "/") + "/" + file
}

// Available implements Groups: the mount still shows its info directory.
func (r *Resctrl) Available() error {
	if !r.local {
		return nil
	}
	if _, err := os.Stat(filepath.Join(r.Root(), "info")); err != nil {
		return fmt.Errorf("resctrl is no longer mounted at %s (%v)", r.Root(), err)
	}
	return nil
}
