#!/usr/bin/env bash
# sim-speed.sh — the simulated twin's speed table of docs/sim.md (markdown on stdout).
# Go benchmarks (go test -bench), CPU time (getrusage: user + system, every goroutine)
# beside wall time, with the machine and its load average: on a loaded machine wall time
# measures the queue for a core, CPU time stays comparable.
set -euo pipefail
cd "$(dirname "$0")/.."
cpus=$(nproc)
model=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
go test -count=1 -run '^$' -bench 'Step32' -benchtime 20000x -cpu 1 ./sim > "$tmp/sim1"
go test -count=1 -run '^$' -bench 'Hour32' -benchtime 3x -cpu 1 ./sim >> "$tmp/sim1"
go test -count=1 -run '^$' -bench 'FleetHour' -benchtime 1x -cpu "$cpus" ./sim > "$tmp/fleet"
go test -count=1 -run '^$' -bench 'ThesisCompare' -benchtime 2x -cpu "$cpus" ./cmd/colo > "$tmp/thesis"
load1=$(cut -d' ' -f1-3 /proc/loadavg)
# metric VALUE of UNIT on the line of benchmark NAME in FILE
m() { awk -v n="$2" -v u="$3" '$1 ~ "^Benchmark"n"(-[0-9]+)?$" { for (i = 2; i < NF; i++) if ($(i+1) == u) print $i }' "$1"; }
s() { awk -v x="$1" -v d="$2" 'BEGIN { printf "%.3g", x / d }'; }
echo "Machine: $cpus × $model; load average $load0 before, $load1 after ($(date -u +%Y-%m-%d))."
echo
echo "| benchmark | what | wall | CPU | × real time (wall) | × real time (CPU) |"
echo "|---|---|---|---|---|---|"
echo "| \`sim\` BenchmarkStep32 | one 100 ms step, 32 workloads, 2 sockets (-cpu 1) | $(s "$(m "$tmp/sim1" Step32 ns/op)" 1000) µs | $(s "$(m "$tmp/sim1" Step32 cpu-ns/op)" 1000) µs | | |"
echo "| \`sim\` BenchmarkHour32 | 1 h at 100 ms steps, same 32 workloads (-cpu 1) | $(s "$(m "$tmp/sim1" Hour32 ns/op)" 1e9) s | $(s "$(m "$tmp/sim1" Hour32 cpu-ns/op)" 1e9) s | $(m "$tmp/sim1" Hour32 x-realtime) | $(m "$tmp/sim1" Hour32 x-realtime-cpu) |"
echo "| \`sim\` BenchmarkFleetHour | 1000 twins × 1 h at 1 s steps, StepAll on $cpus workers, churn | $(s "$(m "$tmp/fleet" FleetHour ns/op)" 1e9) s | $(s "$(m "$tmp/fleet" FleetHour cpu-ns/op)" 1e9) s | $(m "$tmp/fleet" FleetHour node-x-realtime-wall) node-h/h | $(m "$tmp/fleet" FleetHour node-x-realtime-cpu) node-h/h |"
echo "| \`cmd/colo\` BenchmarkThesisCompare | README's first command in process: 2 × 1 h (least-loaded, dynamic side by side), run directory written | $(s "$(m "$tmp/thesis" ThesisCompare ns/op)" 1e9) s | $(s "$(m "$tmp/thesis" ThesisCompare cpu-ns/op)" 1e9) s | $(m "$tmp/thesis" ThesisCompare x-realtime-wall) | $(m "$tmp/thesis" ThesisCompare x-realtime-cpu) |"
