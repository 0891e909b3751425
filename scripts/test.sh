#!/usr/bin/env bash
# The whole test suite: set-up, vet, tests. CI runs exactly this (see .ci/run and README).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The Kubernetes binaries for scripts/k8s-e2e.sh (last step) build from the Go module proxy
# once per machine (cached by version under $HOME/.cache/colo-k8s; nothing to do when
# present). Cold, that is the longest single step of CI, so it starts now at the lowest
# priority and takes the CPU the suite leaves idle; the last step waits for it.
k8s_build_log=$(mktemp)
setsid nice -n 19 bash scripts/k8s-build.sh > "$k8s_build_log" 2>&1 &
k8s_build=$!
trap 'kill -- -"$k8s_build" 2>/dev/null || true; rm -f "$k8s_build_log"' EXIT
go vet ./...
# staticcheck from the Go module proxy, built once into a cache (CI machines start cold)
sc="$HOME/.cache/colo-staticcheck/staticcheck"
[ -x "$sc" ] || GOBIN="$(dirname "$sc")" go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
# every default check gates, U1000 (unused code) included: dead code is deleted
"$sc" ./...
go test -count=1 -timeout 40m ./...
# the race detector on the packages that run goroutines
go test -race -count=1 -timeout 40m ./workload/... ./platform/... ./sink/... ./store/... ./resctrl/emu/... ./agent/... ./perf/...
# ... and the twin's concurrent paths: sim.StepAll, schedulers side by side in bench.RunAll
go test -race -count=1 -timeout 20m -run 'TestStepAllIsStepByStep|TestRunAllSideBySide' ./sim ./bench
# every fuzz target for a few seconds of fresh inputs (the corpora ran above)
FUZZTIME="${FUZZTIME:-5s}" bash scripts/fuzz.sh
# The Kubernetes module (k8s/, its own go.mod): its pure packages need no cluster.
# -mod=mod: k8s/ requires colo through a replace, so a module the main module adds must not
# break it before k8s/go.sum is refreshed (go mod tidy in k8s/).
(cd k8s && export GOFLAGS="${GOFLAGS:-} -mod=mod" && go vet ./nodestate ./placement ./experiment ./scoring ./publish ./cmd/colo-kube && go test -count=1 ./nodestate ./placement ./experiment ./scoring ./publish ./cmd/colo-kube)
# Kubernetes end to end (docs/kubernetes.md): API-level tests against a real API server, the
# kwok experiment (colo vs the stock scheduler), a real kubelet + containerd node with colo's
# agent. Its last stdout line is one JSON object. A failed background build is retried
# (and reported) by k8s-e2e.sh itself.
wait "$k8s_build" || { echo "test.sh: background scripts/k8s-build.sh failed:" >&2; tail -20 "$k8s_build_log" >&2; }
bash scripts/k8s-e2e.sh
