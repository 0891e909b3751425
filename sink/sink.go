// Package sink streams a run's samples, allocations, decisions and summaries to InfluxDB
// as line protocol over HTTP, through either the 1.x /write or the 2.x /api/v2/write
// endpoint (as the thesis's data.db block, seed000.md §1.2).
//
// The caller never waits for the network: points are encoded and appended to a bounded
// in-memory buffer that a background goroutine sends in batches, retrying failures with
// exponential backoff. Points that cannot be delivered (buffer full, database absent or
// refusing, retries exhausted, Close deadline) are appended to a spool file in the run
// directory and counted; Close reports how many.
package sink

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"colo/store"
)

// SpoolFile is the name of the undelivered-points file inside a run directory.
const SpoolFile = "influx-undelivered.lp"

// Config says where and how to write. Host, Database and the credentials come from the
// benchmark YAML's data.db block (host, name, user, password/token), usually through
// ${INFLUXDB_*} environment variables.
type Config struct {
	Host     string // e.g. http://127.0.0.1:8086 (http:// is assumed without a scheme)
	API      int    // 1 (/write) or 2 (/api/v2/write); 0 = 2 when Org is set, else 1
	Database string // 1.x database or 2.x bucket
	Org      string // 2.x organisation
	User     string // 1.x user (u=)
	Password string // 1.x password (p=); 2.x token when Token is empty
	Token    string // 2.x API token (Authorization: Token …)

	BatchSize     int           // lines per request (default 5000)
	BufferLines   int           // bounded buffer (default 200000 lines)
	FlushInterval time.Duration // send a partial batch after this long (default 1 s)
	Timeout       time.Duration // per request (default 10 s)
	MaxRetries    int           // per batch after the first attempt (default 4)
	Backoff       time.Duration // first retry delay, doubled each retry (default 200 ms)
	MaxBackoff    time.Duration // default 5 s
	SpoolPath     string        // undelivered lines go here (default: none, only counted)
	Block         bool          // wait for buffer space instead of spooling (replaying a finished run; never during a run)
	Client        *http.Client  // default: a client with Timeout
}

// ConfigFromEnv reads INFLUXDB_HOST, INFLUXDB_BUCKET (or INFLUXDB_DATABASE),
// INFLUXDB_ORG, INFLUXDB_USER, INFLUXDB_PASSWORD and INFLUXDB_TOKEN. ok is false when no
// host is set (the sink is optional).
func ConfigFromEnv() (c Config, ok bool) {
	c.Host = os.Getenv("INFLUXDB_HOST")
	c.Database = os.Getenv("INFLUXDB_BUCKET")
	if c.Database == "" {
		c.Database = os.Getenv("INFLUXDB_DATABASE")
	}
	c.Org, c.User = os.Getenv("INFLUXDB_ORG"), os.Getenv("INFLUXDB_USER")
	c.Password, c.Token = os.Getenv("INFLUXDB_PASSWORD"), os.Getenv("INFLUXDB_TOKEN")
	return c, c.Host != ""
}

func (c *Config) defaults() error {
	if c.Host == "" {
		return errors.New("influx sink: no host (set data.db.host or INFLUXDB_HOST)")
	}
	if !strings.Contains(c.Host, "://") {
		c.Host = "http://" + c.Host
	}
	if _, err := url.Parse(c.Host); err != nil {
		return fmt.Errorf("influx sink: host %q: %w", c.Host, err)
	}
	if c.Database == "" {
		return errors.New("influx sink: no database/bucket (set data.db.name or INFLUXDB_BUCKET)")
	}
	if c.API == 0 {
		c.API = 1
		if c.Org != "" {
			c.API = 2
		}
	}
	if c.API != 1 && c.API != 2 {
		return fmt.Errorf("influx sink: API %d: use 1 (/write) or 2 (/api/v2/write)", c.API)
	}
	if c.API == 2 && c.Org == "" {
		return errors.New("influx sink: the 2.x API needs an organisation (INFLUXDB_ORG)")
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 5000
	}
	if c.BufferLines <= 0 {
		c.BufferLines = 200000
	}
	if c.FlushInterval <= 0 {
		c.FlushInterval = time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.MaxRetries < 0 {
		c.MaxRetries = 0
	} else if c.MaxRetries == 0 {
		c.MaxRetries = 4
	}
	if c.Backoff <= 0 {
		c.Backoff = 200 * time.Millisecond
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 5 * time.Second
	}
	if c.Client == nil {
		c.Client = &http.Client{Timeout: c.Timeout}
	}
	return nil
}

// Stats tells what happened to the points given to the sink.
type Stats struct {
	Queued      int64  // lines accepted
	Delivered   int64  // lines the database acknowledged
	Undelivered int64  // lines not delivered (spooled when SpoolPath is set)
	Requests    int64  // HTTP requests made
	Retries     int64  // of which retries
	LastError   string // the last delivery error, if any
	SpoolPath   string // where undelivered lines are, if any were
}

// Sink is a running InfluxDB writer. Its methods are safe for concurrent use.
type Sink struct {
	cfg      Config
	endpoint string
	mu       sync.Mutex
	cond     *sync.Cond // the sender waits for lines
	space    *sync.Cond // Block: producers wait for buffer space
	buf      []string
	closing  bool
	deadline context.Context
	stats    Stats
	spool    *bufio.Writer
	spoolF   *os.File
	spoolErr error
	tick     bool // FlushInterval passed: send a partial batch
	failing  bool // the last batch exhausted its retries: try new batches once until one succeeds
	done     chan struct{}
}

// New validates cfg and starts the background sender.
func New(cfg Config) (*Sink, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	s := &Sink{cfg: cfg, done: make(chan struct{}), deadline: context.Background()}
	s.cond = sync.NewCond(&s.mu)
	s.space = sync.NewCond(&s.mu)
	q := url.Values{}
	if cfg.API == 1 {
		q.Set("db", cfg.Database)
		q.Set("precision", "ns")
		if cfg.User != "" {
			q.Set("u", cfg.User)
			q.Set("p", cfg.Password)
		}
		s.endpoint = strings.TrimRight(cfg.Host, "/") + "/write?" + q.Encode()
	} else {
		q.Set("org", cfg.Org)
		q.Set("bucket", cfg.Database)
		q.Set("precision", "ns")
		s.endpoint = strings.TrimRight(cfg.Host, "/") + "/api/v2/write?" + q.Encode()
	}
	go s.loop()
	go s.ticker()
	return s, nil
}

// Sample queues one sample of job j. It never blocks on the network.
func (s *Sink) Sample(src Source, j store.Job, x store.Sample) { s.put(SampleLine(src, j, x)) }

// Allocation queues one allocation change.
func (s *Sink) Allocation(src Source, a store.Allocation) { s.put(AllocationLine(src, a)) }

// Event queues one decision or marker.
func (s *Sink) Event(src Source, e store.Event) { s.put(EventLine(src, e)) }

// Summary queues a run's summary, stamped at time at.
func (s *Sink) Summary(src Source, sum store.Summary, at time.Time) { s.put(SummaryLine(src, sum, at)) }

// Line queues one raw line-protocol line (for replaying a spool file).
func (s *Sink) Line(l string) { s.put(l) }

func (s *Sink) put(l string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Queued++
	for s.cfg.Block && len(s.buf) >= s.cfg.BufferLines && !s.closing {
		s.space.Wait()
	}
	if s.closing || len(s.buf) >= s.cfg.BufferLines {
		s.undeliveredLocked([]string{l}, "buffer full: the database is slower than the run")
		return
	}
	s.buf = append(s.buf, l)
	if len(s.buf) >= s.cfg.BatchSize {
		s.cond.Signal()
	}
}

// undeliveredLocked counts lines as undelivered and appends them to the spool file.
func (s *Sink) undeliveredLocked(lines []string, why string) {
	s.stats.Undelivered += int64(len(lines))
	if why != "" && s.stats.LastError == "" {
		s.stats.LastError = why
	}
	if s.cfg.SpoolPath == "" || s.spoolErr != nil {
		return
	}
	if s.spool == nil {
		f, err := os.OpenFile(s.cfg.SpoolPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			s.spoolErr = err
			return
		}
		s.spoolF, s.spool = f, bufio.NewWriterSize(f, 64<<10)
		s.stats.SpoolPath = s.cfg.SpoolPath
	}
	for _, l := range lines {
		s.spool.WriteString(l)
		s.spool.WriteByte('\n')
	}
}

func (s *Sink) ticker() {
	t := time.NewTicker(s.cfg.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.mu.Lock()
			s.tick = true
			s.cond.Signal()
			s.mu.Unlock()
		case <-s.done:
			return
		}
	}
}

// loop sends batches until Close, then drains what is left (bounded by Close's context).
func (s *Sink) loop() {
	defer close(s.done)
	for {
		s.mu.Lock()
		// Wait for a full batch, or a partial one once FlushInterval has passed, or Close.
		for len(s.buf) < s.cfg.BatchSize && !s.closing && !(s.tick && len(s.buf) > 0) {
			s.tick = false
			s.cond.Wait()
		}
		s.tick = false
		if len(s.buf) == 0 && s.closing {
			s.mu.Unlock()
			return
		}
		n := min(len(s.buf), s.cfg.BatchSize)
		batch := make([]string, n)
		copy(batch, s.buf[:n])
		s.buf = append(s.buf[:0], s.buf[n:]...)
		s.space.Broadcast()
		ctx := s.deadline
		s.mu.Unlock()
		err := s.send(ctx, batch)
		s.mu.Lock()
		if err != nil {
			s.stats.LastError = err.Error()
			s.undeliveredLocked(batch, "")
			s.failing = true
		} else {
			s.stats.Delivered += int64(len(batch))
			s.failing = false
		}
		s.mu.Unlock()
	}
}

// permanent marks an error that retrying cannot fix (bad request, auth, no database).
type permanent struct{ error }

func (s *Sink) send(ctx context.Context, batch []string) error {
	var body bytes.Buffer
	for _, l := range batch {
		body.WriteString(l)
		body.WriteByte('\n')
	}
	retries := s.cfg.MaxRetries
	s.mu.Lock()
	if s.failing {
		retries = 0 // the database was down for the last batch: one try, then spool
	}
	s.mu.Unlock()
	delay := s.cfg.Backoff
	var err error
	for attempt := 0; attempt <= retries; attempt++ {
		if attempt > 0 {
			s.mu.Lock()
			s.stats.Retries++
			s.mu.Unlock()
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				return fmt.Errorf("%v (gave up: %w)", err, ctx.Err())
			}
			delay = min(2*delay, s.cfg.MaxBackoff)
		}
		var wait time.Duration
		wait, err = s.post(ctx, body.Bytes())
		if err == nil {
			return nil
		}
		var p permanent
		if errors.As(err, &p) {
			return err
		}
		if wait > delay {
			delay = min(wait, s.cfg.MaxBackoff)
		}
		if ctx.Err() != nil {
			return err
		}
	}
	return err
}

// post makes one request. It returns the server's Retry-After, if any.
func (s *Sink) post(ctx context.Context, body []byte) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, permanent{err}
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	if s.cfg.API == 2 {
		tok := s.cfg.Token
		if tok == "" {
			tok = s.cfg.Password
		}
		if tok != "" {
			req.Header.Set("Authorization", "Token "+tok)
		}
		req.Header.Set("Accept", "application/json")
	}
	s.mu.Lock()
	s.stats.Requests++
	s.mu.Unlock()
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("influx write to %s: %w", s.cfg.Host, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusOK {
		return 0, nil
	}
	var wait time.Duration
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		if sec, err := strconv.Atoi(ra); err == nil {
			wait = time.Duration(sec) * time.Second
		}
	}
	err = fmt.Errorf("influx write to %s: %s: %s", s.cfg.Host, resp.Status, strings.TrimSpace(string(msg)))
	switch {
	case resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode >= 500:
		return wait, err
	default: // 400 bad line protocol, 401/403 auth, 404 no database/bucket, 413 too large
		return 0, permanent{err}
	}
}

// Stats returns the counts so far.
func (s *Sink) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Close sends what is buffered until ctx ends, spools whatever is left, and returns the
// final counts. Every queued line ends up either delivered or undelivered.
func (s *Sink) Close(ctx context.Context) (Stats, error) {
	s.mu.Lock()
	s.closing = true
	s.deadline = ctx
	s.cond.Broadcast()
	s.space.Broadcast()
	s.mu.Unlock()
	select {
	case <-s.done:
	case <-ctx.Done():
		// The sender is stuck in a request or backoff bounded by ctx: it returns soon.
		<-s.done
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.buf) > 0 {
		s.undeliveredLocked(s.buf, "closed before delivery")
		s.buf = nil
	}
	var err error
	if s.spool != nil {
		err = s.spool.Flush()
		if cerr := s.spoolF.Close(); err == nil {
			err = cerr
		}
		s.spool = nil
	}
	if s.spoolErr != nil {
		err = fmt.Errorf("influx sink: cannot keep undelivered points in %s: %w", s.cfg.SpoolPath, s.spoolErr)
	}
	return s.stats, err
}
