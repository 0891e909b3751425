#!/usr/bin/env bash
# Runs every Go fuzz target (func FuzzXxx in *_test.go) for a short fixed time each
# (FUZZTIME, default 5s): the checked-in corpora (testdata/fuzz) and seeds run in the
# normal test suite; this adds fresh random inputs. CI runs it from scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-5s}"
grep -rl --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' . | grep -v '^./k8s/' | sort |
while read -r file; do
  pkg="./$(dirname "${file#./}")"
  for target in $(grep -oE '^func Fuzz[A-Za-z0-9_]+' "$file" | sed 's/^func //'); do
    echo "fuzz: $pkg $target ($fuzztime)" >&2
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"
  done
done
