package store

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzOpenManifest: a damaged or hand-edited run.json never panics Open, Manifest or
// Missing (colo report and colo export open any directory they are given).
func FuzzOpenManifest(f *testing.F) {
	f.Add([]byte(`{"format":"colo-run/1","name":"x","seed":1,"created":"2026-01-01T00:00:00Z","database":"colo.db","complete":false,"interrupted":"SIGINT"}`))
	f.Add([]byte(`{"format":"colo-run/0"}`))
	f.Add([]byte(`{`))
	f.Add([]byte(`{"format":"colo-run/1","schedulers":[1,2]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ManifestFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir)
		if err != nil {
			return
		}
		defer s.Close()
		_ = s.Manifest()
		if _, err := s.Missing(); err != nil {
			t.Fatalf("Missing: %v", err)
		}
	})
}
