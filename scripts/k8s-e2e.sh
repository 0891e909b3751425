#!/usr/bin/env bash
# colo on Kubernetes, end to end, on a throw-away control plane (no cluster needed):
#   tier 1: API-level tests of the scheduler plugin (inside the real kube-scheduler) and
#           of the extender, against a real kube-apiserver with the NodeInterference CRD;
#   tier 2: the kwok experiment: one seeded churn trace (pods arriving and finishing) on
#           kwok nodes backed by colo's simulated machine (k8s/twin), placed by each arm:
#           the stock kube-scheduler, Trimaran TargetLoadPacking and
#           LoadVariationRiskBalancing (scheduler-plugins' binary, if it built), colo's
#           profile and colo added to the stock profile; the twin measures every pod;
#   tier 3: a real node: containerd (NRI) + runc + a kubelet registered to a throw-away
#           control plane with kube-controller-manager and colo-kube-scheduler; colo agent
#           --runtime nri on the resctrl emulator (FUSE); Deployments with colo.io/class
#           annotations get their resctrl groups (k8s/apitest TestRealNode; needs root,
#           dockerd, FUSE and scripts/build-containerd.sh's binaries).
# Builds or reuses the cached Kubernetes binaries (scripts/k8s-build.sh). Progress goes to
# stderr; the last line of stdout is ONE JSON object. Exit 0 only when the three tiers
# pass and colo beats the default scheduler on the twin's P90 slowdown and priority-met
# share, placing as many pods, and colo's kwok placements match its simulation and repeat.
#   K8S_E2E_NODES (40), K8S_E2E_PODS (10 per node), K8S_E2E_SEED (42). The 1 000-node run
#   is one command (docs/kubernetes.md), not part of this script.
set -euo pipefail
cd "$(dirname "$0")/.."
log() { echo "[k8s-e2e $(date -u +%H:%M:%S)] $*" >&2; }

# k8s/ requires colo through a replace: a module the main module adds is fetched here even
# before k8s/go.sum is refreshed.
export GOFLAGS="${GOFLAGS:-} -mod=mod"
t0=$(date +%s)
bash scripts/k8s-build.sh >&2
export COLO_K8S_BIN; COLO_K8S_BIN=$(bash scripts/k8s-build.sh --print-bin)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log "building colo-kube and colo-kube-scheduler"
(cd k8s && go build -o "$work/" ./cmd/colo-kube ./cmd/colo-kube-scheduler) >&2
build_s=$(( $(date +%s) - t0 ))

log "tier 1: API-level tests (plugin in kube-scheduler, extender)"
api_ok=false
if (cd k8s && COLO_KUBE_SCHEDULER="$work/colo-kube-scheduler" CI=true go test -count=1 -v -skip TestRealNode ./apitest) > "$work/tier1.log" 2>&1; then
  api_ok=true
fi
grep -E '^(=== RUN|--- |PASS|FAIL|ok|\s+\S+_test.go)' "$work/tier1.log" >&2 || true

log "tier 2: kwok experiment"
exp='{}'
trim=""
[[ -x "$COLO_K8S_BIN/trimaran-scheduler" ]] && trim="$COLO_K8S_BIN/trimaran-scheduler"
if out=$("$work/colo-kube" experiment --scheduler "$work/colo-kube-scheduler" --trimaran-scheduler "$trim" --repeat \
    --nodes "${K8S_E2E_NODES:-40}" --pods "${K8S_E2E_PODS:-0}" --seed "${K8S_E2E_SEED:-42}"); then
  exp=$out
else
  log "kwok experiment failed"
fi

log "tier 3: real node (containerd + NRI + runc + kubelet, colo agent on the resctrl emulator)"
real_ok=false
t3=$(date +%s)
if (cd k8s && COLO_KUBE_SCHEDULER="$work/colo-kube-scheduler" CI=true go test -count=1 -v -timeout 20m -run TestRealNode ./apitest) > "$work/tier3.log" 2>&1; then
  real_ok=true
  real_note="Deployments db (priority, 2 pods) and etl (batch) scheduled by colo-kube-scheduler, run by the kubelet on containerd, given their resctrl groups by colo agent --runtime nri, published as NodeInterference, released on scale-down"
else
  # the first failure line, as JSON-safe text
  real_note=$(grep -m1 -E '_test\.go:[0-9]+:|panic:|FAIL' "$work/tier3.log" | tr -d '"\\' | tr '\t' ' ' | cut -c1-300)
  real_note="failed: ${real_note:-see the log}"
fi
grep -E '^(=== RUN|--- |PASS|FAIL|ok|\s+\S+_test.go)' "$work/tier3.log" >&2 || true
[[ "$real_ok" == true ]] || tail -40 "$work/tier3.log" >&2
real_s=$(( $(date +%s) - t3 ))

total_s=$(( $(date +%s) - t0 ))
extra="\"api_tests_ok\":$api_ok,\"real_node_ok\":$real_ok,\"real_node\":\"$real_note\",\"real_node_seconds\":$real_s,\"build_seconds\":$build_s,\"total_seconds\":$total_s"
if [[ "$exp" == "{}" ]]; then
  echo "{$extra}"
else
  echo "${exp%\}},$extra}"
fi
[[ "$api_ok" == true ]] && [[ "$real_ok" == true ]] && [[ "$exp" == *'"colo_beats_default":true'* ]] && [[ "$exp" == *'"colo_matches_sim":true'* ]] && [[ "$exp" == *'"colo_deterministic":true'* ]]
