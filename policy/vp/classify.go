package vp

import (
	"errors"
	"fmt"
	"math"
)

// Intensity is the memory-intensity class of a workload by its L3 misses per kilo-instruction
// (seed004.md §2.2): Pug < 2 ≤ Terrier < 15 ≤ Bulldog.
type Intensity int

const (
	Pug Intensity = iota
	Terrier
	Bulldog
)

var intensityNames = [...]string{Pug: "Pug", Terrier: "Terrier", Bulldog: "Bulldog"}

func (i Intensity) String() string { return enumName(i, intensityNames[:], "Intensity") }

// enumName is the name of v in names, or Type(v) for a value without one.
func enumName[T ~int](v T, names []string, typ string) string {
	if v >= 0 && int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", typ, int(v))
}

// Reuse is the memory-factor class (MF = L3 misses / L2 misses): Low (< 0.25, good cache reuse),
// Mid (0.25..0.6, fairly high memory-controller use), High (> 0.6, negligible reuse).
type Reuse int

const (
	LowMF Reuse = iota
	MidMF
	HighMF
)

var reuseNames = [...]string{LowMF: "MF<0.25", MidMF: "MF 0.25-0.6", HighMF: "MF>0.6"}

func (r Reuse) String() string { return enumName(r, reuseNames[:], "Reuse") }

// State is one of the 9 states of the Virtual Platforms model (seed004.md §2.2, Figure 4):
// S = 3·row + column, the row the MF class (downwards = less reuse), the column the intensity
// class (rightwards = more misses per instruction). S0 Pug/low MF … S8 Bulldog/high MF.
type State int

// Row is the MF class of the state; Col its intensity class.
func (s State) Row() Reuse               { return Reuse(int(s) / 3) }
func (s State) Col() Intensity           { return Intensity(int(s) % 3) }
func (s State) String() string           { return fmt.Sprintf("S%d", int(s)) }
func stateOf(i Intensity, r Reuse) State { return State(3*int(r) + int(i)) }

// CacheSensitive: a large reused footprint — low MF with non-trivial misses (Terrier or
// Bulldog in the first row: S1, S2; seed004.md §2.3).
func (s State) CacheSensitive() bool { return s.Row() == LowMF && s.Col() != Pug }

// MemorySensitive: MC/IC/remote-latency sensitive — a Bulldog with MF above 0.25 (S5, S8;
// Voldemort, Milc, Stream).
func (s State) MemorySensitive() bool { return s.Col() == Bulldog && s.Row() != LowMF }

// Intensive: a workload that can hurt others (Terrier or Bulldog).
func (s State) Intensive() bool { return s.Col() != Pug }

// Thresholds are the class bounds; the thesis derived them on Westmere and says to
// recalibrate per platform (seed004.md §5.2 item 5).
type Thresholds struct {
	MPKILow, MPKIHigh float64 // 2, 15
	MFLow, MFHigh     float64 // 0.25, 0.6
}

// DefaultThresholds are the thesis's bounds: Pug/Terrier/Bulldog at L3 MPKI 2 and 15, MF at
// 0.25 and 0.6 (seed004.md §2.2, §2.8).
func DefaultThresholds() Thresholds {
	return Thresholds{MPKILow: 2, MPKIHigh: 15, MFLow: 0.25, MFHigh: 0.6}
}

// Validate rejects bounds outside their meaning.
func (t Thresholds) Validate() error {
	var errs []error
	if !(t.MPKILow > 0 && t.MPKIHigh > t.MPKILow) {
		errs = append(errs, fmt.Errorf("vp: L3 MPKI bounds %v/%v must satisfy 0 < low < high (thesis: 2/15)", t.MPKILow, t.MPKIHigh))
	}
	if !(t.MFLow > 0 && t.MFHigh > t.MFLow && t.MFHigh <= 1) {
		errs = append(errs, fmt.Errorf("vp: MF bounds %v/%v must satisfy 0 < low < high ≤ 1 (thesis: 0.25/0.6)", t.MFLow, t.MFHigh))
	}
	return errors.Join(errs...)
}

// L3MPKI is the memory intensity, L3 misses per 1000 instructions (seed004.md §2.1).
func L3MPKI(l3Misses, instructions float64) float64 {
	if instructions <= 0 {
		return 0
	}
	return l3Misses / instructions * 1000
}

// MemoryFactor is MF = L3 misses / L2 misses (seed004.md §2.1): near 0 when the LLC catches
// what the L2 misses, near 1 when every L2 miss goes to memory. 0 without L2 misses. On a
// machine without an L2-miss counter, LLC references stand in for L2 misses (every L2 miss is
// an LLC reference), which makes MF the LLC miss ratio.
func MemoryFactor(l3Misses, l2Misses float64) float64 {
	if l2Misses <= 0 {
		return 0
	}
	return math.Min(1, l3Misses/l2Misses)
}

// Classify returns the state of a workload with the given L3 MPKI and MF. Values on a bound
// go to the higher class.
func (t Thresholds) Classify(l3mpki, mf float64) State {
	i := Pug
	switch {
	case l3mpki >= t.MPKIHigh:
		i = Bulldog
	case l3mpki >= t.MPKILow:
		i = Terrier
	}
	r := LowMF
	switch {
	case mf > t.MFHigh:
		r = HighMF
	case mf >= t.MFLow:
		r = MidMF
	}
	return stateOf(i, r)
}
