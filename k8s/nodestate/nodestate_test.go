package nodestate

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func sample() State {
	return State{FormatVersion: FormatVersion, Node: "n1", Updated: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC),
		DialsMB:   []float64{0, 4, 8},
		Residents: []Resident{{Name: "ns/a", UID: "u1", Class: "priority", Target: 0.9, Profile: "605.mcf_s", ScoreMB: 8, Slowdown: []float64{1, 1.1, 1.3}}},
		Sockets:   []Socket{{ID: 0, FreeWays: 7, FreeMBA: 60, CLOSIDsLeft: 12}}}
}

func TestRoundTrip(t *testing.T) {
	b, err := Marshal(sample())
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := Marshal(s)
	if string(b) != string(b2) {
		t.Fatalf("round trip differs:\n%s\n%s", b, b2)
	}
	if n, ok := s.CLOSIDsLeft(); n != 12 || !ok {
		t.Fatalf("closids %d %v", n, ok)
	}
}

func TestBadDocuments(t *testing.T) {
	good, _ := Marshal(sample())
	for _, c := range []struct{ doc, field string }{
		{`{"formatVersion":2,"node":"n"}`, "formatVersion: 2"},
		{`{"node":"n"}`, "formatVersion: missing"},
		{`[1]`, "not a JSON object"},
		{strings.Replace(string(good), `"priority"`, `"gold"`, 1), "residents[0].class"},
		{strings.Replace(string(good), `"targetIPCE":0.9`, `"targetIPCE":1.9`, 1), "residents[0].targetIPCE"},
		{strings.Replace(string(good), `[1,1.1,1.3]`, `[1,1.1]`, 1), "residents[0].slowdown"},
		{strings.Replace(string(good), `[1,1.1,1.3]`, `[1,0,1.3]`, 1), "residents[0].slowdown[1]"},
		{strings.Replace(string(good), `[0,4,8]`, `[0,8,4]`, 1), "dialsMB"},
		{strings.Replace(string(good), `"closidsLeft":12`, `"closidsLeft":-1`, 1), "sockets[0]"},
	} {
		_, err := Parse([]byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: error %v, want one naming %s", c.doc, err, c.field)
		}
	}
	_, err := Parse([]byte(`{"formatVersion":2}`))
	if !errors.Is(err, ErrUnknownVersion) {
		t.Fatalf("%v does not wrap ErrUnknownVersion", err)
	}
}

func TestFresh(t *testing.T) {
	s := sample()
	if !s.Fresh(s.Updated.Add(time.Minute), 2*time.Minute) || s.Fresh(s.Updated.Add(3*time.Minute), 2*time.Minute) || !s.Fresh(s.Updated.Add(time.Hour), 0) {
		t.Fatal("freshness")
	}
}
