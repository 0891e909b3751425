package probe

import (
	"math"
	"testing"
	"time"
)

func TestCombosOrder(t *testing.T) {
	c := DefaultConfig() // 2..4 ways × 10..20 %
	want := []Combo{{2, 10}, {2, 20}, {3, 10}, {3, 20}, {4, 10}, {4, 20}}
	got := c.Combos()
	if len(got) != len(want) {
		t.Fatalf("%v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ascending order %v, want %v", got, want)
		}
	}
	// thesis evaluation: 6 combinations × 2 s = 12 s, ~40 samples of 50 ms each
	if c.SegmentTime() != 2*time.Second || int(c.SegmentTime()/c.Frequency) != 40 {
		t.Fatalf("segment %v", c.SegmentTime())
	}
	c.Descending = true
	got = c.Combos()
	for i := range want {
		if got[i] != want[len(want)-1-i] {
			t.Fatalf("descending order %v", got)
		}
	}
}

func TestTrimmedMean(t *testing.T) {
	xs := []float64{0.1, 0.9, 0.5, 0.5, 0.5, 0.5, 0.5, 5, math.NaN()}
	if got := TrimmedMean(xs, 1); math.Abs(got-0.5666666666666667) > 1e-12 {
		// drops 0.1 and 5; mean of 0.5×5 and 0.9 = 3.4/6
		t.Fatalf("trimmed mean %v", got)
	}
	if got := TrimmedMean([]float64{1, 3}, 5); got != 2 {
		t.Fatalf("too few samples to trim: %v", got)
	}
	if !math.IsNaN(TrimmedMean(nil, 0)) {
		t.Fatal("empty mean not NaN")
	}
}

// sweep is NewSweep(c, target) run over the IPCE table ipce: the sweep and the combinations
// it measured, in order.
func sweep(c Config, target float64, ipce map[Combo]float64) (*Sweep, []Combo) {
	s := NewSweep(c, target)
	return s, run(s, ipce)
}

func run(s *Sweep, ipce map[Combo]float64) []Combo {
	var order []Combo
	for {
		c, ok := s.Current()
		if !ok {
			return order
		}
		order = append(order, c)
		v := ipce[c]
		s.Finish([]float64{v, v, v})
		if s.Done() {
			return order
		}
	}
}

// a tipping-point job: IPCE jumps at 3 ways, MBA matters little once it fits
var tipping = map[Combo]float64{
	{2, 10}: 0.40, {2, 20}: 0.45, {3, 10}: 0.91, {3, 20}: 0.93, {4, 10}: 0.94, {4, 20}: 0.95,
}

func TestAscendingStopsAtFirstMeetingTarget(t *testing.T) {
	s, order := sweep(DefaultConfig(), 0.90, tipping)
	if len(order) != 3 {
		t.Fatalf("measured %v; should stop after (3,10)", order)
	}
	r := s.Result(11, 90)
	if r.Combo != (Combo{3, 10}) || !r.Met || r.Err != "" {
		t.Fatalf("result %+v", r)
	}
}

func TestAscendingNeverMetReturnsLast(t *testing.T) {
	s, order := sweep(DefaultConfig(), 0.99, tipping)
	r := s.Result(11, 90)
	if len(order) != 6 || r.Combo != (Combo{4, 20}) || r.Met {
		t.Fatalf("order %v result %+v; Algorithm 1 returns S_alloc.last unmet", order, r)
	}
}

func TestDescendingKeepsPreviousOnBreak(t *testing.T) {
	c := DefaultConfig()
	c.Descending = true
	s, order := sweep(c, 0.90, tipping)
	// (4,20) (4,10) (3,20) (3,10) meet 0.90, (2,20) falls below: keep (3,10)
	if len(order) != 5 || order[4] != (Combo{2, 20}) {
		t.Fatalf("order %v", order)
	}
	if r := s.Result(11, 90); r.Combo != (Combo{3, 10}) || !r.Met {
		t.Fatalf("result %+v", r)
	}
}

func TestBreakConditionRelativeToBest(t *testing.T) {
	// no absolute target: threshold = 0.9 × best = 0.855 → minimal is (3,10)
	c := DefaultConfig()
	s, order := sweep(c, 0, tipping)
	r := s.Result(11, 90)
	if len(order) != 6 || r.Combo != (Combo{3, 10}) || math.Abs(r.Target-0.855) > 1e-12 {
		t.Fatalf("order %v result %+v", order, r)
	}
	// a flat job: 0.9 × 0.60 = 0.54, so already (2,10) at 0.55 passes
	flat := map[Combo]float64{{2, 10}: 0.55, {2, 20}: 0.56, {3, 10}: 0.57, {3, 20}: 0.58, {4, 10}: 0.59, {4, 20}: 0.60}
	s, _ = sweep(c, 0, flat)
	if r := s.Result(11, 90); r.Combo != (Combo{2, 10}) {
		t.Fatalf("flat result %+v", r)
	}
	// descending without target: threshold from the first (largest) combination
	c.Descending = true
	s, order = sweep(c, 0, tipping)
	if r := s.Result(11, 90); r.Combo != (Combo{3, 10}) || len(order) != 5 {
		t.Fatalf("descending relative: order %v result %+v", order, r)
	}
}

func TestGreedyPrefersWhatIsFree(t *testing.T) {
	c := DefaultConfig()
	c.Greedy = true
	s, order := sweep(c, 0.90, tipping)
	if len(order) != 6 {
		t.Fatalf("greedy must measure every combination: %v", order)
	}
	// plenty of ways, bandwidth scarce: (3,10) costs 3/11+10/20; (4,10) 4/11+10/20 → (3,10)
	if r := s.Result(11, 20); r.Combo != (Combo{3, 10}) {
		t.Fatalf("greedy %+v", r)
	}
	// only 3 ways free, lots of bandwidth: 3-way combos fit, the 4-way ones do not
	if r := s.Result(3, 90); r.Ways != 3 {
		t.Fatalf("greedy with 3 free ways %+v", r)
	}
}

func TestFailedSegment(t *testing.T) {
	s := NewSweep(DefaultConfig(), 0.9)
	s.Finish(nil) // no samples: the job vanished
	if !s.Done() {
		t.Fatal("sweep continues without samples")
	}
	if r := s.Result(11, 90); r.Err == "" {
		t.Fatalf("no error: %+v", r)
	}
}

func TestValidate(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(11, 10); err != nil {
		t.Fatal(err)
	}
	c.MaxL3 = 12
	if c.Validate(11, 10) == nil {
		t.Fatal("12 ways accepted on an 11-way budget")
	}
	c = DefaultConfig()
	c.BreakCondition = 1.5
	if c.Validate(11, 10) == nil {
		t.Fatal("break_condition 1.5 accepted")
	}
	c = DefaultConfig()
	c.ProbingT = 100 * time.Millisecond
	if c.Validate(11, 10) == nil {
		t.Fatal("segments shorter than a sample accepted")
	}
}
