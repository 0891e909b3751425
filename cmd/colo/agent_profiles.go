package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"colo/agent"
	"colo/agent/api"
	"colo/agent/profiler"
	"colo/agent/profiling"
	"colo/machine"
	"colo/predict"
	"colo/tenantprofile"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// agentPredictor loads --profiles (a `colo predict` data directory) for the agent's
// predicted-slowdown metric; "" gives none.
func agentPredictor(dir string) (*agent.Predictor, error) {
	if dir == "" {
		return nil, nil
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, badInputf("--profiles %s: not a directory (a colo predict data directory)", dir)
	}
	d, err := predict.LoadDir(os.DirFS(dir), ".", dir)
	if err != nil {
		return nil, badInput(fmt.Errorf("--profiles: %w", err))
	}
	return agent.NewPredictor(d, predict.MethodNearest), nil
}

// profileFlags are colo agent's online-profiling flags.
type profileFlags struct {
	enabled   bool
	classes   []string
	cpus      string
	segment   time.Duration
	repeats   int
	dials     []float64
	maxSpread float64
	threshold float64
	window    int
	node      bool
	retry     time.Duration
}

func addProfileFlags(fl *pflag.FlagSet, p *profileFlags) {
	fl.BoolVar(&p.enabled, "profile", false, "profile containers without a profile online (their colo.io/perf-metric next to the Bubble-Up SoI; profiles in --state-dir/profiles, GET /api/v1/profiles)")
	fl.StringSliceVar(&p.classes, "profile-classes", []string{"batch", "best-effort"}, "classes that may be profiled (priority only with --profile-node)")
	fl.StringVar(&p.cpus, "profile-cpus", "", "CPUs that run the bubble and the reporter, e.g. 2-3 (default: the last CPU of socket 0); keep them on the tenants' socket")
	fl.DurationVar(&p.segment, "profile-segment", 2*time.Second, "length of one baseline or pressured segment")
	fl.IntVar(&p.repeats, "profile-repeats", 2, "A/B rounds per dial")
	fl.Float64SliceVar(&p.dials, "profile-dials", nil, "SoI dials in MB (default: 1/4, 1/2, 1 and 2 × the LLC)")
	fl.Float64Var(&p.maxSpread, "profile-max-spread", 0.1, "refuse a profile whose repeats or baselines spread more than this (0.1 = 10 %)")
	fl.Float64Var(&p.threshold, "profile-error-pp", 10, "re-profile when the prediction error stays beyond this many pp …")
	fl.IntVar(&p.window, "profile-error-window", 30, "… for this many intervals")
	fl.DurationVar(&p.retry, "profile-retry", 5*time.Minute, "wait this long before profiling a refused or aborted tenant again")
	fl.BoolVar(&p.node, "profile-node", false, "this node is labelled for profiling: priority tenants may be profiled too (if in --profile-classes)")
}

// agentProfiler builds the online profiler (nil without --profile).
func agentProfiler(f agentFlags, m *machine.Profile, log *slog.Logger) (*profiler.Manager, error) {
	p := f.prof
	if !p.enabled {
		return nil, nil
	}
	dials := p.dials
	if len(dials) == 0 {
		llc := float64(m.LLC.SizeBytes) / 1e6
		dials = []float64{llc / 4, llc / 2, llc, 2 * llc}
	}
	if !slices.IsSorted(dials) || dials[0] <= 0 {
		return nil, badInputf("--profile-dials %v: ascending, each > 0", dials)
	}
	if p.repeats < 1 || p.segment <= 0 {
		return nil, badInputf("--profile-repeats %d ≥ 1 and --profile-segment %v > 0", p.repeats, p.segment)
	}
	var cpus []int
	if p.cpus != "" {
		var err error
		if cpus, err = machine.ParseCPUList(p.cpus); err != nil {
			return nil, badInputf("--profile-cpus %q: %v", p.cpus, err)
		}
	} else if m.CoresPerSocket > 0 {
		cpus = []int{m.CoresPerSocket - 1}
	}
	host, _ := os.Hostname()
	return profiler.New(profiler.Options{Store: tenantprofile.Store{Dir: filepath.Join(f.stateDir, "profiles")}, Machine: m, Node: host,
		Plan:    profiling.Plan{Dials: dials, Repeats: p.repeats, MaxSpread: p.maxSpread},
		Policy:  profiling.Policy{Classes: p.classes, NodeForPriority: p.node},
		Segment: p.segment, Interval: f.interval, Check: profiling.Check{Threshold: p.threshold, Window: p.window},
		CPUs: cpus, RetryAfter: p.retry, Log: log})
}

// agentHandler is the agent's HTTP API plus GET /api/v1/profiles when profiling.
func agentHandler(status func() api.Status, stale time.Duration, prof *profiler.Manager) http.Handler {
	h := api.Handler(status, stale)
	if prof == nil {
		return h
	}
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.HandleFunc("GET "+api.Version+"/profiles", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(prof.Profiles())
	})
	return mux
}

func agentProfilesCmd() *cobra.Command {
	var (
		stateDir string
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "profiles",
		Short: "List the profiles the agent measured online (--state-dir/profiles)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ps, err := (tenantprofile.Store{Dir: filepath.Join(stateDir, "profiles")}).All()
			if err != nil {
				return err
			}
			if ps == nil {
				ps = []tenantprofile.Profile{}
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(ps)
			}
			w := cmd.OutOrStdout()
			for _, p := range ps {
				fmt.Fprintf(w, "%s  %s  score %.2f MB  spread %.1f %%  %s  perf", p.Key, p.Image, p.Score, 100*p.Spread, p.At.Format(time.RFC3339))
				for i, d := range p.Dials {
					fmt.Fprintf(w, " %g:%.3f", d, p.Perf[i])
				}
				fmt.Fprintln(w)
			}
			return nil
		},
	}
	cmd.PersistentFlags().StringVar(&stateDir, "state-dir", "/var/lib/colo", "the agent's --state-dir")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the profiles as a JSON array")
	cmd.AddCommand(&cobra.Command{
		Use:   "export DIR",
		Short: "Write the profiles as a colo predict data directory (colo predict --data DIR, colo agent --profiles DIR)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st := tenantprofile.Store{Dir: filepath.Join(stateDir, "profiles")}
			ps, err := st.All()
			if err != nil {
				return err
			}
			rep, ok, err := st.Reporter()
			if err != nil {
				return err
			}
			if !ok || len(ps) == 0 {
				return badInputf("no profiles (or no reporter curve) under %s yet", st.Dir)
			}
			if err := tenantprofile.Export(args[0], rep, ps); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %d profiles to %s\n", len(ps), args[0])
			return nil
		},
	})
	return cmd
}
