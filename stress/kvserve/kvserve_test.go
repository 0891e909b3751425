package kvserve

import (
	"encoding/binary"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

func get(t *testing.T, s *Server, path string) (int, string) {
	t.Helper()
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
	return w.Code, strings.TrimSpace(w.Body.String())
}

// expected recomputes a get's checksum from the value layout: Reads values along the
// LCG chain, one word per cache line.
func expected(s *Server, key uint64) string {
	var sum uint64
	x := key % uint64(s.n)
	k := int(x)
	for i := range s.cfg.Reads {
		if i > 0 {
			x = next(x)
			k = int(x % uint64(s.n))
		}
		b := s.value(k)
		for j := 0; j+8 <= len(b); j += 64 {
			sum += binary.LittleEndian.Uint64(b[j:])
		}
	}
	return fmt.Sprintf("%x", sum)
}

func TestServeGetPutAndHistogram(t *testing.T) {
	s, err := New(Config{MB: 1, ValueBytes: 1000, Reads: 7})
	if err != nil {
		t.Fatal(err)
	}
	if s.Keys() != 1000 || s.Bytes() != 1_000_000 {
		t.Fatalf("keys %d bytes %d, want 1000 and 10^6 (--mb 1 of 1000-byte values)", s.Keys(), s.Bytes())
	}
	code, sum := get(t, s, "/kv/5")
	if code != 200 || sum != expected(s, 5) {
		t.Fatalf("GET /kv/5 = %d %q, want the checksum %s", code, sum, expected(s, 5))
	}
	if _, again := get(t, s, "/kv/1005"); again != sum {
		t.Errorf("key 1005 should wrap to key 5: %s vs %s", again, sum)
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest(http.MethodPut, "/kv/5", strings.NewReader("123456789")))
	if w.Code != http.StatusNoContent {
		t.Fatalf("PUT = %d %s", w.Code, w.Body)
	}
	if got := binary.LittleEndian.Uint64(s.value(5)[8:]); got != 123456790 {
		t.Fatalf("value 5's second word = %d after PUT 123456789", got)
	}
	_, after := get(t, s, "/kv/5")
	if after == sum || after != expected(s, 5) {
		t.Errorf("after PUT the checksum %s should change from %s and match %s", after, sum, expected(s, 5))
	}
	if c, _ := get(t, s, "/kv/x"); c != http.StatusBadRequest {
		t.Errorf("GET /kv/x = %d, want 400", c)
	}
	code, text := get(t, s, "/metrics")
	if code != 200 {
		t.Fatalf("/metrics = %d", code)
	}
	counts := map[string]int{}
	for _, l := range strings.Split(text, "\n") {
		for _, op := range []string{"get", "put"} {
			if p := MetricName + `_count{op="` + op + `"} `; strings.HasPrefix(l, p) {
				counts[op], _ = strconv.Atoi(strings.TrimPrefix(l, p))
			}
		}
	}
	if counts["get"] != 3 || counts["put"] != 1 {
		t.Errorf("histogram counts %v, want get 3 (the bad key is not observed) and put 1\n%s", counts, text)
	}
}

func TestServeRejectsBadConfig(t *testing.T) {
	for _, c := range []Config{{MB: 0}, {MB: 1, ValueBytes: 4}, {MB: 1e-9}} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
}
