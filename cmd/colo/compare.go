package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"colo/bench"
	"colo/metric"
	"colo/sched"

	// The online controllers register their schedulers (dcat, static-cat, lfoc+, vp).
	_ "colo/policy/dcat"
	_ "colo/policy/lfocplus"
	_ "colo/policy/vp"

	"github.com/spf13/cobra"
)

type compareFlags struct {
	schedulers string
	format     string
}

func init() {
	var f compareFlags
	cmd := &cobra.Command{
		Use:   "compare BENCH.yaml",
		Short: "Run one scenario under several schedulers and compare STP, unfairness, worst slowdown and reconfigurations",
		Long: `compare runs the benchmark's trace once per scheduler on its platform (sim by default),
then every job alone, and prints per scheduler:

  STP          Σ 1/S_i over the jobs that ran (S_i = IPC alone / IPC in the run)
  unfairness   max S_i / min S_i
  worst        max S_i
  reconfig     ticks at which the scheduler changed allocations or moved jobs (per minute too)
  moved ways   ways whose cached lines repacking moved (dcat's contiguous layout)

"shared" is least-loaded placement with every job in system/default (no partitioning).
Scheduler options in the file may be prefixed (dcat.baseline, vp.window, lfoc+.…) so
that one file configures every controller; plain keys go to every scheduler but shared.`,
		Example: `  colo compare examples/dcat/fig15-mlr-mload.yaml
  colo compare examples/vp/victim-aggressor-hog.yaml --schedulers shared,vp --format json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompare(cmd.OutOrStdout(), args[0], f)
		},
	}
	cmd.Flags().StringVar(&f.schedulers, "schedulers", "shared,static-cat,dcat,lfoc+,vp", "comma-separated schedulers to compare (shared = least-loaded without RDT)")
	cmd.Flags().StringVar(&f.format, "format", "table", "output format: table or json")
	rootCmd.AddCommand(cmd)
}

// compareRow is one scheduler's outcome; the JSON keys are stable.
type compareRow struct {
	Name             string          `json:"name"`
	STP              float64         `json:"stp"`
	ANTT             float64         `json:"antt"`
	Unfairness       float64         `json:"unfairness"`
	WorstSlowdown    float64         `json:"worst_slowdown"`
	Reconfigurations int             `json:"reconfigurations"`
	ReconfigPerMin   float64         `json:"reconfigurations_per_minute"`
	MovedWays        int             `json:"moved_ways"`
	VirtualSeconds   float64         `json:"virtual_seconds"`
	Jobs             []compareJobRow `json:"jobs"`
}

type compareJobRow struct {
	Name     string  `json:"name"`
	IPC      float64 `json:"ipc"`
	IPCAlone float64 `json:"ipc_alone"`
	Slowdown float64 `json:"slowdown"`
}

// ipcRecorder sums instructions and cycles per job and counts reconfigurations: the
// distinct times at which the scheduler changed an allocation or moved a job (one tick that
// resizes several groups is one reconfiguration).
type ipcRecorder struct {
	bench.Discard
	instr, cycles map[int]float64
	reconfig      int
	at            map[time.Duration]bool
}

func (r *ipcRecorder) mark(t time.Duration) {
	if !r.at[t] {
		r.at[t] = true
		r.reconfig++
	}
}

func (r *ipcRecorder) Sample(s bench.SampleRecord) error {
	r.instr[s.Job] += s.Instructions
	r.cycles[s.Job] += s.Cycles
	return nil
}

func (r *ipcRecorder) Allocation(a bench.AllocationRecord) error {
	if a.Source == "sched" {
		r.mark(a.T)
	}
	return nil
}

func (r *ipcRecorder) Event(e bench.EventRecord) error {
	if e.Kind == "migrate" || e.Kind == "repin" || e.Kind == "quota" {
		r.mark(e.T)
	}
	return nil
}

func newIPCRecorder() *ipcRecorder {
	return &ipcRecorder{instr: map[int]float64{}, cycles: map[int]float64{}, at: map[time.Duration]bool{}}
}

func runCompare(w io.Writer, file string, f compareFlags) error {
	if f.format != "table" && f.format != "json" {
		return badInputf("--format %q: use table or json", f.format)
	}
	bm, err := bench.Load(file)
	if err != nil {
		return badInput(err)
	}
	var names []string
	for _, n := range strings.Split(f.schedulers, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if n != "shared" {
			if err := bench.CheckScheduler(n); err != nil {
				return badInputf("--schedulers: %v; or shared (least-loaded without RDT)", err)
			}
		}
		names = append(names, n)
	}
	if len(names) == 0 {
		return badInputf("--schedulers: name at least one scheduler")
	}
	alone := map[string]float64{}
	var rows []compareRow
	for _, n := range names {
		row, err := compareOne(bm, n, alone)
		if err != nil {
			return err
		}
		rows = append(rows, row)
	}
	if f.format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"benchmark": bm.Name, "schedulers": rows})
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "scheduler\tSTP\tANTT\tunfairness\tworst slowdown\treconfig\treconfig/min\tmoved ways\t\n")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.3f\t%.3f\t%d\t%.1f\t%d\t\n", r.Name, r.STP, r.ANTT, r.Unfairness, r.WorstSlowdown,
			r.Reconfigurations, r.ReconfigPerMin, r.MovedWays)
	}
	return tw.Flush()
}

// runWith runs bm under the named scheduler with a recorder and returns the result.
func runWith(bm *bench.Benchmark, name string, rec bench.Recorder) (*bench.Result, error) {
	b := *bm
	b.Data.Perf = true
	impl := name
	b.Sched.Options = bm.Sched.Options
	if name == "shared" {
		impl = "least-loaded"
		b.Sched.RDT = false
		b.Sched.Options = nil
	}
	b.Sched.Implementation = impl
	pf, err := bench.NewPlatform(&b)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	s, err := sched.New(impl, sched.Env{Machine: b.Machine, Config: b.Sched,
		IPCEUnavailable: bench.IPCEUnavailable(pf), CPUQuotaUnavailable: bench.CPUQuotaUnavailable(pf)})
	if err != nil {
		return nil, badInput(fmt.Errorf("%s: scheduler %s: %w", bm.File, name, err))
	}
	return bench.Run(&b, pf, s, bench.Options{Recorder: rec})
}

// aloneIPC runs job j by itself (arriving at 0, same length) under shared and returns its
// IPC; results are memoised by model, cores and length.
func aloneIPC(bm *bench.Benchmark, j bench.JobSpec, memo map[string]float64) (float64, error) {
	length := j.Length
	if length == 0 && j.StopAt > 0 {
		length = j.StopAt - j.Arrival
	}
	key := fmt.Sprintf("%s|%s|%d|%v|%v", j.Workload, j.Image, j.Cores, j.CPUs, length)
	if v, ok := memo[key]; ok {
		return v, nil
	}
	b := *bm
	solo := j
	solo.Arrival, solo.StopAt = 0, 0
	solo.Length = length
	if length == 0 {
		solo.Length = bm.MaxT
	}
	b.Jobs = []bench.JobSpec{solo}
	b.MaxT = solo.Length + time.Second
	rec := newIPCRecorder()
	if _, err := runWith(&b, "shared", rec); err != nil {
		return 0, err
	}
	v := metric.IPC(rec.instr[solo.ID], rec.cycles[solo.ID])
	memo[key] = v
	return v, nil
}

func compareOne(bm *bench.Benchmark, name string, memo map[string]float64) (compareRow, error) {
	rec := newIPCRecorder()
	res, err := runWith(bm, name, rec)
	if err != nil {
		return compareRow{}, err
	}
	row := compareRow{Name: name, Reconfigurations: rec.reconfig, MovedWays: res.ConsolidatedWays,
		VirtualSeconds: res.Virtual.Seconds()}
	if row.VirtualSeconds > 0 {
		row.ReconfigPerMin = float64(rec.reconfig) / row.VirtualSeconds * 60
	}
	var slow []float64
	specs := map[int]bench.JobSpec{}
	for _, j := range bm.Jobs {
		specs[j.ID] = j
	}
	ids := make([]int, 0, len(rec.instr))
	for id := range rec.instr {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, id := range ids {
		ipc := metric.IPC(rec.instr[id], rec.cycles[id])
		if math.IsNaN(ipc) || ipc <= 0 {
			continue
		}
		a, err := aloneIPC(bm, specs[id], memo)
		if err != nil {
			return compareRow{}, err
		}
		s := metric.Slowdown(a, ipc)
		slow = append(slow, s)
		row.Jobs = append(row.Jobs, compareJobRow{Name: specs[id].Name, IPC: ipc, IPCAlone: a, Slowdown: s})
	}
	if len(slow) == 0 {
		return row, fmt.Errorf("%s: no job ran under %s", bm.File, name)
	}
	row.STP = metric.STP(slow)
	row.ANTT = metric.ANTT(slow)
	row.Unfairness = metric.Unfairness(slow)
	for _, s := range slow {
		row.WorstSlowdown = math.Max(row.WorstSlowdown, s)
	}
	return row, nil
}
