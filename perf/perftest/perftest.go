// Package perftest is a fake PMU at perf's system-call boundary (perf.Sys) for tests of
// code above perf on machines without hardware counters: each event counts at a fixed
// rate per CPU while "on the PMU", and is on the PMU a fixed fraction of the time, so
// multiplexing scaling must recover the true rate.
package perftest

import (
	"encoding/binary"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Key names an event.
type Key struct {
	Type   uint32
	Config uint64
}

// PMU implements perf.Sys.
type PMU struct {
	// Rates are events per second per CPU. Events without a rate fail to open with
	// ENOENT (like a missing PMU) when hardware or raw, and count 0 otherwise.
	Rates map[Key]float64
	// Running is the fraction of enabled time each event is on the PMU (0 < r ≤ 1).
	Running float64
	// Now is the clock (default: wall time).
	Now func() time.Time
	// PerSample freezes the clock between samples: it moves to Now only when a
	// descriptor is read again since it last moved, i.e. when the next sample's reads
	// begin. All reads of one sample then see one instant, however far apart a loaded
	// host makes them (a real PMU's events count on while they are read one by one).
	PerSample bool

	mu     sync.Mutex
	next   int
	fds    map[int]fd
	frozen time.Time
	read   map[int]bool // read since the clock last moved (PerSample)
}

type fd struct {
	key    Key
	opened time.Time
}

// New returns a PMU with the given rates, multiplexed to the running fraction.
func New(rates map[Key]float64, running float64) *PMU {
	return &PMU{Rates: rates, Running: running, next: 1000, fds: map[int]fd{}}
}

func (p *PMU) wall() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// now is the PMU's clock for a read of descriptor f (0: an open); p.mu is held.
func (p *PMU) now(f int) time.Time {
	if !p.PerSample {
		return p.wall()
	}
	if p.frozen.IsZero() || p.read[f] {
		p.frozen, p.read = p.wall(), map[int]bool{}
	}
	if f != 0 {
		p.read[f] = true
	}
	return p.frozen
}

// Instant is the PMU's clock now, as the counters see it (with PerSample: the instant
// of the last sample's reads).
func (p *PMU) Instant() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.now(0)
}

// Open implements perf.Sys.
func (p *PMU) Open(attr *unix.PerfEventAttr, pid, cpu, groupFd, flags int) (int, error) {
	k := Key{attr.Type, attr.Config}
	if _, ok := p.Rates[k]; !ok && (attr.Type == unix.PERF_TYPE_HARDWARE || attr.Type == unix.PERF_TYPE_RAW) {
		return -1, unix.ENOENT
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	p.fds[p.next] = fd{key: k, opened: p.now(0)}
	return p.next, nil
}

// Read implements perf.Sys (read_format: value, time_enabled, time_running).
func (p *PMU) Read(f int, buf []byte) (int, error) {
	if len(buf) < 24 {
		return 0, unix.EINVAL
	}
	p.mu.Lock()
	x, ok := p.fds[f]
	var at time.Time
	if ok {
		at = p.now(f)
	}
	p.mu.Unlock()
	if !ok {
		return 0, unix.EBADF
	}
	dt := at.Sub(x.opened).Seconds()
	enabled := uint64(dt * 1e9)
	running := uint64(dt * 1e9 * p.Running)
	value := uint64(p.Rates[x.key] * dt * p.Running)
	binary.NativeEndian.PutUint64(buf[0:], value)
	binary.NativeEndian.PutUint64(buf[8:], enabled)
	binary.NativeEndian.PutUint64(buf[16:], running)
	return 24, nil
}

// Close implements perf.Sys.
func (p *PMU) Close(f int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.fds[f]; !ok {
		return unix.EBADF
	}
	delete(p.fds, f)
	return nil
}

// Open returns the number of open descriptors.
func (p *PMU) OpenFDs() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.fds)
}
