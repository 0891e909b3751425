// The machine's controls: classes of service (CAT masks and MBA per domain), class
// assignment, moves and CPU quotas.

package sim

import (
	"fmt"
	"math"

	"colo/machine"
)

func (m *Machine) mbaMax() int {
	if m.p.MBA == nil {
		return 100
	}
	return m.p.MBA.Max
}

// SetCLOS sets the capacity bitmask and MBA value of a class on every LLC domain
// (masks[d], mba[d]; mba nil keeps the current values). Masks obey the profile: within
// the full mask, at least min_cbm_bits ones, contiguous unless the vendor allows sparse
// masks; MBA values within the profile's range. Nothing changes on error.
func (m *Machine) SetCLOS(clos int, masks []uint64, mba []int) error {
	if clos < 0 || clos >= len(m.clos) {
		return fmt.Errorf("CLOS %d out of range 0..%d (num_closids %d)", clos, len(m.clos)-1, len(m.clos))
	}
	if len(masks) != m.D {
		return fmt.Errorf("CLOS %d: %d masks given, the machine has %d LLC domains", clos, len(masks), m.D)
	}
	for d, mk := range masks {
		if err := m.p.CheckMask(mk); err != nil {
			return fmt.Errorf("CLOS %d domain %d: %w", clos, d, err)
		}
	}
	if mba != nil {
		if len(mba) != m.D {
			return fmt.Errorf("CLOS %d: %d MBA values given, the machine has %d domains", clos, len(mba), m.D)
		}
		if m.p.MBA == nil {
			return fmt.Errorf("machine %s has no MBA", m.p.Name)
		}
		for d, v := range mba {
			if v < m.p.MBA.Min || v > m.p.MBA.Max {
				return fmt.Errorf("CLOS %d domain %d: MBA %d outside %d..%d %s", clos, d, v, m.p.MBA.Min, m.p.MBA.Max, m.p.MBA.Unit)
			}
		}
		copy(m.clos[clos].mba, mba)
	}
	copy(m.clos[clos].masks, masks)
	m.dirty = true
	return nil
}

// CLOS returns a copy of a class's masks and MBA values.
func (m *Machine) CLOS(clos int) (masks []uint64, mba []int) {
	c := m.clos[clos]
	return append([]uint64(nil), c.masks...), append([]int(nil), c.mba...)
}

// Assign moves a workload to a class of service.
func (m *Machine) Assign(id ID, clos int) error {
	w, _, err := m.find(id)
	if err != nil {
		return err
	}
	if clos < 0 || clos >= len(m.clos) {
		return fmt.Errorf("CLOS %d out of range 0..%d", clos, len(m.clos)-1)
	}
	w.clos = clos
	m.dirty = true
	return nil
}

// Move re-pins a workload's threads to cores (the same number, one LLC domain). Lines in
// its former domain stay until evicted; its memory stays where it was first touched, so
// a move to another socket turns its traffic remote.
func (m *Machine) Move(id ID, cores []int) error {
	w, _, err := m.find(id)
	if err != nil {
		return err
	}
	if len(cores) != len(w.cores) {
		return fmt.Errorf("workload %d has %d threads, %d cores given", id, len(w.cores), len(cores))
	}
	if err := m.checkCores(cores, w); err != nil {
		return err
	}
	for _, c := range w.cores {
		m.coreOwner[c] = nil
	}
	for _, c := range cores {
		m.coreOwner[c] = w
	}
	w.cores = append(w.cores[:0], cores...)
	w.domain = m.p.DomainOfCore(cores[0])
	w.socket = m.p.SocketOfCore(cores[0])
	m.dirty = true
	return nil
}

// SetQuota sets a workload's CPU quota, the fraction q ∈ (0, 1] of its cores' time it may
// run (a CFS bandwidth quota, cpu.max = q·period per core; the Xen credit-scheduler cap of
// seed004.md §2.5). Its threads run at full speed when they run, so per second it executes
// q times the cycles — and the instructions, LLC insertions and memory traffic — it would
// without the quota; its share of a contended way (Split) and its bus demand shrink alike.
func (m *Machine) SetQuota(id ID, q float64) error {
	w, _, err := m.find(id)
	if err != nil {
		return err
	}
	if !(q > 0 && q <= 1) {
		return fmt.Errorf("workload %d: CPU quota %v must be in (0, 1]", id, q)
	}
	w.quota = q
	m.stale = true
	return nil
}

// Quota returns a workload's CPU quota (1 unless SetQuota lowered it).
func (m *Machine) Quota(id ID) (float64, error) {
	w, _, err := m.find(id)
	if err != nil {
		return 0, err
	}
	return w.quota, nil
}

// MBACeiling is the per-core bandwidth ceiling in MB/s of an MBA value (+Inf when
// unthrottled). Intel's MBA inserts a delay on L2→memory requests that caps a core's
// request rate; it is modelled as a roofline: a thread whose demand exceeds the ceiling
// runs at CPI' = CPI · demand/ceiling, the extra cycles being L3-miss stalls.
// Percent: value/100 · MBACoreMBps (100 % = no throttle); AMD 1/8 GB/s: value · 125 MB/s
// per core (the maximum = no limit); mba_MBps: the value per core.
func (m *Machine) MBACeiling(value int) float64 {
	mb := m.p.MBA
	if mb == nil || value >= mb.Max && mb.Unit != MBAUnitMBps {
		return math.Inf(1)
	}
	switch mb.Unit {
	case machine.MBAPercent:
		if c := m.o.MBACurve; len(c) > 0 {
			return curveAt(c, mb, value) * m.o.MBACoreMBps
		}
		return float64(value) / 100 * m.o.MBACoreMBps
	case machine.MBAEighthGBps:
		return float64(value) * 125
	}
	return float64(value)
}

// MBAUnitMBps is machine.MBAMBps (mba_MBps mount option).
const MBAUnitMBps = machine.MBAMBps

// curveAt reads an MBA curve (Options.MBACurve) at value: c[k] belongs to Min + k·Gran,
// linear in between, the last point held beyond the curve.
func curveAt(c []float64, mb *machine.MBA, value int) float64 {
	g := float64(max(mb.Gran, 1))
	x := (float64(value) - float64(mb.Min)) / g
	if x <= 0 {
		return c[0]
	}
	k := int(x)
	if k >= len(c)-1 {
		return c[len(c)-1]
	}
	return c[k] + (x-float64(k))*(c[k+1]-c[k])
}

// UnderThrottleMBACurve is a percentage-MBA response that lets through more bandwidth than
// the percentage says, the direction operators report (intel-cmt-cat issue 277: "4000 MB/s"
// requested, 13.6 GB/s measured): MBA delays requests by a fraction of a maximum delay,
// and a core that keeps several misses in flight hides part of the delay, so the
// bandwidth falls less than linearly with the delay. colo takes
//
//	ceiling(v)/ceiling(100 %) = 1 − (1 − v/100)²
//
// (v = 10 … 90 % → 0.19 … 0.99). The shape is colo's assumption, not a measurement: no
// paper or selftest publishes a per-step curve (the kernel's MBA selftest only checks that
// MBM and the memory controller agree within 8 % at MB 100 → 10). It exists so that the
// closed loop (policy/mbps) is tested against a response that is not the linear one it
// could otherwise invert exactly.
var UnderThrottleMBACurve = []float64{0.19, 0.36, 0.51, 0.64, 0.75, 0.84, 0.91, 0.96, 0.99}
