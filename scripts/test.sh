#!/usr/bin/env bash
# The whole test suite: set-up, vet, tests. CI runs exactly this (see .ci/run and README).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
go vet ./...
# staticcheck from the Go module proxy, built once into a cache (CI machines start cold)
sc="$HOME/.cache/colo-staticcheck/staticcheck"
[ -x "$sc" ] || GOBIN="$(dirname "$sc")" go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
# every default check gates, U1000 (unused code) included: dead code is deleted
"$sc" ./...
go test -count=1 -timeout 40m ./...
# the race detector on the packages that run goroutines
go test -race -count=1 -timeout 40m ./runtime/... ./platform/... ./sink/... ./store/... ./resctrl/emu/... ./agent/...
# every fuzz target for a few seconds of fresh inputs (the corpora ran above)
FUZZTIME="${FUZZTIME:-5s}" bash scripts/fuzz.sh
# The Kubernetes module (k8s/, its own go.mod): its pure packages need no cluster.
# -mod=mod: k8s/ requires colo through a replace, so a module the main module adds must not
# break it before k8s/go.sum is refreshed (go mod tidy in k8s/).
(cd k8s && export GOFLAGS="${GOFLAGS:-} -mod=mod" && go vet ./nodestate ./placement ./experiment ./scoring ./publish ./cmd/colo-kube && go test -count=1 ./nodestate ./placement ./experiment ./scoring ./publish ./cmd/colo-kube)
