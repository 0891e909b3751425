// Reading a store back: runs, jobs, samples, allocations, events, probes, partitions,
// summaries and the derived span, gaps and typical interval of a run's samples.

package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// Runs lists the scheduler runs in the directory, in creation order.
func (s *Store) Runs() ([]Run, error) {
	return query(s, "SELECT run_id, scheduler, trace, start_unix_ns, complete FROM runs ORDER BY run_id",
		func(rows *sql.Rows) (r Run, err error) {
			var ns int64
			var c int
			err = rows.Scan(&r.ID, &r.Scheduler, &r.Trace, &ns, &c)
			r.Start, r.Complete = time.Unix(0, ns).UTC(), c != 0
			return r, err
		})
}

// each runs the query q and calls row for every result row; nothing on a directory
// without a database.
func (s *Store) each(q string, row func(*sql.Rows) error, args ...any) error {
	if s.db == nil {
		return nil
	}
	rows, err := s.db.Query(q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// query runs the query q and returns one value per result row, read by scan.
func query[T any](s *Store, q string, scan func(*sql.Rows) (T, error), args ...any) ([]T, error) {
	var out []T
	err := s.each(q, func(rows *sql.Rows) error {
		x, err := scan(rows)
		out = append(out, x)
		return err
	}, args...)
	if err != nil {
		return nil, err
	}
	return out, nil
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
	return query(s, `SELECT job_id,name,kind,model,priority,ipce_target,cores,core_list,socket,
		arrival_ns,start_ns,stop_ns,state,reason FROM jobs WHERE run_id=? ORDER BY job_id`,
		func(rows *sql.Rows) (j Job, err error) {
			var prio int
			var tgt sql.NullFloat64
			var arr int64
			var st, sp sql.NullInt64
			err = rows.Scan(&j.ID, &j.Name, &j.Kind, &j.Model, &prio, &tgt, &j.Cores, &j.CoreList, &j.Socket,
				&arr, &st, &sp, &j.State, &j.Reason)
			j.Priority, j.IPCETarget, j.Arrival, j.Start, j.Stop = prio != 0, fv(tgt), time.Duration(arr), dv(st), dv(sp)
			return j, err
		}, id)
}

// EachSample calls fn for every sample of run id in the order written.
func (s *Store) EachSample(id int64, fn func(Sample) error) error {
	var v [12]sql.NullFloat64
	return s.each(`SELECT job_id,t_ns,interval_ns,socket,instructions,cycles,stalls_total,stalls_l3_miss,
		llc_refs,llc_misses,llc_occupancy_bytes,mem_bytes_local,mem_bytes_total,ipc,ipce,stalled
		FROM samples WHERE run_id=? ORDER BY rowid`, func(rows *sql.Rows) error {
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
		return fn(x)
	}, id)
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
	return query(s, `SELECT t_ns,socket,clos,mask,mba,members,source FROM allocations WHERE run_id=? ORDER BY rowid`,
		func(rows *sql.Rows) (a Allocation, err error) {
			var t, mask int64
			var mba sql.NullFloat64
			var mem string
			if err := rows.Scan(&t, &a.Socket, &a.CLOS, &mask, &mba, &mem, &a.Source); err != nil {
				return a, err
			}
			a.T, a.Mask, a.MBA = time.Duration(t), uint64(mask), fv(mba)
			a.Members, err = splitInts(mem)
			return a, err
		}, id)
}

// Events returns the decisions and markers of run id in the order written.
func (s *Store) Events(id int64) ([]Event, error) {
	return query(s, `SELECT t_ns,kind,job_id,text FROM events WHERE run_id=? ORDER BY rowid`,
		func(rows *sql.Rows) (e Event, err error) {
			var t int64
			err = rows.Scan(&t, &e.Kind, &e.Job, &e.Text)
			e.T = time.Duration(t)
			return e, err
		}, id)
}

// Probes returns the probe segments of run id in the order written.
func (s *Store) Probes(id int64) ([]ProbeSegment, error) {
	return query(s, `SELECT job_id,t_start_ns,t_end_ns,kind,socket,ways,mask,mba,ipc,ipce,result
		FROM probes WHERE run_id=? ORDER BY rowid`, func(rows *sql.Rows) (p ProbeSegment, err error) {
		var t0, t1, mask int64
		var mba, ipc, ipce sql.NullFloat64
		err = rows.Scan(&p.Job, &t0, &t1, &p.Kind, &p.Socket, &p.Ways, &mask, &mba, &ipc, &ipce, &p.Result)
		p.Start, p.End, p.Mask, p.MBA, p.IPC, p.IPCE = time.Duration(t0), time.Duration(t1), uint64(mask), fv(mba), fv(ipc), fv(ipce)
		return p, err
	}, id)
}

// Partitions returns the partitioning results of run id ordered by workload then policy,
// each with its applications in the order written.
func (s *Store) Partitions(id int64) ([]PartitionResult, error) {
	out, err := query(s, `SELECT workload,policy,stp,antt,unfairness,jain FROM partitions WHERE run_id=? ORDER BY workload,policy`,
		func(rows *sql.Rows) (p PartitionResult, err error) {
			var a, b, c, d sql.NullFloat64
			err = rows.Scan(&p.Workload, &p.Policy, &a, &b, &c, &d)
			p.STP, p.ANTT, p.Unfairness, p.Jain = fv(a), fv(b), fv(c), fv(d)
			p.Apps = []PartitionApp{}
			return p, err
		}, id)
	if err != nil {
		return nil, err
	}
	idx := map[[2]string]int{}
	for i, p := range out {
		idx[[2]string{p.Workload, p.Policy}] = i
	}
	err = s.each(`SELECT workload,policy,app,cluster,ways,mask,ipc_alone,ipc,slowdown FROM partition_apps WHERE run_id=? ORDER BY rowid`,
		func(rows *sql.Rows) error {
			var wl, pol string
			var a PartitionApp
			var mask int64
			var x, y, z sql.NullFloat64
			if err := rows.Scan(&wl, &pol, &a.App, &a.Cluster, &a.Ways, &mask, &x, &y, &z); err != nil {
				return err
			}
			a.Mask, a.IPCAlone, a.IPC, a.Slowdown = uint64(mask), fv(x), fv(y), fv(z)
			if i, ok := idx[[2]string{wl, pol}]; ok {
				out[i].Apps = append(out[i].Apps, a)
			}
			return nil
		}, id)
	if err != nil {
		return nil, err
	}
	return out, nil
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
