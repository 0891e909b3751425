#!/usr/bin/env bash
# colo on Kubernetes, end to end, on a throw-away control plane (no cluster needed):
#   tier 1: API-level tests of the scheduler plugin (inside the real kube-scheduler) and
#           of the extender, against a real kube-apiserver with the NodeInterference CRD;
#   tier 2: the kwok experiment: the same seeded trace of SPEC CPU2017 tenants placed on
#           kwok nodes by the stock kube-scheduler and by colo's profile;
#   tier 3: a real node (containerd + NRI + runc + kubelet): not built yet, reported as
#           such (real_node_ok false with the reason).
# Builds or reuses the cached Kubernetes binaries (scripts/k8s-build.sh). Progress goes to
# stderr; the last line of stdout is ONE JSON object. Exit 0 only when tiers 1 and 2 pass
# and colo beats the default scheduler on P90 predicted slowdown and priority tenants
# over target, placing as many pods.
#   K8S_E2E_NODES (120), K8S_E2E_PODS (300), K8S_E2E_SEED (42)
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
if (cd k8s && COLO_KUBE_SCHEDULER="$work/colo-kube-scheduler" CI=true go test -count=1 -v ./apitest) > "$work/tier1.log" 2>&1; then
  api_ok=true
fi
grep -E '^(=== RUN|--- |PASS|FAIL|ok|\s+\S+_test.go)' "$work/tier1.log" >&2 || true

log "tier 2: kwok experiment"
exp='{}'
if out=$("$work/colo-kube" experiment --scheduler "$work/colo-kube-scheduler" --repeat --throughput \
    --nodes "${K8S_E2E_NODES:-120}" --pods "${K8S_E2E_PODS:-300}" --seed "${K8S_E2E_SEED:-42}"); then
  exp=$out
else
  log "kwok experiment failed"
fi

log "tier 3: real node"
real_note="not attempted (time): containerd v2+runc+crictl (scripts/build-containerd.sh), kubelet (cached) and colo agent --runtime nri exist; the kubelet configuration for this host and its start-up in testcluster are missing (docs/kubernetes.md, Limits)"

total_s=$(( $(date +%s) - t0 ))
extra="\"api_tests_ok\":$api_ok,\"real_node_ok\":false,\"real_node\":\"$real_note\",\"build_seconds\":$build_s,\"total_seconds\":$total_s"
if [[ "$exp" == "{}" ]]; then
  echo "{$extra}"
else
  echo "${exp%\}},$extra}"
fi
[[ "$api_ok" == true ]] && [[ "$exp" == *'"colo_beats_default":true'* ]] && [[ "$exp" == *'"colo_matches_sim":true'* ]] && [[ "$exp" == *'"colo_deterministic":true'* ]]
