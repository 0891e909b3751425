// Package journal records, per resctrl mount and per instance, what a colo instance (a
// `colo run` on platform linux, the node agent, a CLI command) is about to change on
// that mount, so that after a crash the changes of a dead instance — and only those —
// can be undone.
//
// Layout: one directory per mount under the state directory,
// STATE/journal/mount-HASH/ (HASH: FNV-1a of the mount's cleaned absolute path; "none"
// for an instance without resctrl), holding one file INSTANCE.json per live or dead
// instance. The journal lives beside the state it describes, keyed by the mount: a run
// on mount B never reads or deletes the records of mount A.
//
// Protocol (write-ahead; every write is a fsync'ed temporary file renamed over the
// record, then the directory fsync'ed):
//
//	j, err := journal.Open(stateDir, root, journal.Record{Kind: "agent", Prefix: "colo-agent.ab12."})
//	j.SaveDefault(schemataText)  // system/default as found, BEFORE its first change (kept once)
//	j.AddGroup("colo-agent.ab12.c0") // BEFORE the mkdir
//	...                                 // mkdir, schemata, tasks
//	j.DropGroup("colo-agent.ab12.c0")   // AFTER the rmdir
//	j.Close()                           // everything undone: the record goes
//
// Ownership is by recorded instance, not by name prefix alone: each instance names its
// groups with its own Prefix (colo.<run>. for colo run, colo-agent.<id>. for the agent),
// records them before creating them, and Reconcile removes only the groups recorded by
// (or carrying the prefix of) an instance whose process is dead — the PID gone, or
// reused by a process with another start time. A record from another PID namespace
// cannot be judged and is left alone. A user's own group (colo.web from `colo resctrl
// set --create`) and a live instance's groups are never removed.
//
// Reconcile then writes back system/default's schemata as the dead instance found it,
// unless a live instance on the mount recorded its own saved default after it (that
// instance restores at its end).
package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Record is one instance's journal.
type Record struct {
	// Instance names the record (its file); Open derives it from the PID and time when
	// empty.
	Instance string `json:"instance"`
	// Kind says what the instance is ("colo run", "agent", ...).
	Kind string `json:"kind"`
	// Prefix is the name prefix of every group the instance creates.
	Prefix string `json:"prefix"`
	// Root is the resctrl mount ("" without resctrl).
	Root string `json:"resctrl_root"`
	// PID, PIDNS and Start (the process start time in clock ticks since boot,
	// /proc/PID/stat field 22) identify the process; Open fills them.
	PID   int    `json:"pid"`
	PIDNS string `json:"pidns"`
	Start uint64 `json:"start_ticks"`
	// Created is when the record was opened (informational).
	Created time.Time `json:"created"`
	// Run and Network are the container label value (colo.run) and the Docker network of
	// a colo run: `colo cleanup` removes the containers and the network of a dead run.
	Run     string `json:"run,omitempty"`
	Network string `json:"network,omitempty"`
	// Default is system/default's whole schemata as the instance found it ("" while
	// unchanged).
	Default string `json:"default_schemata,omitempty"`
	// Groups are the groups the instance created or is about to create, in order.
	Groups []string `json:"groups,omitempty"`

	file string
}

// File is the record's path.
func (r Record) File() string { return r.file }

// Journal is an open record, written before every change.
type Journal struct {
	mu sync.Mutex
	r  Record
}

// Dir is the journal directory of a mount under stateDir.
func Dir(stateDir, root string) string {
	if root == "" {
		return filepath.Join(stateDir, "journal", "none")
	}
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	h := fnv.New32a()
	h.Write([]byte(filepath.Clean(root)))
	return filepath.Join(stateDir, "journal", fmt.Sprintf("mount-%08x", h.Sum32()))
}

// Open starts the record of a new instance on the mount root.
func Open(stateDir, root string, r Record) (*Journal, error) {
	dir := Dir(stateDir, root)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("journal directory %s: %w", dir, err)
	}
	r.Root, r.PID, r.PIDNS, r.Created = root, os.Getpid(), PIDNamespace(), time.Now().UTC()
	r.Start = startTicks(r.PID)
	if r.Instance == "" {
		r.Instance = fmt.Sprintf("%d-%d", r.Created.Unix(), r.PID)
	}
	r.file = filepath.Join(dir, sanitize(r.Instance)+".json")
	if _, err := os.Stat(r.file); err == nil {
		return nil, fmt.Errorf("journal %s already exists: instance %q is taken", r.file, r.Instance)
	}
	j := &Journal{r: r}
	return j, j.save()
}

func sanitize(s string) string {
	return strings.Map(func(c rune) rune {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' {
			return c
		}
		return '_'
	}, s)
}

// Record returns a copy of the record.
func (j *Journal) Record() Record {
	j.mu.Lock()
	defer j.mu.Unlock()
	r := j.r
	r.Groups = append([]string(nil), j.r.Groups...)
	return r
}

// Owns reports whether the instance recorded the group (or MON group) at path, or the
// group's own name carries its prefix.
func (j *Journal) Owns(path string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.r.owns(path)
}

func (r *Record) owns(path string) bool {
	for _, g := range r.Groups {
		if g == path {
			return true
		}
	}
	return r.Prefix != "" && strings.HasPrefix(path[strings.LastIndex(path, "/")+1:], r.Prefix)
}

// SetRun records a colo run's container label and network.
func (j *Journal) SetRun(run, network string) error {
	return j.update(func(r *Record) bool { r.Run, r.Network = run, network; return true })
}

// SaveDefault records system/default's schemata before the instance first changes it;
// later calls keep the first value. It is SaveDefaultFrom with a value read before.
func (j *Journal) SaveDefault(schemata string) error {
	return j.SaveDefaultFrom(func() (string, error) { return schemata, nil })
}

// SaveDefaultFrom records the administrator's system/default schemata before the
// instance first changes it: under the mount's default lock, another record's saved
// default when one exists (an instance on the mount, live or dead, may have changed
// system/default already: what it found is the administrator's, what read returns now
// may be its squeezed value), else what read returns. Later calls keep the first value.
// Every instance on a mount so records the same original, and ReleaseDefault writes it
// back only as the last one out.
func (j *Journal) SaveDefaultFrom(read func() (string, error)) error {
	if j.HasDefault() {
		return nil
	}
	unlock, err := lockDefault(filepath.Dir(j.r.file))
	if err != nil {
		return err
	}
	defer unlock()
	d := ""
	rs, err := listDir(filepath.Dir(j.r.file))
	if err != nil {
		return err
	}
	for _, r := range rs {
		if r.Instance != j.r.Instance && r.Default != "" {
			d = r.Default // the oldest: lists are oldest first
			break
		}
	}
	if d == "" {
		if d, err = read(); err != nil {
			return err
		}
	}
	return j.update(func(r *Record) bool {
		if r.Default != "" {
			return false
		}
		r.Default = d
		return true
	})
}

// ReleaseDefault ends the instance's hold on system/default: under the mount's default
// lock, restore writes the recorded administrator's default back unless another live
// instance on the mount holds one (it writes the same value back at its own end), and the
// record forgets it. It reports whether it wrote. A failed restore keeps the record's
// default (colo cleanup writes it back later).
func (j *Journal) ReleaseDefault(restore func(schemata string) error) (wrote bool, err error) {
	d := j.Record().Default
	if d == "" {
		return false, nil
	}
	unlock, err := lockDefault(filepath.Dir(j.r.file))
	if err != nil {
		return false, err
	}
	defer unlock()
	rs, err := listDir(filepath.Dir(j.r.file))
	if err != nil {
		return false, err
	}
	held := false
	for _, r := range rs {
		if r.Instance != j.r.Instance && r.Default != "" && r.Alive() {
			held = true
		}
	}
	if !held {
		if err := restore(d); err != nil {
			return false, err
		}
	}
	return !held, j.ClearDefault()
}

// lockDefault takes the default lock of a mount's journal directory (flock on
// default.lock, waiting for it): saving, releasing and reconciling system/default are
// serialised across the instances that share the state directory.
func lockDefault(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("journal directory %s: %w", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "default.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("journal: lock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil
}

// HasDefault reports whether system/default's original schemata is recorded.
func (j *Journal) HasDefault() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.r.Default != ""
}

// ClearDefault forgets the saved default (after the instance restored it).
func (j *Journal) ClearDefault() error {
	return j.update(func(r *Record) bool {
		changed := r.Default != ""
		r.Default = ""
		return changed
	})
}

// AddGroup records a group before it is created.
func (j *Journal) AddGroup(path string) error {
	return j.update(func(r *Record) bool {
		if slices.Contains(r.Groups, path) {
			return false
		}
		r.Groups = append(r.Groups, path)
		return true
	})
}

// DropGroup forgets a group after it was removed (a CTRL_MON group's MON groups go
// with it).
func (j *Journal) DropGroup(path string) error {
	return j.update(func(r *Record) bool {
		n := len(r.Groups)
		r.Groups = slices.DeleteFunc(r.Groups, func(g string) bool { return g == path || strings.HasPrefix(g, path+"/") })
		return len(r.Groups) != n
	})
}

// update applies change to the record under the lock and writes the record when change
// reports that it changed something.
func (j *Journal) update(change func(r *Record) bool) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !change(&j.r) {
		return nil
	}
	return j.save()
}

// Close ends the record: the instance undid everything, so its file goes.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := os.Remove(j.r.file); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

func (j *Journal) save() error { return write(j.r) }

func write(r Record) error {
	b, _ := json.MarshalIndent(r, "", "  ")
	tmp := r.file + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, r.file)
	}
	if err != nil {
		return fmt.Errorf("journal %s: %w", r.file, err)
	}
	if d, err := os.Open(filepath.Dir(r.file)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// List reads every record of the mount root under stateDir, oldest first.
func List(stateDir, root string) ([]Record, error) {
	return listDir(Dir(stateDir, root))
}

// ListAll reads the records of every mount under stateDir, oldest first per mount.
func ListAll(stateDir string) ([]Record, error) {
	dirs, err := filepath.Glob(filepath.Join(stateDir, "journal", "*"))
	if err != nil {
		return nil, err
	}
	sort.Strings(dirs)
	var out []Record
	for _, d := range dirs {
		rs, err := listDir(d)
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

func listDir(dir string) ([]Record, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // closed meanwhile
			}
			return nil, fmt.Errorf("journal: %w", err)
		}
		var r Record
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("journal %s is corrupt (%v); inspect it, undo what it names by hand, then delete it", f, err)
		}
		r.file = f
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, k int) bool { return out[i].Created.Before(out[k].Created) })
	return out, nil
}

// Alive reports whether the record's process still runs (ProcessAlive). A record from
// another PID namespace cannot be judged and counts as alive.
func (r Record) Alive() bool {
	if r.PIDNS != PIDNamespace() {
		return true
	}
	return ProcessAlive(r.PID, r.Start)
}

// ProcessAlive reports whether pid names a running process that started at start (clock
// ticks since boot, /proc/PID/stat field 22; 0: not compared). Dead are: a PID that is
// gone, a zombie (state Z or X: killed, not yet reaped by its parent), a process already
// exiting (PF_EXITING in the flags, field 9) and a PID reused by a process with another
// start time. kill(pid, 0) counts the first two as alive; /proc/PID/stat does not.
func ProcessAlive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	f := statFields(pid)
	if len(f) < 20 {
		return false // gone (or unreadable: a process we cannot see is not ours)
	}
	if f[0] == "Z" || f[0] == "X" || f[0] == "x" {
		return false
	}
	if flags, err := strconv.ParseUint(f[6], 10, 64); err == nil && flags&pfExiting != 0 {
		return false
	}
	st, _ := strconv.ParseUint(f[19], 10, 64)
	return start == 0 || st == start
}

// pfExiting is the kernel's PF_EXITING task flag (include/linux/sched.h): set as the
// process starts to exit, before its files (and the locks it holds) are closed.
const pfExiting = 0x4

// Forget deletes a dead instance's record once everything it names was undone.
func (r Record) Forget() error {
	if err := os.Remove(r.file); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// Save rewrites a record (after part of it was undone).
func (r Record) Save() error { return write(r) }

// PIDNamespace identifies this process's PID namespace ("pid-4026531836").
func PIDNamespace() string {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return "unknown"
	}
	return strings.NewReplacer("[", "", "]", "", ":", "-").Replace(ns)
}

// statFields are the fields of /proc/PID/stat after the command name (field 3 first;
// nil when unreadable).
func statFields(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}

// startTicks is field 22 of /proc/PID/stat (0 when unreadable).
func startTicks(pid int) uint64 {
	f := statFields(pid)
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

// DefaultStateDir is where colo instances keep their journals unless told otherwise
// (--state-dir): /run/colo for root, whose instances share it (and so see each other's
// records and the administrator's default of each mount); for another user
// $XDG_RUNTIME_DIR/colo, or /tmp/colo-UID without it, so that a user's `colo cleanup`
// judges only that user's records.
func DefaultStateDir() string {
	if os.Geteuid() == 0 {
		return "/run/colo"
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "colo")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("colo-%d", os.Geteuid()))
}
