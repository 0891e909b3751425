package store

// DatabaseFile is the name of the embedded database inside a run directory.
const DatabaseFile = "colo.db"

// ManifestFile is the name of the manifest inside a run directory.
const ManifestFile = "run.json"

// schemaVersion is stored in PRAGMA user_version. Version 2 added summaries.notes;
// version-1 databases are still read (their summaries have no notes).
const (
	schemaVersion    = 2
	oldestReadSchema = 1
)

// Column lists: the stable names of every table (docs/report.md documents them; exports use
// them as CSV headers, Parquet column names and JSON keys).
var (
	RunColumns = []string{"run_id", "scheduler", "trace", "start_unix_ns", "complete"}
	JobColumns = []string{"run_id", "job_id", "name", "kind", "model", "priority", "ipce_target",
		"cores", "core_list", "socket", "arrival_ns", "start_ns", "stop_ns", "state", "reason"}
	SampleColumns = []string{"run_id", "job_id", "t_ns", "interval_ns", "socket",
		"instructions", "cycles", "stalls_total", "stalls_l3_miss", "llc_refs", "llc_misses",
		"llc_occupancy_bytes", "mem_bytes_local", "mem_bytes_total", "ipc", "ipce", "stalled"}
	AllocationColumns = []string{"run_id", "t_ns", "socket", "clos", "mask", "mba", "members", "source"}
	EventColumns      = []string{"run_id", "t_ns", "kind", "job_id", "text"}
	ProbeColumns      = []string{"run_id", "job_id", "t_start_ns", "t_end_ns", "kind", "socket",
		"ways", "mask", "mba", "ipc", "ipce", "result"}
	PartitionColumns    = []string{"run_id", "workload", "policy", "stp", "antt", "unfairness", "jain"}
	PartitionAppColumns = []string{"run_id", "workload", "policy", "app", "cluster", "ways", "mask",
		"ipc_alone", "ipc", "slowdown"}
	SummaryColumns = []string{"run_id", "name", "priority_ipce", "batch_ipce", "global_ipce",
		"time_over_target", "time_over_target_p90", "jobs_completed", "jobs_rejected",
		"queue_delay_mean_s", "queue_delay_p90_s", "virtual_seconds", "wall_seconds", "extra", "notes"}
)

// schema creates every table. Samples are a rowid table without secondary index: rows are
// appended in time order and read back in that order (the report and exports scan them
// whole), which keeps the file at the size of the data.
const schema = `
CREATE TABLE IF NOT EXISTS runs (
  run_id INTEGER PRIMARY KEY,
  scheduler TEXT NOT NULL,
  trace TEXT NOT NULL DEFAULT '',
  start_unix_ns INTEGER NOT NULL,
  complete INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS jobs (
  run_id INTEGER NOT NULL,
  job_id INTEGER NOT NULL,
  name TEXT NOT NULL,
  kind TEXT NOT NULL DEFAULT '',
  model TEXT NOT NULL DEFAULT '',
  priority INTEGER NOT NULL,
  ipce_target REAL,
  cores INTEGER NOT NULL,
  core_list TEXT NOT NULL DEFAULT '',
  socket INTEGER NOT NULL,
  arrival_ns INTEGER NOT NULL,
  start_ns INTEGER,
  stop_ns INTEGER,
  state TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (run_id, job_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS samples (
  run_id INTEGER NOT NULL,
  job_id INTEGER NOT NULL,
  t_ns INTEGER NOT NULL,
  interval_ns INTEGER NOT NULL,
  socket INTEGER NOT NULL,
  instructions REAL,
  cycles REAL,
  stalls_total REAL,
  stalls_l3_miss REAL,
  llc_refs REAL,
  llc_misses REAL,
  llc_occupancy_bytes REAL,
  mem_bytes_local REAL,
  mem_bytes_total REAL,
  ipc REAL,
  ipce REAL,
  stalled REAL
);
CREATE TABLE IF NOT EXISTS allocations (
  run_id INTEGER NOT NULL,
  t_ns INTEGER NOT NULL,
  socket INTEGER NOT NULL,
  clos TEXT NOT NULL,
  mask INTEGER NOT NULL,
  mba REAL,
  members TEXT NOT NULL DEFAULT '',
  source TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS events (
  run_id INTEGER NOT NULL,
  t_ns INTEGER NOT NULL,
  kind TEXT NOT NULL,
  job_id INTEGER NOT NULL,
  text TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS probes (
  run_id INTEGER NOT NULL,
  job_id INTEGER NOT NULL,
  t_start_ns INTEGER NOT NULL,
  t_end_ns INTEGER NOT NULL,
  kind TEXT NOT NULL,
  socket INTEGER NOT NULL,
  ways INTEGER NOT NULL,
  mask INTEGER NOT NULL,
  mba REAL,
  ipc REAL,
  ipce REAL,
  result TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS partitions (
  run_id INTEGER NOT NULL,
  workload TEXT NOT NULL,
  policy TEXT NOT NULL,
  stp REAL,
  antt REAL,
  unfairness REAL,
  jain REAL,
  PRIMARY KEY (run_id, workload, policy)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS partition_apps (
  run_id INTEGER NOT NULL,
  workload TEXT NOT NULL,
  policy TEXT NOT NULL,
  app TEXT NOT NULL,
  cluster INTEGER NOT NULL,
  ways INTEGER NOT NULL,
  mask INTEGER NOT NULL,
  ipc_alone REAL,
  ipc REAL,
  slowdown REAL
);
CREATE TABLE IF NOT EXISTS summaries (
  run_id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  priority_ipce REAL,
  batch_ipce REAL,
  global_ipce REAL,
  time_over_target REAL,
  time_over_target_p90 REAL,
  jobs_completed INTEGER NOT NULL,
  jobs_rejected INTEGER NOT NULL,
  queue_delay_mean_s REAL,
  queue_delay_p90_s REAL,
  virtual_seconds REAL,
  wall_seconds REAL,
  extra TEXT NOT NULL DEFAULT '{}',
  notes TEXT NOT NULL DEFAULT '[]'
);
`
