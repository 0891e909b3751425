package agent

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// Groups is what the agent needs from a resctrl mount. Paths are group paths relative
// to the mount: "" is system/default, "g" a control group, "mon_groups/m" or
// "g/mon_groups/m" a monitoring group. Resctrl implements it over colo's resctrl client;
// it changes only groups whose names carry Prefix (the agent instance's) and
// system/default.
type Groups interface {
	Prefix() string
	MonPath(ctrl, mon string) string
	CreateGroup(path string) error
	RemoveGroup(path string) error
	Exists(path string) bool
	SetSchemata(path string, domain int, mask uint64, mba int) error
	ReadSchemata(path string, domain int) (mask uint64, mba int, err error)
	Tasks(path string) ([]int, error)
	AddTasks(path string, tids []int) (gone int, err error)
	MonData(path string) (occupancy, mbmTotal, mbmLocal uint64, err error)
	// SaveDefault returns system/default's whole schemata; RestoreDefault writes it back.
	SaveDefault() (string, error)
	RestoreDefault(schemata string) error
	// Sweep removes every group carrying Prefix (MON groups first) and returns them.
	Sweep() ([]string, error)
	// Available says why the mount cannot be used now (nil: it can).
	Available() error
	Root() string
}

// JournalState is what an agent instance records under --state-dir before it changes
// resctrl, so that the next start undoes what a killed agent left.
type JournalState struct {
	// Instance names this agent's groups (their prefix); it stays the same across
	// restarts with the same state directory and resctrl mount.
	Instance string `json:"instance"`
	Root     string `json:"resctrl_root"`
	PID      int    `json:"pid"`
	// Default is system/default's schemata as the agent found it ("" before it saved it).
	Default string `json:"default_schemata,omitempty"`
	// Groups the agent created or is about to create, in order.
	Groups []string `json:"groups"`
}

// Journal is a write-ahead record of the agent's groups: a group is added (and the file
// synced) before it is created, and dropped after it was removed.
type Journal interface {
	State() JournalState
	SetDefault(schemata string) error
	Add(group string) error
	Drop(group string) error
	Reset() error
	Close() error
}

// FileJournal is a Journal in one JSON file per resctrl mount under a state directory,
// held under an exclusive flock (one agent per mount and state directory).
type FileJournal struct {
	mu   sync.Mutex
	path string
	lock *os.File
	st   JournalState
}

// OpenJournal opens (or starts) the journal of the agent for the resctrl mount root under
// dir. It fails when another agent holds it.
func OpenJournal(dir, root string) (*FileJournal, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("state directory %s: %w", dir, err)
	}
	h := fnv.New32a()
	h.Write([]byte(filepath.Clean(root)))
	base := filepath.Join(dir, fmt.Sprintf("agent-%08x", h.Sum32()))
	f, err := os.OpenFile(base+".lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("journal lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(base + ".lock")
		f.Close()
		return nil, fmt.Errorf("another colo agent manages resctrl at %s with state directory %s (pid %s); stop it or use another --state-dir", root, dir, strings.TrimSpace(string(b)))
	}
	f.Truncate(0)
	f.WriteAt([]byte(fmt.Sprint(os.Getpid())), 0)
	j := &FileJournal{path: base + ".json", lock: f}
	if b, err := os.ReadFile(j.path); err == nil {
		if err := json.Unmarshal(b, &j.st); err != nil {
			f.Close()
			return nil, fmt.Errorf("journal %s is corrupt (%v); inspect it, remove the groups it names by hand, then delete it", j.path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		f.Close()
		return nil, fmt.Errorf("journal: %w", err)
	}
	if j.st.Instance == "" {
		var b [4]byte
		rand.Read(b[:])
		j.st.Instance = hex.EncodeToString(b[:])
	}
	j.st.Root, j.st.PID = root, os.Getpid()
	return j, j.save()
}

// Path is the journal file.
func (j *FileJournal) Path() string { return j.path }

func (j *FileJournal) save() error {
	b, _ := json.MarshalIndent(j.st, "", "  ")
	tmp := j.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, j.path)
	}
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if d, err := os.Open(filepath.Dir(j.path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// State returns a copy of the recorded state.
func (j *FileJournal) State() JournalState {
	j.mu.Lock()
	defer j.mu.Unlock()
	st := j.st
	st.Groups = append([]string(nil), j.st.Groups...)
	return st
}

// SetDefault records system/default's schemata as found.
func (j *FileJournal) SetDefault(s string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.st.Default = s
	return j.save()
}

// Add records a group before it is created.
func (j *FileJournal) Add(g string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, x := range j.st.Groups {
		if x == g {
			return nil
		}
	}
	j.st.Groups = append(j.st.Groups, g)
	return j.save()
}

// Drop forgets a removed group.
func (j *FileJournal) Drop(g string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := j.st.Groups[:0]
	for _, x := range j.st.Groups {
		if x != g {
			out = append(out, x)
		}
	}
	j.st.Groups = out
	return j.save()
}

// Reset forgets the groups and the saved default (everything was undone).
func (j *FileJournal) Reset() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.st.Groups, j.st.Default = nil, ""
	return j.save()
}

// Close releases the lock (the file stays: it keeps the instance name).
func (j *FileJournal) Close() error {
	if j.lock == nil {
		return nil
	}
	syscall.Flock(int(j.lock.Fd()), syscall.LOCK_UN)
	err := j.lock.Close()
	j.lock = nil
	return err
}
