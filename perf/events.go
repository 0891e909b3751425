package perf

import (
	"bufio"
	"bytes"
	_ "embed"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	"gopkg.in/yaml.v3"
)

// Event is one countable perf event.
type Event struct {
	Name   string
	Type   uint32 // unix.PERF_TYPE_HARDWARE, PERF_TYPE_SOFTWARE or PERF_TYPE_RAW
	Config uint64
}

// Names of the events colo derives metrics from.
const (
	Instructions    = "instructions"
	Cycles          = "cycles"
	CacheReferences = "cache-references"
	CacheMisses     = "cache-misses"
	Branches        = "branches"
	BranchMisses    = "branch-misses"
	StallsTotal     = "cycle_activity.stalls_total"
	StallsL3Miss    = "cycle_activity.stalls_l3_miss"
	// L2Misses is the name under which a counter counts its microarchitecture's L2-miss
	// raw event (RawTable.L2Miss: L2_RQSTS.MISS on Skylake-SP, L2_LINES_IN.ALL on Ice
	// Lake-SP); absent where colo has no such encoding (no generic perf event exists).
	L2Misses = "l2-misses"

	TaskClock       = "task-clock" // ns the cgroup's tasks ran
	ContextSwitches = "context-switches"
	CPUMigrations   = "cpu-migrations"
	PageFaults      = "page-faults"
)

// HardwareEvents are the generic events the kernel maps onto every PMU.
var HardwareEvents = []Event{
	{Instructions, unix.PERF_TYPE_HARDWARE, unix.PERF_COUNT_HW_INSTRUCTIONS},
	{Cycles, unix.PERF_TYPE_HARDWARE, unix.PERF_COUNT_HW_CPU_CYCLES},
	{CacheReferences, unix.PERF_TYPE_HARDWARE, unix.PERF_COUNT_HW_CACHE_REFERENCES},
	{CacheMisses, unix.PERF_TYPE_HARDWARE, unix.PERF_COUNT_HW_CACHE_MISSES},
	{Branches, unix.PERF_TYPE_HARDWARE, unix.PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
	{BranchMisses, unix.PERF_TYPE_HARDWARE, unix.PERF_COUNT_HW_BRANCH_MISSES},
}

// SoftwareEvents are kernel-counted events that need no PMU (the fallback set).
var SoftwareEvents = []Event{
	{TaskClock, unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_TASK_CLOCK},
	{ContextSwitches, unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_CONTEXT_SWITCHES},
	{CPUMigrations, unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_CPU_MIGRATIONS},
	{PageFaults, unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_PAGE_FAULTS},
}

//go:embed events.yaml
var eventsYAML []byte

// RawTable is the raw-event encodings of one microarchitecture.
type RawTable struct {
	Microarch string `yaml:"microarch"`
	Models    []int  `yaml:"models"`
	Source    string `yaml:"source"`
	// L2Miss names the event in Events that counts L2 misses ("" none).
	L2Miss string            `yaml:"l2_miss"`
	Events map[string]uint64 `yaml:"events"`
}

var rawTables = mustParseRaw(eventsYAML)

func mustParseRaw(b []byte) []RawTable {
	t, err := ParseRawTables(b)
	if err != nil {
		panic(err)
	}
	return t
}

// ParseRawTables reads a raw-event table file (the format of events.yaml).
func ParseRawTables(b []byte) ([]RawTable, error) {
	var t []RawTable
	if err := yaml.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("raw event table: %w", err)
	}
	for _, x := range t {
		if x.Microarch == "" || len(x.Events) == 0 {
			return nil, fmt.Errorf("raw event table: entry %q has no microarch or no events", x.Microarch)
		}
		if _, ok := x.Events[x.L2Miss]; x.L2Miss != "" && !ok {
			return nil, fmt.Errorf("raw event table: entry %q: l2_miss %q is not one of its events", x.Microarch, x.L2Miss)
		}
	}
	return t, nil
}

// Microarchs lists the microarchitectures with raw-event tables.
func Microarchs() []string {
	var out []string
	for _, t := range rawTables {
		out = append(out, t.Microarch)
	}
	return out
}

// RawEvents returns the raw events of a microarchitecture, sorted by name, or nil when
// colo has no table for it.
func RawEvents(microarch string, names ...string) []Event {
	for _, t := range rawTables {
		if t.Microarch != microarch {
			continue
		}
		var out []Event
		for n, c := range t.Events {
			if len(names) > 0 && !containsStr(names, n) {
				continue
			}
			out = append(out, Event{Name: n, Type: unix.PERF_TYPE_RAW, Config: c})
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
		return out
	}
	return nil
}

// L2MissEvent returns the raw L2-miss event of a microarchitecture (its table's
// l2_miss), named L2Misses; ok is false when colo has no encoding for it.
func L2MissEvent(microarch string) (ev Event, ok bool) {
	for _, t := range rawTables {
		if t.Microarch == microarch && t.L2Miss != "" {
			return Event{Name: L2Misses, Type: unix.PERF_TYPE_RAW, Config: t.Events[t.L2Miss]}, true
		}
	}
	return Event{}, false
}

func containsStr(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// DetectMicroarch maps /proc/cpuinfo to a microarchitecture with a raw-event table
// ("" for other vendors, families and models, and for virtual CPUs of unknown model).
func DetectMicroarch(cpuinfo []byte) string {
	vendor, family, model := "", -1, -1
	sc := bufio.NewScanner(bytes.NewReader(cpuinfo))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			if vendor != "" {
				break // first processor block is enough
			}
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "vendor_id":
			vendor = v
		case "cpu family":
			family, _ = strconv.Atoi(v)
		case "model":
			model, _ = strconv.Atoi(v)
		}
	}
	if vendor != "GenuineIntel" || family != 6 {
		return ""
	}
	for _, t := range rawTables {
		for _, m := range t.Models {
			if m == model {
				return t.Microarch
			}
		}
	}
	return ""
}
