package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // pure-Go SQLite: no cgo, the binary stays static

	"colo/internal/inputfile"
)

// BatchSize is how many buffered rows of one table trigger a write transaction.
const BatchSize = 8192

// CommitInterval is the longest buffered rows wait before a write transaction: a store
// opened for writing commits at least this often (and at each RunWriter.Flush), so a
// process killed with SIGKILL loses at most about this much of its run.
const CommitInterval = time.Second

// Store is an open run directory. Its methods are safe for concurrent use.
type Store struct {
	dir      string
	db       *sql.DB // nil when the database file is missing (incomplete run dir)
	mu       sync.Mutex
	manifest Manifest
	noManif  bool // run.json was missing when opened
	schema   int  // PRAGMA user_version of the database
	runs     map[int64]*RunWriter
	closed   bool
	stop     chan struct{} // closed by Close: ends the commit loop (nil: no loop)
	loopDone chan struct{}
	stmts    map[string]*sql.Stmt // prepared once per store (stmt), closed by Close
}

// prepare prepares the statements qs once per store: SQLite parses each statement text
// once, not at every write transaction. It must run outside a transaction (the store
// has one connection, which a transaction holds). Called with s.mu held.
func (s *Store) prepare(qs ...string) error {
	for _, q := range qs {
		if _, ok := s.stmts[q]; ok {
			continue
		}
		st, err := s.db.Prepare(q)
		if err != nil {
			return err
		}
		if s.stmts == nil {
			s.stmts = map[string]*sql.Stmt{}
		}
		s.stmts[q] = st
	}
	return nil
}

// stmt is the prepared statement q (prepare) for use in tx; the connection's prepared
// statement is reused, not parsed again.
func (s *Store) stmt(tx *sql.Tx, q string) (*sql.Stmt, error) {
	st, ok := s.stmts[q]
	if !ok {
		return nil, fmt.Errorf("store: statement not prepared: %s", q)
	}
	return tx.Stmt(st), nil
}

// Create makes a new run directory dir (created if absent; it must not already hold a
// run) with its manifest and database. The run is incomplete until Complete is called.
func Create(dir string, meta Meta) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create run directory: %w", err)
	}
	for _, f := range []string{ManifestFile, DatabaseFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return nil, fmt.Errorf("%s already holds a run (%s exists): choose a new --out directory", dir, f)
		}
	}
	if meta.Created.IsZero() {
		meta.Created = time.Now().UTC()
	}
	if meta.Kind == "" {
		meta.Kind = "run"
	}
	s := &Store{dir: dir, runs: map[int64]*RunWriter{},
		manifest: Manifest{Format: FormatVersion, Meta: meta, Database: DatabaseFile}}
	db, err := openDB(filepath.Join(dir, DatabaseFile))
	if err != nil {
		return nil, err
	}
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("create schema in %s: %w", dir, err)
	}
	if _, err := db.Exec(fmt.Sprintf("PRAGMA user_version=%d", schemaVersion)); err != nil {
		db.Close()
		return nil, err
	}
	s.db, s.schema = db, schemaVersion
	if err := s.writeManifest(); err != nil {
		db.Close()
		return nil, err
	}
	s.startCommitLoop(CommitInterval)
	return s, nil
}

// startCommitLoop commits buffered rows every interval until Close.
func (s *Store) startCommitLoop(interval time.Duration) {
	s.stop, s.loopDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.loopDone)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.mu.Lock()
				if !s.closed {
					// an error here comes back at the next write or Flush, which retry
					_ = s.flushLocked()
				}
				s.mu.Unlock()
			}
		}
	}()
}

// Open opens an existing run directory for reading (and for appending). It succeeds on an
// incomplete directory as long as run.json or colo.db exists; Missing says what is absent.
func Open(dir string) (*Store, error) {
	s := &Store{dir: dir, runs: map[int64]*RunWriter{}}
	mb, merr := inputfile.Read(filepath.Join(dir, ManifestFile), inputfile.Document)
	dbPath := filepath.Join(dir, DatabaseFile)
	_, dberr := os.Stat(dbPath)
	if errors.Is(merr, inputfile.ErrRefused) { // a device or a giant in place of run.json
		return nil, merr
	}
	if merr != nil && dberr != nil {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("%s is not a directory: give the run directory written by colo run (runs/<timestamp>/)", dir)
		}
		return nil, fmt.Errorf("%s is not a colo run directory: it has neither %s nor %s", dir, ManifestFile, DatabaseFile)
	}
	if merr == nil {
		if err := json.Unmarshal(mb, &s.manifest); err != nil {
			return nil, fmt.Errorf("%s: %v (the manifest is damaged; delete it to read the database alone)", filepath.Join(dir, ManifestFile), err)
		}
		if s.manifest.Format != FormatVersion {
			return nil, fmt.Errorf("%s: format %q, this colo reads %q: read it with the colo version that wrote it", filepath.Join(dir, ManifestFile), s.manifest.Format, FormatVersion)
		}
	} else {
		s.noManif = true
		s.manifest = Manifest{Format: FormatVersion, Database: DatabaseFile, Meta: Meta{Name: filepath.Base(dir)}}
	}
	if dberr == nil {
		db, err := openDB(dbPath)
		if err != nil {
			return nil, err
		}
		var v int
		if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
			db.Close()
			return nil, fmt.Errorf("%s: %w", dbPath, err)
		}
		if v < oldestReadSchema || v > schemaVersion {
			db.Close()
			return nil, fmt.Errorf("%s: schema version %d, this colo reads %d to %d: read it with the colo version that wrote it", dbPath, v, oldestReadSchema, schemaVersion)
		}
		s.db, s.schema = db, v
	}
	return s, nil
}

func openDB(path string) (*sql.DB, error) {
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(5000)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return db, nil
}

// Dir is the run directory.
func (s *Store) Dir() string { return s.dir }

// Manifest returns run.json as read or written.
func (s *Store) Manifest() Manifest {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.manifest
	return m
}

func (s *Store) writeManifest() error {
	b, err := json.MarshalIndent(s.manifest, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(s.dir, ManifestFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	return os.Rename(tmp, filepath.Join(s.dir, ManifestFile))
}

// BeginRun starts one scheduler's run in the directory and returns its writer.
func (s *Store) BeginRun(r Run) (*RunWriter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return nil, fmt.Errorf("%s is not a colo run directory (%s is missing): colo run, colo compare and colo partition --out write them", s.dir, DatabaseFile)
	}
	if r.Scheduler == "" {
		return nil, errors.New("BeginRun: Run.Scheduler is empty")
	}
	if r.Start.IsZero() {
		r.Start = s.manifest.Created
	}
	res, err := s.db.Exec("INSERT INTO runs(scheduler,trace,start_unix_ns,complete) VALUES(?,?,?,0)",
		r.Scheduler, r.Trace, r.Start.UnixNano())
	if err != nil {
		return nil, fmt.Errorf("begin run %s: %w", r.Scheduler, err)
	}
	r.ID, _ = res.LastInsertId()
	r.Complete = false
	s.manifest.Schedulers = append(s.manifest.Schedulers, r.Scheduler)
	if err := s.writeManifest(); err != nil {
		return nil, err
	}
	w := &RunWriter{s: s, run: r}
	s.runs[r.ID] = w
	return w, nil
}

// MarkInterrupted flushes every run writer and records in run.json why the run stopped
// early (e.g. "SIGINT"); the directory stays incomplete.
func (s *Store) MarkInterrupted(why string) error {
	return s.finish(func(m *Manifest) { m.Interrupted = why })
}

// Complete flushes every run writer and marks the directory complete in run.json.
func (s *Store) Complete() error { return s.finish(func(m *Manifest) { m.Complete = true }) }

// finish flushes every run writer and writes run.json with its finish time and mark's change.
func (s *Store) finish(mark func(*Manifest)) error {
	if err := s.Flush(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	mark(&s.manifest)
	s.manifest.Finished = time.Now().UTC()
	return s.writeManifest()
}

// Flush writes every buffered row of every run writer.
func (s *Store) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flushLocked()
}

func (s *Store) flushLocked() error {
	for _, id := range slices.Sorted(maps.Keys(s.runs)) {
		if err := s.runs[id].flushLocked(); err != nil {
			return err
		}
	}
	return nil
}

// Close flushes buffered rows and closes the database (a store that wrote folds the
// write-ahead log back into colo.db). It does not mark the run complete.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.stop != nil {
		close(s.stop)
		s.mu.Unlock()
		<-s.loopDone // the loop may be waiting for the lock
		s.mu.Lock()
	}
	if s.db == nil {
		return nil
	}
	err := s.flushLocked()
	for _, st := range s.stmts {
		st.Close()
	}
	s.stmts = nil
	// Only a store that wrote folds its log back: a TRUNCATE checkpoint waits for (and
	// blocks) the database's writer, and a reader (colo report, export, a test polling a
	// live run) must never stall the run that is still writing it.
	if len(s.runs) > 0 {
		if _, cerr := s.db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err == nil && cerr != nil {
			err = cerr
		}
	}
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	return err
}

// DatabaseBytes is the size of colo.db plus its write-ahead log, if any.
func (s *Store) DatabaseBytes() int64 {
	var n int64
	for _, f := range []string{DatabaseFile, DatabaseFile + "-wal"} {
		if st, err := os.Stat(filepath.Join(s.dir, f)); err == nil {
			n += st.Size()
		}
	}
	return n
}

// ---------------------------------------------------------------------------------------
// Writing

// RunWriter buffers the rows of one scheduler run and writes them in batches. Its methods
// are safe for concurrent use (they share the Store's lock).
type RunWriter struct {
	s       *Store
	run     Run
	obs     []Observer
	jobs    []Job
	samples []Sample
	allocs  []Allocation
	events  []Event
	probes  []ProbeSegment
	parts   []PartitionResult
}

// ID is the run_id of this run.
func (w *RunWriter) ID() int64 { return w.run.ID }

// Run returns the run's record.
func (w *RunWriter) Run() Run { return w.run }

// Observer sees every job, sample, allocation, event and summary a RunWriter accepts, as
// it is accepted (the InfluxDB sink streams a run this way). Its methods are called with
// the store's lock held and must not block.
type Observer interface {
	Job(Run, Job)
	Sample(Run, Sample)
	Allocation(Run, Allocation)
	Event(Run, Event)
	Summary(Run, Summary)
}

// Observe adds an observer of this run's rows.
func (w *RunWriter) Observe(o Observer) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	w.obs = append(w.obs, o)
}

// Job inserts or replaces a job record (call again whenever its state changes).
func (w *RunWriter) Job(j Job) error { return buffer(w, &w.jobs, Observer.Job, j) }

// Sample appends one collector sample.
func (w *RunWriter) Sample(x Sample) error { return buffer(w, &w.samples, Observer.Sample, x) }

// Samples appends a batch of samples (one tick of every running job, say).
func (w *RunWriter) Samples(xs []Sample) error { return buffer(w, &w.samples, Observer.Sample, xs...) }

// Allocation appends one allocation change.
func (w *RunWriter) Allocation(a Allocation) error {
	return buffer(w, &w.allocs, Observer.Allocation, a)
}

// Event appends one decision or marker.
func (w *RunWriter) Event(e Event) error { return buffer(w, &w.events, Observer.Event, e) }

// Probe appends one probe segment (observers do not see probes).
func (w *RunWriter) Probe(p ProbeSegment) error { return buffer(w, &w.probes, nil, p) }

// Partition records one partitioning result with its per-application rows (observers do
// not see them).
func (w *RunWriter) Partition(p PartitionResult) error { return buffer(w, &w.parts, nil, p) }

// buffer shows rows to every observer (by notify, unless nil) and appends them to the
// run's buffer of their table, writing the buffers once it holds BatchSize rows.
func buffer[T any](w *RunWriter, buf *[]T, notify func(Observer, Run, T), rows ...T) error {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if w.s.closed {
		return errors.New("store is closed")
	}
	if notify != nil {
		for _, o := range w.obs {
			for _, r := range rows {
				notify(o, w.run, r)
			}
		}
	}
	*buf = append(*buf, rows...)
	if len(*buf) >= BatchSize {
		return w.flushLocked()
	}
	return nil
}

// Flush writes the buffered rows of this run.
func (w *RunWriter) Flush() error {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	return w.flushLocked()
}

// Finish writes the run's summary, flushes, and marks the run complete.
func (w *RunWriter) Finish(sum Summary) error {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if err := w.flushLocked(); err != nil {
		return err
	}
	if sum.Name == "" {
		sum.Name = w.run.Scheduler
	}
	extra, err := json.Marshal(finiteMap(sum.Extra))
	if err != nil {
		return err
	}
	notes, err := json.Marshal(append([]string{}, sum.Notes...))
	if err != nil {
		return err
	}
	if w.s.schema < 2 && len(sum.Notes) > 0 {
		return fmt.Errorf("write summary: %s has schema version %d, which has no notes column: write new runs into a new directory", w.s.dir, w.s.schema)
	}
	tx, err := w.s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	q := `INSERT OR REPLACE INTO summaries VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`
	args := []any{w.run.ID, sum.Name, nf(sum.PriorityIPCE), nf(sum.BatchIPCE), nf(sum.GlobalIPCE),
		nf(sum.TimeOverTarget), nf(sum.TimeOverTargetP90), sum.JobsCompleted, sum.JobsRejected,
		nf(sum.QueueDelayMean), nf(sum.QueueDelayP90), nf(sum.VirtualSeconds), nf(sum.WallSeconds),
		string(extra), string(notes)}
	if w.s.schema < 2 {
		q, args = `INSERT OR REPLACE INTO summaries VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)`, args[:len(args)-1]
	}
	if _, err := tx.Exec(q, args...); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	if _, err := tx.Exec("UPDATE runs SET complete=1 WHERE run_id=?", w.run.ID); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	w.run.Complete = true
	for _, o := range w.obs {
		o.Summary(w.run, sum)
	}
	return nil
}

func finiteMap(m map[string]float64) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			out[k] = nil
		} else {
			out[k] = v
		}
	}
	return out
}

// nf maps NaN to NULL.
func nf(x float64) any {
	if math.IsNaN(x) {
		return nil
	}
	return x
}

// nd maps Unset to NULL.
func nd(d time.Duration) any {
	if d == Unset {
		return nil
	}
	return int64(d)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func joinInts(xs []int) string {
	var sb strings.Builder
	for i, x := range xs {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.Itoa(x))
	}
	return sb.String()
}

func splitInts(s string) ([]int, error) {
	if s == "" {
		return []int{}, nil
	}
	parts := strings.Split(s, ",")
	out := make([]int, len(parts))
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil {
			return nil, fmt.Errorf("members %q: %w", s, err)
		}
		out[i] = v
	}
	return out, nil
}

// sampleRowsPerStmt is how many samples one multi-row INSERT carries (17 columns each,
// well under SQLite's 32766 parameter limit).
const sampleRowsPerStmt = 64

// The write statements of flushLocked.
const (
	qJob        = `INSERT OR REPLACE INTO jobs VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`
	qAllocation = `INSERT INTO allocations VALUES(?,?,?,?,?,?,?,?)`
	qEvent      = `INSERT INTO events VALUES(?,?,?,?,?)`
	qProbe      = `INSERT INTO probes VALUES(?,?,?,?,?,?,?,?,?,?,?,?)`
)

var fullSampleInsert = sampleInsert(sampleRowsPerStmt)

// sampleInsert is the INSERT of n sample rows.
func sampleInsert(n int) string {
	const ncol = 17
	var sb strings.Builder
	sb.WriteString("INSERT INTO samples VALUES")
	row := "(" + strings.TrimSuffix(strings.Repeat("?,", ncol), ",") + ")"
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(row)
	}
	return sb.String()
}

func (w *RunWriter) flushLocked() error {
	if len(w.jobs)+len(w.samples)+len(w.allocs)+len(w.events)+len(w.probes)+len(w.parts) == 0 {
		return nil
	}
	qs := []string{qJob, qAllocation, qEvent, qProbe}
	if len(w.samples) >= sampleRowsPerStmt {
		qs = append(qs, fullSampleInsert)
	}
	if n := len(w.samples) % sampleRowsPerStmt; n > 0 {
		qs = append(qs, sampleInsert(n))
	}
	if err := w.s.prepare(qs...); err != nil {
		return fmt.Errorf("write run %d: %w", w.run.ID, err)
	}
	tx, err := w.s.db.Begin()
	if err != nil {
		return fmt.Errorf("write run %d: %w", w.run.ID, err)
	}
	defer tx.Rollback()
	id := w.run.ID
	if err := insertEach(w.s, tx, qJob, w.jobs,
		func(j Job) string { return fmt.Sprintf("job %d", j.ID) },
		func(j Job) []any {
			return []any{id, j.ID, j.Name, j.Kind, j.Model, b2i(j.Priority), nf(j.IPCETarget),
				j.Cores, j.CoreList, j.Socket, int64(j.Arrival), nd(j.Start), nd(j.Stop), j.State, j.Reason}
		}); err != nil {
		return err
	}
	if len(w.samples) > 0 {
		if err := insertSamples(w.s, tx, id, w.samples); err != nil {
			return err
		}
	}
	if err := insertEach(w.s, tx, qAllocation, w.allocs,
		func(Allocation) string { return "allocation" },
		func(a Allocation) []any {
			return []any{id, int64(a.T), a.Socket, a.CLOS, int64(a.Mask), nf(a.MBA), joinInts(a.Members), a.Source}
		}); err != nil {
		return err
	}
	if err := insertEach(w.s, tx, qEvent, w.events,
		func(Event) string { return "event" },
		func(e Event) []any { return []any{id, int64(e.T), e.Kind, e.Job, e.Text} }); err != nil {
		return err
	}
	if err := insertEach(w.s, tx, qProbe, w.probes,
		func(ProbeSegment) string { return "probe segment" },
		func(p ProbeSegment) []any {
			return []any{id, p.Job, int64(p.Start), int64(p.End), p.Kind, p.Socket, p.Ways, int64(p.Mask),
				nf(p.MBA), nf(p.IPC), nf(p.IPCE), p.Result}
		}); err != nil {
		return err
	}
	for _, p := range w.parts {
		if _, err := tx.Exec(`INSERT OR REPLACE INTO partitions VALUES(?,?,?,?,?,?,?)`, id, p.Workload, p.Policy,
			nf(p.STP), nf(p.ANTT), nf(p.Unfairness), nf(p.Jain)); err != nil {
			return fmt.Errorf("write partition result %s/%s: %w", p.Workload, p.Policy, err)
		}
		if _, err := tx.Exec(`DELETE FROM partition_apps WHERE run_id=? AND workload=? AND policy=?`, id, p.Workload, p.Policy); err != nil {
			return err
		}
		for _, a := range p.Apps {
			if _, err := tx.Exec(`INSERT INTO partition_apps VALUES(?,?,?,?,?,?,?,?,?,?)`, id, p.Workload, p.Policy,
				a.App, a.Cluster, a.Ways, int64(a.Mask), nf(a.IPCAlone), nf(a.IPC), nf(a.Slowdown)); err != nil {
				return err
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("write run %d: %w", id, err)
	}
	w.jobs, w.samples, w.allocs, w.events, w.probes, w.parts = w.jobs[:0], w.samples[:0], w.allocs[:0], w.events[:0], w.probes[:0], w.parts[:0]
	return nil
}

// insertEach writes rows with the prepared statement q: args are a row's column values,
// what names the row in an error.
func insertEach[T any](s *Store, tx *sql.Tx, q string, rows []T, what func(T) string, args func(T) []any) error {
	if len(rows) == 0 {
		return nil
	}
	st, err := s.stmt(tx, q)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if _, err := st.Exec(args(r)...); err != nil {
			return fmt.Errorf("write %s: %w", what(r), err)
		}
	}
	return nil
}

func insertSamples(s *Store, tx *sql.Tx, id int64, xs []Sample) error {
	const ncol = 17
	args := make([]any, 0, ncol*sampleRowsPerStmt)
	for len(xs) > 0 {
		n := min(len(xs), sampleRowsPerStmt)
		q := fullSampleInsert
		if n < sampleRowsPerStmt {
			q = sampleInsert(n)
		}
		st, err := s.stmt(tx, q)
		if err != nil {
			return err
		}
		args = args[:0]
		for _, x := range xs[:n] {
			args = append(args, id, x.Job, int64(x.T), int64(x.Interval), x.Socket,
				nf(x.Instructions), nf(x.Cycles), nf(x.StallsTotal), nf(x.StallsL3Miss),
				nf(x.LLCRefs), nf(x.LLCMisses), nf(x.OccupancyBytes), nf(x.MemBytesLocal),
				nf(x.MemBytesTotal), nf(x.IPC), nf(x.IPCE), nf(x.Stalled))
		}
		if _, err := st.Exec(args...); err != nil {
			return fmt.Errorf("write samples: %w", err)
		}
		xs = xs[n:]
	}
	return nil
}
