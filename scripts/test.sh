#!/usr/bin/env bash
# The whole test suite: set-up, vet, tests. CI runs exactly this (see .ci/run and README).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
go vet ./...
go test -count=1 -timeout 40m ./...
