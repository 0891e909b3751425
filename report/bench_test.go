package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"colo/store"
	"colo/store/storetest"
)

// hourRun returns a synthetic run directory shaped like the thesis's 1-hour
// exceeding-demand scenario (about 720 jobs arriving every N(5 s, 2), 50 % priority,
// least-loaded and dynamic), sampled every COLO_BENCH_TICK (default 100 ms). It is
// generated once under $TMPDIR and reused.
func hourRun(b *testing.B) string {
	tick := 100 * time.Millisecond
	if s := os.Getenv("COLO_BENCH_TICK"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			b.Fatal(err)
		}
		tick = d
	}
	dir := filepath.Join(os.TempDir(), "colo-bench-hour-"+strconv.FormatInt(int64(tick/time.Millisecond), 10)+"ms")
	if _, err := os.Stat(filepath.Join(dir, store.ManifestFile)); err == nil {
		return dir
	}
	os.RemoveAll(dir)
	t0 := time.Now()
	w, err := storetest.Generate(dir, storetest.Options{Seed: 1, Jobs: 720, Tick: tick, Priority: 0.5, Duration: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	st, _ := store.Open(dir)
	bytesDB := st.DatabaseBytes()
	st.Close()
	b.Logf("generated %s: %d samples, %d allocations in %.1f s; colo.db %d bytes (%.1f bytes/sample)",
		dir, w.Samples, len(w.Allocations), time.Since(t0).Seconds(), bytesDB, float64(bytesDB)/float64(w.Samples))
	return dir
}

// BenchmarkReportHour measures report generation for the 1-hour, ~720-job run.
func BenchmarkReportHour(b *testing.B) {
	dir := hourRun(b)
	var size int
	for b.Loop() {
		var buf bytes.Buffer
		if _, err := Write(&buf, Options{Dirs: []string{dir}}); err != nil {
			b.Fatal(err)
		}
		size = buf.Len()
	}
	b.ReportMetric(float64(size), "html-bytes")
}
