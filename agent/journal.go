package agent

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"colo/machine"
	"colo/resctrl"
	"colo/resctrl/journal"
	"colo/resctrl/plan"
)

// Groups is what the agent needs from a resctrl mount. Paths are group paths relative
// to the mount: "" is system/default, "g" a control group, "mon_groups/m" or
// "g/mon_groups/m" a monitoring group. Resctrl implements it over colo's resctrl client
// and adapter; it changes only groups whose names carry Prefix (the agent instance's)
// and system/default.
type Groups interface {
	Prefix() string
	// PlanState and ApplyPlan are the group planner's view of the mount and its
	// operations (resctrl.Adapter).
	PlanState(m *machine.Profile, own func(name string) bool) (groups []plan.Group, closids, rmids int, err error)
	ApplyPlan(ops []plan.Op) error
	// CreateGroup, RemoveGroup, Exists: the class monitoring groups (RMIDs ran out).
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
	// FS is the mount (the journal's reconcile works on it).
	FS() resctrl.FS
	// Available says why the mount cannot be used now (nil: it can).
	Available() error
	Root() string
}

// Journal is the instance's write-ahead record (colo/resctrl/journal.Journal): groups are
// added before they are created and dropped after they are removed; system/default's
// schemata is saved before its first change.
type Journal interface {
	Record() journal.Record
	SaveDefault(schemata string) error
	SaveDefaultFrom(read func() (string, error)) error
	ReleaseDefault(restore func(schemata string) error) (wrote bool, err error)
	HasDefault() bool
	ClearDefault() error
	AddGroup(path string) error
	DropGroup(path string) error
	Close() error
}

var _ Journal = (*journal.Journal)(nil)

// NewInstance names a new agent instance (its groups' prefix is GroupPrefix(id)).
func NewInstance() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// OpenJournal starts the journal record of a new agent instance on the mount root under
// stateDir.
func OpenJournal(stateDir, root, instance string) (*journal.Journal, error) {
	return journal.Open(stateDir, root, journal.Record{Instance: "agent-" + instance, Kind: "agent", Prefix: GroupPrefix(instance)})
}

// Lock holds the one-agent-per-mount lock of a state directory.
type Lock struct{ f *os.File }

// TakeLock takes the lock of the mount root under stateDir; it fails when another agent
// holds it.
func TakeLock(stateDir, root string) (*Lock, error) {
	dir := journal.Dir(stateDir, root)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("state directory %s: %w", stateDir, err)
	}
	p := filepath.Join(dir, "agent.lock")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("agent lock: %w", err)
	}
	// a predecessor killed a moment ago may still hold the lock while it exits (its
	// files are closed late in the exit): wait for it, never for a live agent
	for waited := time.Duration(0); ; waited += 20 * time.Millisecond {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		b, _ := os.ReadFile(p)
		holder := strings.TrimSpace(string(b))
		pid, _ := strconv.Atoi(holder)
		if journal.ProcessAlive(pid, 0) || waited >= lockWait {
			f.Close()
			return nil, fmt.Errorf("another colo agent manages resctrl at %s with state directory %s (pid %s); stop it or use another --state-dir", root, stateDir, holder)
		}
		time.Sleep(20 * time.Millisecond)
	}
	f.Truncate(0)
	f.WriteAt([]byte(fmt.Sprint(os.Getpid())), 0)
	return &Lock{f: f}, nil
}

// lockWait bounds the wait for an exiting predecessor's lock.
const lockWait = 10 * time.Second

// Release frees the lock.
func (l *Lock) Release() {
	if l != nil && l.f != nil {
		syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
		l.f.Close()
		l.f = nil
	}
}
