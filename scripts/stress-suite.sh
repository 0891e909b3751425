#!/usr/bin/env bash
# Runs the README's test command (bash scripts/test.sh, with CI=true as .ci/run sets it)
# N times in a row while `stress-ng --cpu 4` loads the machine, to show the suite does not
# flake under a parallel CPU load (issue #13: ten consecutive runs must all pass).
#
#   bash scripts/stress-suite.sh [N] [OUTDIR]      N defaults to 10, OUTDIR to a new temp dir
#
# OUTDIR/results.tsv gets one line per run: run number, start (UTC), duration in seconds,
# pass/fail, exit code, 1-minute load average at the start and at the end. The loop stops
# at the first failing run and keeps its whole log as OUTDIR/run-K.log (passing runs'
# logs are deleted unless KEEP_LOGS=1). Exit 0 when all N passed, 1 at a failing run,
# 2 on bad arguments. stress-ng is stopped when the script ends, however it ends.
set -euo pipefail
cd "$(dirname "$0")/.."

n="${1:-10}"
case "$n" in
'' | *[!0-9]* | 0)
  echo "usage: $0 [N>0] [OUTDIR]" >&2
  exit 2
  ;;
esac
out="${2:-$(mktemp -d /tmp/colo-stress-suite.XXXXXX)}"
mkdir -p "$out"
results="$out/results.tsv"
[ -s "$results" ] || printf 'run\tstart_utc\tseconds\tresult\texit\tload_start\tload_end\n' >"$results"

command -v stress-ng >/dev/null || bash scripts/setup.sh
export CI="${CI:-true}"

stress-ng --cpu 4 --quiet &
stress_pid=$!
stop_stress() {
  kill -TERM "$stress_pid" 2>/dev/null || true
  wait "$stress_pid" 2>/dev/null || true
}
trap stop_stress EXIT
echo "stress-ng --cpu 4 running (pid $stress_pid); $n runs of scripts/test.sh; results in $results" >&2

load() { cut -d' ' -f1 /proc/loadavg; }
for i in $(seq 1 "$n"); do
  log="$out/run-$i.log"
  start=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  l0=$(load)
  t0=$(date +%s)
  set +e
  bash scripts/test.sh >"$log" 2>&1
  code=$?
  set -e
  secs=$(($(date +%s) - t0))
  result=pass
  [ "$code" -eq 0 ] || result=fail
  printf '%d\t%s\t%d\t%s\t%d\t%s\t%s\n' "$i" "$start" "$secs" "$result" "$code" "$l0" "$(load)" >>"$results"
  echo "run $i/$n: $result (exit $code) in ${secs}s" >&2
  if [ "$result" = fail ]; then
    echo "stopped at the first failure; its log: $log" >&2
    grep -E '^(--- FAIL|FAIL|panic:)' "$log" | head -40 >&2 || true
    exit 1
  fi
  [ "${KEEP_LOGS:-0}" = 1 ] || rm -f "$log"
done
echo "all $n runs passed under stress-ng --cpu 4; durations in $results" >&2
