package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"colo/store/storetest"
)

// outDir is where tests keep artefacts (HTML, screenshots) for a person to look at.
func outDir(t testing.TB) string {
	d := os.Getenv("COLO_TEST_OUT")
	if d == "" {
		d = filepath.Join(os.TempDir(), "colo-report-test")
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func render(t testing.TB, dirs ...string) (string, Stats) {
	t.Helper()
	var buf bytes.Buffer
	st, err := Write(&buf, Options{Dirs: dirs})
	if err != nil {
		t.Fatal(err)
	}
	return buf.String(), st
}

func TestRenderSmall(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if _, err := storetest.Generate(dir, storetest.Options{Seed: 1, Jobs: 10, Tick: 500 * time.Millisecond, Priority: 0.4, Partitions: true}); err != nil {
		t.Fatal(err)
	}
	html, st := render(t, dir)
	os.WriteFile(filepath.Join(outDir(t), "small.html"), []byte(html), 0o644)
	if st.Runs != 2 || st.Charts == 0 {
		t.Fatalf("stats %+v", st)
	}
	for _, bad := range []string{"http://", "https://", "src=\"//"} {
		if strings.Contains(html, bad) {
			t.Errorf("page references %q: it must not fetch anything", bad)
		}
	}
}
