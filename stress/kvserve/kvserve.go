// Package kvserve is `colo stress serve`: a small latency-critical HTTP key-value service
// with a configurable working set, for the profiling and guard end-to-end tests. A read
// request is a multi-get of Reads values (so its latency follows how much of the working
// set stays in the last-level cache, as a memcached-style service's does); a write
// replaces one value. Every request's service time is observed in a Prometheus histogram,
// colo_serve_request_duration_seconds{op="get"|"put"}, served on /metrics.
package kvserve

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MetricName is the request-latency histogram's name (seconds, label op = get or put).
const MetricName = "colo_serve_request_duration_seconds"

// MB is the working-set unit, 10^6 bytes (as every colo stress dial).
const MB = 1_000_000

// Buckets are the histogram's upper bounds in seconds: 25 µs × 1.25^k up to about 3.6 s,
// fine enough (25 % per bucket, interpolated) to read a p99 slowdown of a few percent
// over many requests.
var Buckets = prometheus.ExponentialBuckets(25e-6, 1.25, 54)

// Config sizes the service.
type Config struct {
	// MB is the working set in MB (10^6 bytes): the values, all touched at start.
	MB float64
	// ValueBytes is the size of one value (default 1024).
	ValueBytes int
	// Reads is the number of values one get reads (default 200).
	Reads int
}

const stripes = 64

// Server holds the values and the latency histogram. It is safe for concurrent use.
type Server struct {
	cfg   Config
	n     int    // number of values
	data  []byte // n × ValueBytes
	locks [stripes]sync.RWMutex
	hist  *prometheus.HistogramVec
	reg   *prometheus.Registry
	mux   *http.ServeMux
}

// New validates cfg, allocates the values and writes every one of them (so the working
// set is resident before the first request).
func New(cfg Config) (*Server, error) {
	if cfg.ValueBytes == 0 {
		cfg.ValueBytes = 1024
	}
	if cfg.Reads == 0 {
		cfg.Reads = 200
	}
	if cfg.MB <= 0 || cfg.ValueBytes < 8 || cfg.Reads < 1 {
		return nil, fmt.Errorf("kvserve: --mb %g must be > 0, --value-bytes %d ≥ 8, --reads %d ≥ 1", cfg.MB, cfg.ValueBytes, cfg.Reads)
	}
	n := int(cfg.MB * MB / float64(cfg.ValueBytes))
	if n < 1 {
		return nil, fmt.Errorf("kvserve: --mb %g holds no value of %d bytes", cfg.MB, cfg.ValueBytes)
	}
	s := &Server{cfg: cfg, n: n, data: make([]byte, n*cfg.ValueBytes), reg: prometheus.NewRegistry()}
	for k := range n {
		s.fill(k, uint64(k))
	}
	s.hist = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    MetricName,
		Help:    "Service time of one request (get: a multi-get of --reads values; put: one value).",
		Buckets: Buckets,
	}, []string{"op"})
	s.hist.WithLabelValues("get") // exported from the start, before the first request
	s.hist.WithLabelValues("put")
	s.reg.MustRegister(s.hist, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "colo_serve_working_set_bytes", Help: "Bytes of values the service holds.",
	}, func() float64 { return float64(len(s.data)) }))
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /kv/{key}", s.get)
	s.mux.HandleFunc("PUT /kv/{key}", s.put)
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	return s, nil
}

// Keys returns the number of values.
func (s *Server) Keys() int { return s.n }

// Bytes returns the working set in bytes.
func (s *Server) Bytes() int64 { return int64(len(s.data)) }

// Registry returns the registry /metrics serves (tests gather from it).
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// ServeHTTP serves GET /kv/{key}, PUT /kv/{key} and GET /metrics.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func (s *Server) value(k int) []byte {
	return s.data[k*s.cfg.ValueBytes : (k+1)*s.cfg.ValueBytes]
}

// fill writes value k as little-endian words v, v+1, ….
func (s *Server) fill(k int, v uint64) {
	b := s.value(k)
	for i := 0; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], v+uint64(i/8))
	}
}

func (s *Server) key(r *http.Request) (int, error) {
	k, err := strconv.ParseUint(r.PathValue("key"), 10, 64)
	if err != nil {
		return 0, errors.New("key must be a non-negative integer")
	}
	return int(k % uint64(s.n)), nil
}

// next is the multi-get's key chain: a 64-bit LCG step (Knuth's MMIX constants) reduced
// to the key space, so one get touches Reads values scattered over the working set.
func next(x uint64) uint64 { return x*6364136223846793005 + 1442695040888963407 }

// get reads Reads values starting at the requested key and answers their checksum.
func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	k, err := s.key(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var sum uint64
	x := uint64(k)
	for i := range s.cfg.Reads {
		if i > 0 {
			x = next(x)
			k = int(x % uint64(s.n))
		}
		l := &s.locks[k%stripes]
		l.RLock()
		b := s.value(k)
		for j := 0; j+8 <= len(b); j += 64 { // one word per cache line
			sum += binary.LittleEndian.Uint64(b[j:])
		}
		l.RUnlock()
	}
	fmt.Fprintf(w, "%x\n", sum)
	s.hist.WithLabelValues("get").Observe(time.Since(start).Seconds())
}

// put replaces the key's value by words starting at the body's decimal number (0 if the
// body is empty).
func (s *Server) put(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	k, err := s.key(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var v uint64
	if len(body) > 0 {
		if v, err = strconv.ParseUint(string(body), 10, 64); err != nil {
			http.Error(w, "body must be a decimal number", http.StatusBadRequest)
			return
		}
	}
	l := &s.locks[k%stripes]
	l.Lock()
	s.fill(k, v)
	l.Unlock()
	w.WriteHeader(http.StatusNoContent)
	s.hist.WithLabelValues("put").Observe(time.Since(start).Seconds())
}
