#!/bin/sh
# Scaling table of the exact clustering search (optc-stp, optc-unf) for docs/partition.md:
# applications × bandwidth model × objective → time, nodes, proven gap, from
# `go test -bench Optc` (policy/search_bench_test.go), with the machine and its load.
#   scripts/partition-scaling.sh                 # 8, 12, 16, 20 applications
#   COLO_OPTC_APPS=8,12 scripts/partition-scaling.sh
#   COLO_OPTC_LIMIT=60s scripts/partition-scaling.sh   # time limit per search (default 10m)
set -eu
cd "$(dirname "$0")/.."
cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
echo "Machine: $(nproc) CPUs ($cpu), $(uname -sr), $(go version | cut -d' ' -f3)."
echo "Load average before: $(cut -d' ' -f1-3 /proc/loadavg)."
echo
echo "| apps | model | policy | time | nodes | gap |"
echo "|---|---|---|---|---|---|"
bin=$(mktemp)
trap 'rm -f "$bin"' EXIT
go test -c -o "$bin" ./policy
# sh reads the lines as each search ends (mawk would hold them until the end)
(cd policy && "$bin" -test.run XXX -test.bench '^BenchmarkOptc$' -test.benchtime 1x -test.timeout 6h) |
	while IFS= read -r line; do printf '%s\n' "$line" | awk '
/^BenchmarkOptc\// {
	split($1, p, "/"); sub("model=", "", p[2]); sub("apps=", "", p[3]); sub("-[0-9]+$", "", p[4])
	pol = "optc-" p[4]
	model = p[2]; if (model != "none") model = model " 35,000"
	t = "?"; nodes = "?"; gap = "?"
	for (i = 2; i < NF; i++) {
		if ($(i+1) == "ns/op") { s = $i / 1e9; t = (s < 1 ? sprintf("%.0f ms", s * 1000) : sprintf("%.1f s", s)) }
		if ($(i+1) == "nodes") nodes = sprintf("%.0f", $i)
		if ($(i+1) == "gap%") gap = ($i == 0 ? "0 (optimal)" : sprintf("%.3g %%", $i))
	}
	printf "| %s | %s | %s | %s | %s | %s |\n", p[3], model, pol, t, nodes, gap
}'
	done
echo
echo "Load average after: $(cut -d' ' -f1-3 /proc/loadavg)."
