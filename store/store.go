package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // pure-Go SQLite: no cgo, the binary stays static
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
	mb, merr := os.ReadFile(filepath.Join(dir, ManifestFile))
	dbPath := filepath.Join(dir, DatabaseFile)
	_, dberr := os.Stat(dbPath)
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
	if err := s.Flush(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.manifest.Interrupted = why
	s.manifest.Finished = time.Now().UTC()
	return s.writeManifest()
}

// Complete flushes every run writer and marks the directory complete in run.json.
func (s *Store) Complete() error {
	if err := s.Flush(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.manifest.Complete = true
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
	ids := make([]int64, 0, len(s.runs))
	for id := range s.runs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		if err := s.runs[id].flushLocked(); err != nil {
			return err
		}
	}
	return nil
}

// Close flushes buffered rows and closes the database (folding the write-ahead log back
// into colo.db). It does not mark the run complete.
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
	if _, cerr := s.db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err == nil && cerr != nil {
		err = cerr
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
func (w *RunWriter) Job(j Job) error {
	return w.add(func() int {
		for _, o := range w.obs {
			o.Job(w.run, j)
		}
		w.jobs = append(w.jobs, j)
		return len(w.jobs)
	})
}

// Sample appends one collector sample.
func (w *RunWriter) Sample(x Sample) error {
	return w.add(func() int {
		for _, o := range w.obs {
			o.Sample(w.run, x)
		}
		w.samples = append(w.samples, x)
		return len(w.samples)
	})
}

// Samples appends a batch of samples (one tick of every running job, say).
func (w *RunWriter) Samples(xs []Sample) error {
	return w.add(func() int {
		for _, o := range w.obs {
			for _, x := range xs {
				o.Sample(w.run, x)
			}
		}
		w.samples = append(w.samples, xs...)
		return len(w.samples)
	})
}

// Allocation appends one allocation change.
func (w *RunWriter) Allocation(a Allocation) error {
	return w.add(func() int {
		for _, o := range w.obs {
			o.Allocation(w.run, a)
		}
		w.allocs = append(w.allocs, a)
		return len(w.allocs)
	})
}

// Event appends one decision or marker.
func (w *RunWriter) Event(e Event) error {
	return w.add(func() int {
		for _, o := range w.obs {
			o.Event(w.run, e)
		}
		w.events = append(w.events, e)
		return len(w.events)
	})
}

// Probe appends one probe segment.
func (w *RunWriter) Probe(p ProbeSegment) error {
	return w.add(func() int { w.probes = append(w.probes, p); return len(w.probes) })
}

// Partition records one partitioning result with its per-application rows.
func (w *RunWriter) Partition(p PartitionResult) error {
	return w.add(func() int { w.parts = append(w.parts, p); return len(w.parts) })
}

func (w *RunWriter) add(f func() int) error {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if w.s.closed {
		return errors.New("store is closed")
	}
	if f() >= BatchSize {
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

func (w *RunWriter) flushLocked() error {
	if len(w.jobs)+len(w.samples)+len(w.allocs)+len(w.events)+len(w.probes)+len(w.parts) == 0 {
		return nil
	}
	tx, err := w.s.db.Begin()
	if err != nil {
		return fmt.Errorf("write run %d: %w", w.run.ID, err)
	}
	defer tx.Rollback()
	id := w.run.ID
	if len(w.jobs) > 0 {
		st, err := tx.Prepare(`INSERT OR REPLACE INTO jobs VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`)
		if err != nil {
			return err
		}
		for _, j := range w.jobs {
			if _, err := st.Exec(id, j.ID, j.Name, j.Kind, j.Model, b2i(j.Priority), nf(j.IPCETarget),
				j.Cores, j.CoreList, j.Socket, int64(j.Arrival), nd(j.Start), nd(j.Stop), j.State, j.Reason); err != nil {
				return fmt.Errorf("write job %d: %w", j.ID, err)
			}
		}
		st.Close()
	}
	if len(w.samples) > 0 {
		if err := insertSamples(tx, id, w.samples); err != nil {
			return err
		}
	}
	if len(w.allocs) > 0 {
		st, err := tx.Prepare(`INSERT INTO allocations VALUES(?,?,?,?,?,?,?,?)`)
		if err != nil {
			return err
		}
		for _, a := range w.allocs {
			if _, err := st.Exec(id, int64(a.T), a.Socket, a.CLOS, int64(a.Mask), nf(a.MBA), joinInts(a.Members), a.Source); err != nil {
				return fmt.Errorf("write allocation: %w", err)
			}
		}
		st.Close()
	}
	if len(w.events) > 0 {
		st, err := tx.Prepare(`INSERT INTO events VALUES(?,?,?,?,?)`)
		if err != nil {
			return err
		}
		for _, e := range w.events {
			if _, err := st.Exec(id, int64(e.T), e.Kind, e.Job, e.Text); err != nil {
				return fmt.Errorf("write event: %w", err)
			}
		}
		st.Close()
	}
	if len(w.probes) > 0 {
		st, err := tx.Prepare(`INSERT INTO probes VALUES(?,?,?,?,?,?,?,?,?,?,?,?)`)
		if err != nil {
			return err
		}
		for _, p := range w.probes {
			if _, err := st.Exec(id, p.Job, int64(p.Start), int64(p.End), p.Kind, p.Socket, p.Ways, int64(p.Mask),
				nf(p.MBA), nf(p.IPC), nf(p.IPCE), p.Result); err != nil {
				return fmt.Errorf("write probe segment: %w", err)
			}
		}
		st.Close()
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

func insertSamples(tx *sql.Tx, id int64, xs []Sample) error {
	const ncol = 17
	stmtFor := func(n int) (*sql.Stmt, error) {
		var sb strings.Builder
		sb.WriteString("INSERT INTO samples VALUES")
		row := "(" + strings.TrimSuffix(strings.Repeat("?,", ncol), ",") + ")"
		for i := 0; i < n; i++ {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(row)
		}
		return tx.Prepare(sb.String())
	}
	full, err := stmtFor(sampleRowsPerStmt)
	if err != nil {
		return err
	}
	defer full.Close()
	args := make([]any, 0, ncol*sampleRowsPerStmt)
	for len(xs) > 0 {
		n := min(len(xs), sampleRowsPerStmt)
		st := full
		if n < sampleRowsPerStmt {
			if st, err = stmtFor(n); err != nil {
				return err
			}
			defer st.Close()
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

// ---------------------------------------------------------------------------------------
// Reading

// Runs lists the scheduler runs in the directory, in creation order.
func (s *Store) Runs() ([]Run, error) {
	if s.db == nil {
		return nil, nil
	}
	rows, err := s.db.Query("SELECT run_id, scheduler, trace, start_unix_ns, complete FROM runs ORDER BY run_id")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		var r Run
		var ns int64
		var c int
		if err := rows.Scan(&r.ID, &r.Scheduler, &r.Trace, &ns, &c); err != nil {
			return nil, err
		}
		r.Start = time.Unix(0, ns).UTC()
		r.Complete = c != 0
		out = append(out, r)
	}
	return out, rows.Err()
}

func fv(n sql.NullFloat64) float64 {
	if !n.Valid {
		return math.NaN()
	}
	return n.Float64
}

func dv(n sql.NullInt64) time.Duration {
	if !n.Valid {
		return Unset
	}
	return time.Duration(n.Int64)
}

// Jobs returns the jobs of run id ordered by job_id.
func (s *Store) Jobs(id int64) ([]Job, error) {
	if s.db == nil {
		return nil, nil
	}
	rows, err := s.db.Query(`SELECT job_id,name,kind,model,priority,ipce_target,cores,core_list,socket,
		arrival_ns,start_ns,stop_ns,state,reason FROM jobs WHERE run_id=? ORDER BY job_id`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Job
	for rows.Next() {
		var j Job
		var prio int
		var tgt sql.NullFloat64
		var arr int64
		var st, sp sql.NullInt64
		if err := rows.Scan(&j.ID, &j.Name, &j.Kind, &j.Model, &prio, &tgt, &j.Cores, &j.CoreList, &j.Socket,
			&arr, &st, &sp, &j.State, &j.Reason); err != nil {
			return nil, err
		}
		j.Priority, j.IPCETarget, j.Arrival, j.Start, j.Stop = prio != 0, fv(tgt), time.Duration(arr), dv(st), dv(sp)
		out = append(out, j)
	}
	return out, rows.Err()
}

// EachSample calls fn for every sample of run id in the order written.
func (s *Store) EachSample(id int64, fn func(Sample) error) error {
	if s.db == nil {
		return nil
	}
	rows, err := s.db.Query(`SELECT job_id,t_ns,interval_ns,socket,instructions,cycles,stalls_total,stalls_l3_miss,
		llc_refs,llc_misses,llc_occupancy_bytes,mem_bytes_local,mem_bytes_total,ipc,ipce,stalled
		FROM samples WHERE run_id=? ORDER BY rowid`, id)
	if err != nil {
		return err
	}
	defer rows.Close()
	var v [12]sql.NullFloat64
	for rows.Next() {
		var x Sample
		var t, iv int64
		if err := rows.Scan(&x.Job, &t, &iv, &x.Socket, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7],
			&v[8], &v[9], &v[10], &v[11]); err != nil {
			return err
		}
		x.T, x.Interval = time.Duration(t), time.Duration(iv)
		x.Instructions, x.Cycles, x.StallsTotal, x.StallsL3Miss = fv(v[0]), fv(v[1]), fv(v[2]), fv(v[3])
		x.LLCRefs, x.LLCMisses, x.OccupancyBytes, x.MemBytesLocal = fv(v[4]), fv(v[5]), fv(v[6]), fv(v[7])
		x.MemBytesTotal, x.IPC, x.IPCE, x.Stalled = fv(v[8]), fv(v[9]), fv(v[10]), fv(v[11])
		if err := fn(x); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Samples returns every sample of run id in the order written.
func (s *Store) Samples(id int64) ([]Sample, error) {
	var out []Sample
	err := s.EachSample(id, func(x Sample) error { out = append(out, x); return nil })
	return out, err
}

// SampleCount is the number of samples of run id.
func (s *Store) SampleCount(id int64) (int64, error) {
	if s.db == nil {
		return 0, nil
	}
	var n int64
	err := s.db.QueryRow("SELECT count(*) FROM samples WHERE run_id=?", id).Scan(&n)
	return n, err
}

// Allocations returns the allocation changes of run id in the order written.
func (s *Store) Allocations(id int64) ([]Allocation, error) {
	if s.db == nil {
		return nil, nil
	}
	rows, err := s.db.Query(`SELECT t_ns,socket,clos,mask,mba,members,source FROM allocations WHERE run_id=? ORDER BY rowid`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Allocation
	for rows.Next() {
		var a Allocation
		var t, mask int64
		var mba sql.NullFloat64
		var mem string
		if err := rows.Scan(&t, &a.Socket, &a.CLOS, &mask, &mba, &mem, &a.Source); err != nil {
			return nil, err
		}
		a.T, a.Mask, a.MBA = time.Duration(t), uint64(mask), fv(mba)
		if a.Members, err = splitInts(mem); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// Events returns the decisions and markers of run id in the order written.
func (s *Store) Events(id int64) ([]Event, error) {
	if s.db == nil {
		return nil, nil
	}
	rows, err := s.db.Query(`SELECT t_ns,kind,job_id,text FROM events WHERE run_id=? ORDER BY rowid`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var e Event
		var t int64
		if err := rows.Scan(&t, &e.Kind, &e.Job, &e.Text); err != nil {
			return nil, err
		}
		e.T = time.Duration(t)
		out = append(out, e)
	}
	return out, rows.Err()
}

// Probes returns the probe segments of run id in the order written.
func (s *Store) Probes(id int64) ([]ProbeSegment, error) {
	if s.db == nil {
		return nil, nil
	}
	rows, err := s.db.Query(`SELECT job_id,t_start_ns,t_end_ns,kind,socket,ways,mask,mba,ipc,ipce,result
		FROM probes WHERE run_id=? ORDER BY rowid`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ProbeSegment
	for rows.Next() {
		var p ProbeSegment
		var t0, t1, mask int64
		var mba, ipc, ipce sql.NullFloat64
		if err := rows.Scan(&p.Job, &t0, &t1, &p.Kind, &p.Socket, &p.Ways, &mask, &mba, &ipc, &ipce, &p.Result); err != nil {
			return nil, err
		}
		p.Start, p.End, p.Mask, p.MBA, p.IPC, p.IPCE = time.Duration(t0), time.Duration(t1), uint64(mask), fv(mba), fv(ipc), fv(ipce)
		out = append(out, p)
	}
	return out, rows.Err()
}

// Partitions returns the partitioning results of run id ordered by workload then policy,
// each with its applications in the order written.
func (s *Store) Partitions(id int64) ([]PartitionResult, error) {
	if s.db == nil {
		return nil, nil
	}
	rows, err := s.db.Query(`SELECT workload,policy,stp,antt,unfairness,jain FROM partitions WHERE run_id=? ORDER BY workload,policy`, id)
	if err != nil {
		return nil, err
	}
	var out []PartitionResult
	for rows.Next() {
		var p PartitionResult
		var a, b, c, d sql.NullFloat64
		if err := rows.Scan(&p.Workload, &p.Policy, &a, &b, &c, &d); err != nil {
			rows.Close()
			return nil, err
		}
		p.STP, p.ANTT, p.Unfairness, p.Jain = fv(a), fv(b), fv(c), fv(d)
		p.Apps = []PartitionApp{}
		out = append(out, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	idx := map[[2]string]int{}
	for i, p := range out {
		idx[[2]string{p.Workload, p.Policy}] = i
	}
	arows, err := s.db.Query(`SELECT workload,policy,app,cluster,ways,mask,ipc_alone,ipc,slowdown FROM partition_apps WHERE run_id=? ORDER BY rowid`, id)
	if err != nil {
		return nil, err
	}
	defer arows.Close()
	for arows.Next() {
		var wl, pol string
		var a PartitionApp
		var mask int64
		var x, y, z sql.NullFloat64
		if err := arows.Scan(&wl, &pol, &a.App, &a.Cluster, &a.Ways, &mask, &x, &y, &z); err != nil {
			return nil, err
		}
		a.Mask, a.IPCAlone, a.IPC, a.Slowdown = uint64(mask), fv(x), fv(y), fv(z)
		if i, ok := idx[[2]string{wl, pol}]; ok {
			out[i].Apps = append(out[i].Apps, a)
		}
	}
	return out, arows.Err()
}

// Summary returns the summary of run id; ok is false when the run never finished.
func (s *Store) Summary(id int64) (sum Summary, ok bool, err error) {
	if s.db == nil {
		return sum, false, nil
	}
	var v [9]sql.NullFloat64
	var extra string
	notes := "[]"
	notesCol := "'[]'" // version-1 databases have no notes column
	if s.schema >= 2 {
		notesCol = "notes"
	}
	err = s.db.QueryRow(`SELECT name,priority_ipce,batch_ipce,global_ipce,time_over_target,time_over_target_p90,
		jobs_completed,jobs_rejected,queue_delay_mean_s,queue_delay_p90_s,virtual_seconds,wall_seconds,extra,`+notesCol+`
		FROM summaries WHERE run_id=?`, id).Scan(&sum.Name, &v[0], &v[1], &v[2], &v[3], &v[4],
		&sum.JobsCompleted, &sum.JobsRejected, &v[5], &v[6], &v[7], &v[8], &extra, &notes)
	if errors.Is(err, sql.ErrNoRows) {
		return Summary{}, false, nil
	}
	if err != nil {
		return sum, false, err
	}
	sum.PriorityIPCE, sum.BatchIPCE, sum.GlobalIPCE = fv(v[0]), fv(v[1]), fv(v[2])
	sum.TimeOverTarget, sum.TimeOverTargetP90 = fv(v[3]), fv(v[4])
	sum.QueueDelayMean, sum.QueueDelayP90, sum.VirtualSeconds, sum.WallSeconds = fv(v[5]), fv(v[6]), fv(v[7]), fv(v[8])
	var m map[string]*float64
	if err := json.Unmarshal([]byte(extra), &m); err != nil {
		return sum, false, fmt.Errorf("summary extra of run %d: %w", id, err)
	}
	if err := json.Unmarshal([]byte(notes), &sum.Notes); err != nil {
		return sum, false, fmt.Errorf("summary notes of run %d: %w", id, err)
	}
	if len(sum.Notes) == 0 {
		sum.Notes = nil
	}
	if len(m) > 0 {
		sum.Extra = map[string]float64{}
		for k, p := range m {
			if p == nil {
				sum.Extra[k] = math.NaN()
			} else {
				sum.Extra[k] = *p
			}
		}
	}
	return sum, true, nil
}

// Missing lists, in plain words, what an incomplete run directory lacks: the manifest, the
// database, the completion mark, unfinished scheduler runs (no summary). Empty when the
// directory is complete.
func (s *Store) Missing() ([]string, error) {
	var out []string
	if s.noManif {
		out = append(out, fmt.Sprintf("%s is missing: the run never wrote its manifest (name, machine and seed unknown)", ManifestFile))
	}
	if s.db == nil {
		out = append(out, fmt.Sprintf("%s is missing: no jobs, samples, allocations or summaries were recorded", DatabaseFile))
		return out, nil
	}
	if !s.noManif && !s.manifest.Complete {
		if s.manifest.Interrupted != "" {
			out = append(out, fmt.Sprintf("the run was interrupted (%s) at %s: data ends there", s.manifest.Interrupted,
				s.manifest.Finished.UTC().Format("2006-01-02 15:04:05Z")))
		} else {
			out = append(out, "the run was not marked complete (killed or still running): data ends where it stopped")
		}
	}
	runs, err := s.Runs()
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		out = append(out, "no scheduler run was started")
	}
	done := map[string]bool{}
	for _, r := range runs {
		done[r.Scheduler] = true
		if !r.Complete {
			n, err := s.SampleCount(r.ID)
			if err != nil {
				return nil, err
			}
			out = append(out, fmt.Sprintf("scheduler %s (run %d) did not finish: no summary; %d samples recorded", r.Scheduler, r.ID, n))
		}
	}
	return out, nil
}

// SampleSpan returns the earliest and latest sample time of run id and the sample count
// (zeros when there are none).
func (s *Store) SampleSpan(id int64) (first, last time.Duration, n int64, err error) {
	if s.db == nil {
		return 0, 0, 0, nil
	}
	var a, b sql.NullInt64
	err = s.db.QueryRow("SELECT min(t_ns), max(t_ns), count(*) FROM samples WHERE run_id=?", id).Scan(&a, &b, &n)
	return time.Duration(a.Int64), time.Duration(b.Int64), n, err
}

// EachSampleLight is EachSample reading only job_id, t_ns, interval_ns, socket, ipc, ipce,
// stalled, llc_occupancy_bytes and mem_bytes_total (the other counters are NaN in the
// samples it passes): about half the cost, for readers that draw series.
func (s *Store) EachSampleLight(id int64, fn func(Sample) error) error {
	if s.db == nil {
		return nil
	}
	rows, err := s.db.Query(`SELECT job_id,t_ns,interval_ns,socket,ipc,ipce,stalled,llc_occupancy_bytes,mem_bytes_total
		FROM samples WHERE run_id=? ORDER BY rowid`, id)
	if err != nil {
		return err
	}
	defer rows.Close()
	var v [5]sql.NullFloat64
	nan := math.NaN()
	for rows.Next() {
		x := Sample{Instructions: nan, Cycles: nan, StallsTotal: nan, StallsL3Miss: nan, LLCRefs: nan, LLCMisses: nan, MemBytesLocal: nan}
		var t, iv int64
		if err := rows.Scan(&x.Job, &t, &iv, &x.Socket, &v[0], &v[1], &v[2], &v[3], &v[4]); err != nil {
			return err
		}
		x.T, x.Interval = time.Duration(t), time.Duration(iv)
		x.IPC, x.IPCE, x.Stalled, x.OccupancyBytes, x.MemBytesTotal = fv(v[0]), fv(v[1]), fv(v[2]), fv(v[3]), fv(v[4])
		if err := fn(x); err != nil {
			return err
		}
	}
	return rows.Err()
}

// TypicalInterval is the most common sampling interval among the first 10 000 samples of
// run id (0 when there are none): the collector's period, which probe-time sampling
// (faster, for one job) does not change.
func (s *Store) TypicalInterval(id int64) (time.Duration, error) {
	if s.db == nil {
		return 0, nil
	}
	rows, err := s.db.Query("SELECT interval_ns FROM samples WHERE run_id=? ORDER BY rowid LIMIT 10000", id)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	count := map[int64]int{}
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return 0, err
		}
		if v > 0 {
			count[v]++
		}
	}
	var best int64
	for v, c := range count {
		if c > count[best] || c == count[best] && v > best {
			best = v
		}
	}
	return time.Duration(best), rows.Err()
}
