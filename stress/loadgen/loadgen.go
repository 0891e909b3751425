// Package loadgen is `colo stress load`: an open-loop, constant-rate HTTP load generator.
// Request i is due at start + i/rate whatever happened to the earlier ones, and its latency
// is measured from that due time, not from when it was actually sent: a stalled server (or
// a stalled generator) therefore shows up in every request that should have been sent
// during the stall, which is the correction for coordinated omission (Tene, "How NOT to
// measure latency", 2013; wrk2's constant-throughput mode).
package loadgen

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"colo/metric"
)

// Config is one load run.
type Config struct {
	// URL is the target; "{key}" in it is replaced by a random key (colo stress serve:
	// http://HOST:8080/kv/{key}); without it a trailing "/kv/" gets the key appended.
	URL string
	// Rate is the request rate per second (> 0) and Duration how long requests are due.
	Rate     float64
	Duration time.Duration
	// PutFraction of the requests are PUTs (the rest GETs).
	PutFraction float64
	// Keys bounds the random keys (default 1<<20; the server reduces them modulo its size).
	Keys uint64
	// MaxInFlight bounds concurrent requests (default 256); a due request waits for a slot
	// and that wait counts in its latency.
	MaxInFlight int
	// Timeout of one request (default 10 s); a timed-out request is an error.
	Timeout time.Duration
	// Seed of the key and operation sequence (same seed, same requests).
	Seed uint64
}

// Result is a run's summary. Latencies are in milliseconds from each request's due time.
type Result struct {
	URL        string  `json:"url"`
	Rate       float64 `json:"rate"`
	DurationS  float64 `json:"duration_s"`
	Sent       int     `json:"sent"`
	OK         int     `json:"ok"`
	Errors     int     `json:"errors"`
	Late       int     `json:"late"` // sent more than 1 ms after their due time
	Achieved   float64 `json:"achieved_rate"`
	MeanMs     float64 `json:"mean_ms"`
	P50Ms      float64 `json:"p50_ms"`
	P95Ms      float64 `json:"p95_ms"`
	P99Ms      float64 `json:"p99_ms"`
	MaxMs      float64 `json:"max_ms"`
	FirstError string  `json:"first_error,omitempty"`
}

func (c *Config) defaults() error {
	if c.Rate <= 0 || math.IsInf(c.Rate, 0) || math.IsNaN(c.Rate) {
		return fmt.Errorf("loadgen: --rate %g must be > 0", c.Rate)
	}
	if c.Duration <= 0 {
		return fmt.Errorf("loadgen: --duration %v must be > 0", c.Duration)
	}
	if c.URL == "" {
		return fmt.Errorf("loadgen: --url is required")
	}
	if c.PutFraction < 0 || c.PutFraction > 1 {
		return fmt.Errorf("loadgen: --put-fraction %g must be in [0, 1]", c.PutFraction)
	}
	if c.Keys == 0 {
		c.Keys = 1 << 20
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = 256
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	return nil
}

// Due returns how many requests a run of cfg sends: one every 1/rate over the duration.
func Due(rate float64, d time.Duration) int {
	return int(math.Ceil(rate*d.Seconds() - 1e-9))
}

func target(url string, key uint64) string {
	k := strconv.FormatUint(key, 10)
	if strings.Contains(url, "{key}") {
		return strings.ReplaceAll(url, "{key}", k)
	}
	if strings.HasSuffix(url, "/kv/") {
		return url + k
	}
	return url
}

// Run sends cfg's requests (stopping early if ctx ends) and summarises them. now is the
// clock (time.Now).
func Run(ctx context.Context, cfg Config, client *http.Client, now func() time.Time) (Result, error) {
	if err := cfg.defaults(); err != nil {
		return Result{}, err
	}
	if client == nil {
		client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.MaxInFlight}}
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x636f6c6f))
	n := Due(cfg.Rate, cfg.Duration)
	lat := make([]float64, 0, n)
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		ok, errs int
		firstErr string
	)
	slots := make(chan struct{}, cfg.MaxInFlight)
	res := Result{URL: cfg.URL, Rate: cfg.Rate, DurationS: cfg.Duration.Seconds()}
	start := now()
	timer := time.NewTimer(0)
	<-timer.C
	defer timer.Stop()
	sent := 0
send:
	for i := range n {
		due := start.Add(time.Duration(float64(i) / cfg.Rate * float64(time.Second)))
		if d := due.Sub(now()); d > 0 {
			timer.Reset(d)
			select {
			case <-ctx.Done():
				break send
			case <-timer.C:
			}
		} else if ctx.Err() != nil {
			break send
		}
		select {
		case <-ctx.Done():
			break send
		case slots <- struct{}{}:
		}
		if now().Sub(due) > time.Millisecond {
			res.Late++
		}
		put := rng.Float64() < cfg.PutFraction
		url := target(cfg.URL, rng.Uint64N(cfg.Keys))
		body := strconv.FormatUint(uint64(i), 10)
		sent++
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			err := do(ctx, client, cfg.Timeout, put, url, body)
			d := now().Sub(due).Seconds() * 1000
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs++
				if firstErr == "" {
					firstErr = err.Error()
				}
				return
			}
			ok++
			lat = append(lat, d)
		}()
	}
	wg.Wait()
	elapsed := now().Sub(start).Seconds()
	res.Sent, res.OK, res.Errors, res.FirstError = sent, ok, errs, firstErr
	if elapsed > 0 {
		res.Achieved = float64(ok) / elapsed
	}
	if len(lat) > 0 {
		res.MeanMs = metric.Mean(lat)
		res.P50Ms = metric.Percentile(lat, 50)
		res.P95Ms = metric.Percentile(lat, 95)
		res.P99Ms = metric.Percentile(lat, 99)
		res.MaxMs = metric.Percentile(lat, 100)
	}
	return res, nil
}

func do(ctx context.Context, client *http.Client, timeout time.Duration, put bool, url, body string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	method := http.MethodGet
	var rd io.Reader
	if put {
		method, rd = http.MethodPut, strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %s", method, url, resp.Status)
	}
	return nil
}
