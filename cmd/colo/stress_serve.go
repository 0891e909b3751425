package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"colo/stress"
	"colo/stress/kvserve"
	"colo/stress/loadgen"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
)

// addServeLoad adds `colo stress serve` and `colo stress load` to stressCmd.
func addServeLoad(stressCmd *cobra.Command) {
	var (
		cfg    kvserve.Config
		listen string
	)
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Run a latency-critical HTTP key-value service (working set --mb, Prometheus latency histogram)",
		Long: `Serve GET /kv/KEY (a multi-get of --reads values starting at KEY, answering their
checksum), PUT /kv/KEY (replace one value) and GET /metrics, whose histogram
colo_serve_request_duration_seconds{op="get"|"put"} is every request's service time.
The working set (--mb of values) is written before the listener opens. Runs until
SIGINT/SIGTERM (exit 0). Its own performance metric for the colo agent:
colo.io/perf-metric=":8080/metrics histogram_quantile(0.99, colo_serve_request_duration_seconds{op=\"get\"})".`,
		Example: `  colo stress serve --listen :8080 --mb 64
  colo stress load --url http://127.0.0.1:8080/kv/{key} --rate 500 --duration 10s --json`,
		Args:        cobra.NoArgs,
		Annotations: map[string]string{"colo.signal-is-stop": "true"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext(cmd)
			defer cancel()
			s, err := kvserve.New(cfg)
			if err != nil {
				return badInput(err)
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return badInput(fmt.Errorf("--listen: %w", err))
			}
			slog.Info("serving", "addr", ln.Addr().String(), "keys", s.Keys(), "bytes", s.Bytes())
			return serveUntil(ctx, ln, s)
		},
	}
	f := serve.Flags()
	f.StringVar(&listen, "listen", ":8080", "address to listen on")
	f.Float64Var(&cfg.MB, "mb", 64, "working set in MB (10^6 bytes) of values")
	f.IntVar(&cfg.ValueBytes, "value-bytes", 1024, "bytes per value")
	f.IntVar(&cfg.Reads, "reads", 200, "values one GET reads (a multi-get)")
	stressCmd.AddCommand(serve)

	var (
		lcfg   loadgen.Config
		asJSON bool
	)
	load := &cobra.Command{
		Use:   "load",
		Short: "Open-loop constant-rate HTTP load with coordinated-omission-corrected p50/p95/p99",
		Long: `Send --rate requests per second for --duration to --url ("{key}" in it, or a
trailing /kv/, becomes a random key), each due at its slot whatever happened to the
earlier ones, and report latency percentiles measured from the due times (so a stall
counts in every request that should have been sent during it). Errors and requests sent
more than 1 ms late (the generator itself falling behind) are counted.`,
		Example: `  colo stress load --url http://127.0.0.1:8080/kv/{key} --rate 500 --duration 10s --json`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext(cmd)
			defer cancel()
			r, err := loadgen.Run(ctx, lcfg, nil, time.Now)
			if err != nil {
				return badInput(err)
			}
			return printLoad(cmd.OutOrStdout(), r, asJSON)
		},
	}
	f = load.Flags()
	f.StringVar(&lcfg.URL, "url", "", "target URL (\"{key}\" is replaced by a random key)")
	f.Float64Var(&lcfg.Rate, "rate", 100, "requests per second")
	f.DurationVar(&lcfg.Duration, "duration", 10*time.Second, "how long requests are due")
	f.Float64Var(&lcfg.PutFraction, "put-fraction", 0, "fraction of PUT requests")
	f.IntVar(&lcfg.MaxInFlight, "max-inflight", 256, "concurrent requests at most (waiting for a slot counts in the latency)")
	f.DurationVar(&lcfg.Timeout, "timeout", 10*time.Second, "per-request timeout (an error)")
	f.Uint64Var(&lcfg.Seed, "seed", 1, "seed of the key sequence")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	stressCmd.AddCommand(load)
}

// serveUntil serves h on ln until ctx ends, then shuts down (waiting up to 5 s for
// requests in flight).
func serveUntil(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// serveStressMetrics serves colo_stress_work_total{kind,unit} (the load's work so far) on
// addr until ctx ends: a running load's own performance metric (colo.io/perf-metric
// ":PORT/metrics rate(colo_stress_work_total)").
func serveStressMetrics(ctx context.Context, addr string, l *stress.Load) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name:        "colo_stress_work_total",
		Help:        "Work the load has done, in its unit.",
		ConstLabels: prometheus.Labels{"kind": l.Kind, "unit": l.Unit},
	}, l.Work))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return badInput(fmt.Errorf("--metrics: %w", err))
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	go func() {
		if err := serveUntil(ctx, ln, mux); err != nil {
			fmt.Fprintln(os.Stderr, "colo stress: metrics:", err)
		}
	}()
	return nil
}

func printLoad(w io.Writer, r loadgen.Result, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(r)
	}
	_, err := fmt.Fprintf(w, "load %s: %d sent (%d ok, %d errors, %d late) at %.1f/s; latency ms p50 %.3f p95 %.3f p99 %.3f max %.3f\n",
		r.URL, r.Sent, r.OK, r.Errors, r.Late, r.Achieved, r.P50Ms, r.P95Ms, r.P99Ms, r.MaxMs)
	if err == nil && r.FirstError != "" {
		_, err = fmt.Fprintf(w, "first error: %s\n", r.FirstError)
	}
	return err
}
