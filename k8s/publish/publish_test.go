package publish

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"colo/agent/api"
	"colo/agent/core"
	"colo/k8s/nodestate"
	"colo/k8s/placement"
)

// The publisher reads the real agent API (api.Handler serving an api.Status), so a
// renamed JSON field on either side fails here.
func TestFromAgentAPI(t *testing.T) {
	lib, err := placement.LoadLibrary("")
	if err != nil {
		t.Fatal(err)
	}
	st := api.Status{Sockets: 2, LLCWays: 11, Ticks: 1, Updated: time.Now(), Counts: map[string]int{},
		Containers: []api.ContainerStatus{
			{ID: "a", Name: "db", Image: "colo.local/605.mcf_s:1", Request: core.Request{Class: core.Priority, TargetIPCE: 0.9}, State: "running", Socket: 0, Ways: 4, MBA: 30, CtrlGroup: "colo-db"},
			{ID: "b", Name: "619.lbm_s", Request: core.Request{Class: core.Batch}, State: "running", Socket: 1},
			{ID: "c", Name: "web", Request: core.Request{Class: core.BestEffort}, State: "running", Socket: 1},
			{ID: "d", Name: "later", Request: core.Request{Class: core.Batch}, State: "queued"},
			// found through NRI in a Kubernetes pod: namespace/pod/container
			{ID: "e", Name: "default/etl-7d9f8-x2kq/etl", Request: core.Request{Class: core.Batch}, State: "running", Socket: 1},
		}}
	srv := httptest.NewServer(api.Handler(func() api.Status { return st }, time.Hour))
	defer srv.Close()
	got, err := FetchAgent(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	s := FromAgent(got, lib, "n1", map[string]string{"web": "657.xz_s", "etl": "619.lbm_s"}, 16, now)
	b, err := nodestate.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	back, err := nodestate.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Residents) != 4 {
		t.Fatalf("residents %+v (the queued container must not count)", back.Residents)
	}
	want := map[string]string{"db": "605.mcf_s", "619.lbm_s": "619.lbm_s", "web": "657.xz_s", "default/etl-7d9f8-x2kq/etl": "619.lbm_s"} // image, name, mapping, mapping of the pod's container
	for _, r := range back.Residents {
		if r.Profile != want[r.Name] || len(r.Slowdown) != len(lib.Dials) || r.ScoreMB != lib.Profiles[r.Profile].ScoreMB {
			t.Errorf("resident %+v, want profile %s", r, want[r.Name])
		}
	}
	if r := back.Residents[0]; r.Class != "priority" || r.Target != 0.9 {
		t.Errorf("db: %+v", r)
	}
	if len(back.Sockets) != 2 || back.Sockets[0].FreeWays != 7 || back.Sockets[0].FreeMBA != 70 || back.Sockets[1].FreeWays != 11 || back.Sockets[0].CLOSIDsLeft != 14 {
		t.Errorf("sockets %+v", back.Sockets)
	}
	got.Counts = map[string]int{"closid_exhausted": 1}
	if s := FromAgent(got, lib, "n1", nil, 16, now); s.Sockets[0].CLOSIDsLeft != 0 {
		t.Errorf("after exhaustion: %+v", s.Sockets)
	}
}

func TestParseResident(t *testing.T) {
	lib, _ := placement.LoadLibrary("")
	r, err := ParseResident(lib, "db=605.mcf_s:priority:0.9")
	if err != nil || r.Class != "priority" || r.Target != 0.9 || r.ScoreMB != lib.Profiles["605.mcf_s"].ScoreMB {
		t.Fatalf("%+v %v", r, err)
	}
	for _, bad := range []string{"db", "=605.mcf_s", "db=nope", "db=605.mcf_s:gold", "db=605.mcf_s:priority:1.5"} {
		if _, err := ParseResident(lib, bad); err == nil || !strings.Contains(err.Error(), "resident") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
