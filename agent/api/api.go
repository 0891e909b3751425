// Package api is what the agent publishes: the status after each tick (Status), the
// HTTP handler serving it (JSON under /api/v1, /healthz) and the Prometheus collector.
package api

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Version is the path prefix of the JSON API.
const Version = "/api/v1"

// Handler serves /metrics (Prometheus), /healthz and the JSON API:
//
//	GET /api/v1/status      Status (everything)
//	GET /api/v1/containers  []ContainerStatus
//
// status is the source of truth (Agent.Status); staleAfter is how old the last tick may
// be before /healthz fails (several intervals).
func Handler(status func() Status, staleAfter time.Duration) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(status), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		st := status()
		switch {
		case st.Ticks == 0:
			http.Error(w, "starting", http.StatusServiceUnavailable)
		case st.ResctrlError != "":
			http.Error(w, "resctrl: "+st.ResctrlError, http.StatusServiceUnavailable)
		case time.Since(st.Updated) > staleAfter:
			http.Error(w, "no tick since "+st.Updated.Format(time.RFC3339Nano), http.StatusServiceUnavailable)
		default:
			w.Write([]byte("ok\n"))
		}
	})
	js := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(v)
	}
	mux.HandleFunc("GET "+Version+"/status", func(w http.ResponseWriter, r *http.Request) { js(w, status()) })
	mux.HandleFunc("GET "+Version+"/containers", func(w http.ResponseWriter, r *http.Request) {
		cs := status().Containers
		if cs == nil {
			cs = []ContainerStatus{}
		}
		js(w, cs)
	})
	return mux
}
