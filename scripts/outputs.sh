#!/usr/bin/env bash
# Behaviour-unchanged check for refactors and speed-ups: records colo's deterministic outputs
# (thesis scenarios, every controller example under compare, compare/run --repeat, eval,
# partition with exact optima, classify, predict validate) and diffs two recordings with the
# timing fields removed (wall times and the parallel search's node count vary run to run).
#
#   scripts/outputs.sh record COLO_BINARY OUTDIR   # ~2 min on the 2-core VM
#   scripts/outputs.sh diff OUTDIR_A OUTDIR_B      # exit 0 and IDENTICAL, or the differences
#
# Typical use: build colo at the base commit and at yours, record both, diff.
set -u
cd "$(dirname "$0")/.."
case "${1:-}" in
record)
  [ $# -eq 3 ] || { echo "usage: $0 record COLO_BINARY OUTDIR" >&2; exit 2; }
  COLO=$(readlink -f "$2"); OUT=$3; mkdir -p "$OUT"
  r() { local name=$1; shift; "$COLO" "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"; echo "rc=$?" >> "$OUT/$name.out"; }
  r thesis-json thesis --json
  r thesis-md thesis
  for f in examples/thesis/low-demand.yaml examples/thesis/high-utilization.yaml examples/thesis/exceeding-demand.yaml; do
    tmp=$(mktemp -d); r "run-$(basename "$f" .yaml)" run "$f" --compare least-loaded,dynamic --out "$tmp/r" -q; rm -rf "$tmp"
  done
  for f in examples/dcat/*.yaml examples/vp/*.yaml examples/lfoc/*.yaml; do
    r "compare-$(basename "$(dirname "$f")")-$(basename "$f" .yaml)" compare "$f" --json -q
  done
  r compare-repeat compare examples/dcat/fig15-mlr-mload.yaml --repeat 3 --json -q
  r run-repeat run examples/thesis/low-demand.yaml --repeat 3 --json -q
  r eval eval --machine skx-6138 --workload sphinx306,lbm06,libquantum06,applu00,soplex06,milc06 \
    --masks 0x600,0x180,0x40,0x20,0x1e,0x1 --bw-model stalls --max-bw 35000
  r partition partition --workloads data/pbbcache-skylake/workloads.csv --policy ucp,lfoc+,kpart,dunn,cpa,lfoc --json
  r partition-opt partition --workloads data/pbbcache-skylake/workloads.csv --policy opt-stp,optc-unf --json
  r classify classify --thresholds pbbcache --format json
  r predict-validate predict validate --json
  ;;
diff)
  [ $# -eq 3 ] || { echo "usage: $0 diff OUTDIR_A OUTDIR_B" >&2; exit 2; }
  norm() { sed -E 's/"(seconds|wall_seconds|nodes|elapsed[a-z_]*|duration_ms|took[a-z_]*)": *[0-9.e+-]+/"\1":X/g; s/wall time .*/wall time X/; s#(runs|/tmp)/[A-Za-z0-9._/-]+#PATH#g' "$1"; }
  rc=0
  for f in "$2"/*.out; do
    b=$(basename "$f")
    if [ ! -f "$3/$b" ]; then echo "MISSING $b in $3"; rc=1; continue; fi
    if ! diff -q <(norm "$f") <(norm "$3/$b") > /dev/null; then echo "DIFF $b"; diff <(norm "$f") <(norm "$3/$b") | head -5; rc=1; fi
  done
  [ $rc = 0 ] && echo IDENTICAL; exit $rc
  ;;
*) echo "usage: $0 record COLO_BINARY OUTDIR | diff OUTDIR_A OUTDIR_B" >&2; exit 2 ;;
esac
