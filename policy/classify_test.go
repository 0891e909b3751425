package policy

import (
	"testing"

	"colo/profile"
)

// seed001.md §6.2 lists the class of all 55 benchmarks of the data set under Table 1 with
// LLCMPKC ≥ 10 ("T1") and with PBBCache's ≥ 14 ("sim"), computed independently of colo.
var seedClasses = map[string][2]Class{
	"GemsFDTD06":   {Streaming, Streaming},
	"ammp00":       {Light, Light},
	"applu00":      {Streaming, Streaming},
	"apsi00":       {Light, Light},
	"art00":        {Sensitive, Sensitive},
	"astar06":      {Sensitive, Sensitive},
	"bwaves06":     {Light, Light},
	"bzip200":      {Light, Light},
	"bzip206":      {Light, Light},
	"cactusADM06":  {Sensitive, Sensitive},
	"calculix06":   {Light, Light},
	"crafty00":     {Light, Light},
	"dealII06":     {Light, Light},
	"eon00":        {Light, Light},
	"equake00":     {Sensitive, Sensitive},
	"facerec00":    {Light, Light},
	"fma3d00":      {Streaming, Streaming},
	"galgel00":     {Light, Light},
	"gamess06":     {Light, Light},
	"gap00":        {Streaming, Light},
	"gcc00":        {Light, Light},
	"gcc06":        {Sensitive, Sensitive},
	"gobmk06":      {Light, Light},
	"gromacs06":    {Light, Light},
	"gzip00":       {Light, Light},
	"h264ref06":    {Light, Light},
	"hmmer06":      {Light, Light},
	"lbm06":        {Streaming, Streaming},
	"leslie3d06":   {Streaming, Streaming},
	"libquantum06": {Sensitive, Sensitive},
	"lucas00":      {Streaming, Streaming},
	"mcf00":        {Sensitive, Sensitive},
	"mcf06":        {Sensitive, Sensitive},
	"mesa00":       {Light, Light},
	"mgrid00":      {Streaming, Streaming},
	"milc06":       {Streaming, Streaming},
	"namd06":       {Light, Light},
	"omnetpp06":    {Sensitive, Sensitive},
	"parser00":     {Light, Light},
	"perlbench06":  {Sensitive, Sensitive},
	"perlbmk00":    {Light, Light},
	"povray06":     {Light, Light},
	"sixtrack00":   {Light, Light},
	"sjeng06":      {Light, Light},
	"soplex06":     {Sensitive, Sensitive},
	"sphinx306":    {Sensitive, Sensitive},
	"swim00":       {Streaming, Streaming},
	"tonto06":      {Light, Light},
	"twolf00":      {Light, Light},
	"vortex00":     {Sensitive, Sensitive},
	"vpr00":        {Sensitive, Sensitive},
	"wrf06":        {Light, Light},
	"wupwise00":    {Streaming, Streaming},
	"xalancbmk06":  {Sensitive, Sensitive},
	"zeusmp06":     {Streaming, Light}}

func TestClassifyMatchesSeedTable(t *testing.T) {
	set, err := profile.Default()
	if err != nil {
		t.Fatal(err)
	}
	if len(seedClasses) != 55 {
		t.Fatalf("seed table has %d rows", len(seedClasses))
	}
	for name, want := range seedClasses {
		tb, err := set.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := Classify(tb, PaperThresholds()); got != want[0] {
			t.Errorf("%s with LLCMPKC >= 10: %v, want %v", name, got, want[0])
		}
		if got := Classify(tb, PBBCacheThresholds()); got != want[1] {
			t.Errorf("%s with LLCMPKC >= 14: %v, want %v", name, got, want[1])
		}
	}
}

func TestClassifyCurvesRules(t *testing.T) {
	th := PaperThresholds()
	flat := []float64{1.02, 1.01, 1}
	if c := ClassifyCurves(flat, []float64{12, 11, 10}, th); c != Streaming {
		t.Errorf("low slowdown, high misses: %v", c)
	}
	if c := ClassifyCurves(flat, []float64{9, 9, 9}, th); c != Light {
		t.Errorf("low slowdown, few misses: %v", c)
	}
	// S(1) ≥ 1.05 alone does not make an application sensitive: only w ≥ 2 counts.
	if c := ClassifyCurves([]float64{1.2, 1.04, 1}, []float64{1, 1, 1}, th); c != Light {
		t.Errorf("sensitive only at 1 way: %v", c)
	}
	if c := ClassifyCurves([]float64{1.2, 1.05, 1}, []float64{1, 1, 1}, th); c != Sensitive {
		t.Errorf("S(2) = 1.05: %v", c)
	}
	// Any slowdown ≥ 1.06 rules streaming out.
	if c := ClassifyCurves([]float64{1.06, 1.01, 1}, []float64{30, 30, 30}, th); c != Light {
		t.Errorf("S(1) = 1.06 with high misses: %v", c)
	}
}
