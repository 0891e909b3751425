package predict

import (
	"math"
	"testing"
)

func TestPredictUnderReducesToBubbleUpWhenShared(t *testing.T) {
	a := Curve{Name: "a", Dials: []float64{0, 4, 8, 16}, Perf: []float64{100, 110, 130, 200}}
	for _, s := range []float64{0, 3, 8, 11.5, 16} {
		want, _ := Predict(a, s, MethodLinear)
		got, note, err := PredictUnder(a, nil, []float64{s}, Unpartitioned(), MethodNearest)
		if err != nil || note != "" || got != want {
			t.Errorf("score %v: PredictUnder %v (%q, %v), Predict linear %v", s, got, note, err, want)
		}
	}
	// Two co-runners: Govindan's sum; beyond the curve: saturation with a note.
	got, _, _ := PredictUnder(a, nil, []float64{4, 4}, Unpartitioned(), MethodLinear)
	if want, _ := Predict(a, 8, MethodLinear); got != want {
		t.Errorf("4+4 MB: %v, want %v", got, want)
	}
	if _, note, _ := PredictUnder(a, nil, []float64{10, 10}, Unpartitioned(), MethodLinear); note == "" {
		t.Error("no note beyond the last dial")
	}
}

func TestPredictUnderPartition(t *testing.T) {
	a := Curve{Name: "a", Dials: []float64{0, 4, 8, 16}, Perf: []float64{100, 110, 130, 200}}
	ways := &Curve{Name: "a-ways", Dials: []float64{1, 2, 4}, Perf: []float64{150, 120, 100}}
	al := Allocation{LLCMB: 16, TotalWays: 4, Ways: 2, Overlap: []float64{0}}
	// Disjoint partitions: only A's capacity counts, t(4 ways)/t(2 ways) = 100/120.
	got, _, _ := PredictUnder(a, ways, []float64{8}, al, MethodLinear)
	if math.Abs(got-100.0/120) > 1e-12 {
		t.Errorf("disjoint: %v, want 100/120", got)
	}
	// Half of the competitor's ways in A's, MBA 50 %: its pressure counts a quarter.
	al.Overlap, al.MBA = []float64{0.5}, []float64{0.5}
	got, _, _ = PredictUnder(a, ways, []float64{16}, al, MethodLinear)
	p4, _ := Predict(a, 4, MethodLinear)
	if math.Abs(got-100.0/120*p4) > 1e-12 {
		t.Errorf("overlap: %v, want %v", got, 100.0/120*p4)
	}
	// Without a ways curve the withheld capacity is a bubble: 16 · (1 − 2/4) = 8 MB.
	if d := EffectiveDial([]float64{16}, al); d != 12 {
		t.Errorf("effective dial %v, want 8 + 0.25·16", d)
	}
	// More ways never predict worse; the whole cache is the unpartitioned prediction.
	prev := 0.0
	for w := 1; w <= 4; w++ {
		al := Allocation{LLCMB: 16, TotalWays: 4, Ways: w}
		p, _, _ := PredictUnder(a, ways, []float64{4}, al, MethodLinear)
		if p < prev {
			t.Errorf("%d ways predict %v < %v with fewer", w, p, prev)
		}
		prev = p
	}
	if want, _ := Predict(a, 4, MethodLinear); prev != want {
		t.Errorf("all ways: %v, want %v", prev, want)
	}
}
