package profile

import (
	"bytes"
	"io/fs"
	"testing"

	"colo/data"
)

func seedFile(f *testing.F, path string) []byte {
	b, err := fs.ReadFile(data.FS, path)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// FuzzParseProfile: a per-way profile CSV (metrics.csv shape) never panics the parser;
// what it accepts has at least one way and looks up every name it lists.
func FuzzParseProfile(f *testing.F) {
	full := seedFile(f, data.PBBCacheMetrics)
	f.Add(full[:min(len(full), 4096)])
	f.Add([]byte("BENCH,WAYS,IPC\nx,1,1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse(bytes.NewReader(b), "metrics.csv")
		if err != nil {
			return
		}
		if s.Ways() < 1 {
			t.Fatalf("accepted a profile with %d ways", s.Ways())
		}
		for _, n := range s.Names() {
			if _, err := s.Get(n); err != nil {
				t.Fatalf("listed %q but Get fails: %v", n, err)
			}
		}
	})
}

// FuzzParseWorkloads: a workloads file never panics the parser; every accepted workload
// names benchmarks the profile set has.
func FuzzParseWorkloads(f *testing.F) {
	set, err := LoadFS(data.FS, data.PBBCacheMetrics)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seedFile(f, data.PBBCacheWorkloads))
	f.Add([]byte("sphinx306,lbm06\n# comment\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ws, err := ParseWorkloads(bytes.NewReader(b), "workloads.csv", set)
		if err != nil {
			return
		}
		for _, w := range ws {
			if _, err := set.Lookup(w.Names); err != nil {
				t.Fatalf("line %d: accepted %v but Lookup fails: %v", w.Line, w.Names, err)
			}
		}
	})
}
