#!/usr/bin/env bash
# Builds (once) the Kubernetes binaries the k8s tiers need and caches them in
# $HOME/.cache/colo-k8s/<version>/bin:
#   kube-apiserver, kube-scheduler (stock, for the 'default' comparison), kubelet and
#   kube-controller-manager (the real-node tier), etcd (3.6, from a three-line main
#   calling etcdmain.Main), kwok, trimaran-scheduler (scheduler-plugins' own binary, for
#   the experiment's Trimaran arms; optional).
# Only what is missing is built: the cache is keyed by the versions below alone, so a
# change in colo (its code or its go.mod) never rebuilds these binaries (none of them
# contains colo code; colo's own scheduler, colo-kube-scheduler, is built from k8s/ by
# scripts/k8s-e2e.sh through the Go build cache). Everything comes from the Go module
# proxy (k8s.io/kubernetes is built through a wrapper module that replaces every staging
# module k8s.io/X => k8s.io/X v0.<minor>.<patch>).
#
# Usage: scripts/k8s-build.sh [--print-bin]
#   K8S_VERSION (default 1.36.3), ETCD_VERSION (3.6.16), KWOK_VERSION (0.8.0)
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-1.36.3}
ETCD_VERSION=${ETCD_VERSION:-3.6.16}
KWOK_VERSION=${KWOK_VERSION:-0.8.0}
STAGING_VERSION=v0.${K8S_VERSION#*.}
REPO=$(cd "$(dirname "$0")/.." && pwd)
ROOT=${COLO_K8S_CACHE:-$HOME/.cache/colo-k8s}/$K8S_VERSION
BIN=$ROOT/bin

if [[ "${1:-}" == "--print-bin" ]]; then echo "$BIN"; exit 0; fi

mkdir -p "$BIN" "$ROOT/src/kube" "$ROOT/src/etcd"
log() { echo "[k8s-build $(date -u +%H:%M:%S)] $*" >&2; }

want=(kube-apiserver kube-scheduler kubelet kube-controller-manager)

# Writes the wrapper module's go.mod (stdout). When k8s/go.mod requires this Kubernetes
# version, the wrapper is k8s/go.mod itself (its requirements and replacements, colo's
# path made absolute): the kube binaries then compile every shared package at exactly the
# versions k8s/ selects, so that on a cold machine colo-kube-scheduler, built from k8s/
# right after, finds them in the Go build cache. Otherwise (another K8S_VERSION) it
# requires k8s.io/kubernetes and replaces each staging module with its published version.
kube_gomod() {
  if grep -qE "^\s*k8s\.io/kubernetes v$K8S_VERSION\s*$" "$REPO/k8s/go.mod"; then
    sed -e 's#^module .*#module colo.local/k8sbuild#' -e "s#^\(\s*\)colo => \.\./*\s*\$#\1colo => $REPO#" "$REPO/k8s/go.mod"
    return
  fi
  local mod
  mod=$(go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  [[ -f "$mod" ]] || { log "cannot download k8s.io/kubernetes@v$K8S_VERSION"; return 1; }
  echo "module colo.local/k8sbuild"
  echo
  grep '^go ' "$mod"
  echo
  echo "require k8s.io/kubernetes v$K8S_VERSION"
  echo
  echo "replace ("
  grep -E '^\s*k8s\.io/[a-z0-9-]+ => \./staging/src/' "$mod" | awk '{print $1}' |
    grep -v '^k8s.io/sample-cli-plugin$' |
    while read -r m; do echo "	$m => $m $STAGING_VERSION"; done
  echo ")"
}

missing=()
for b in "${want[@]}"; do [[ -x "$BIN/$b" ]] || missing+=("$b"); done
if ((${#missing[@]})); then
  cd "$ROOT/src/kube"
  kube_gomod > go.mod.new
  if ! cmp -s go.mod.new go.mod.src 2>/dev/null; then
    cp go.mod.new go.mod; cp go.mod.new go.mod.src; rm -f go.sum
    if grep -q '^module colo.local/k8sbuild' go.mod && grep -q "=> $REPO\$" go.mod; then cp "$REPO/k8s/go.sum" go.sum; fi
  fi
  rm -f go.mod.new
  echo 'package main' > doc.go
  # one go build for all of them: the shared packages compile once, on every core
  log "building ${missing[*]} (k8s.io/kubernetes v$K8S_VERSION)"
  t0=$(date +%s)
  tmp=$(mktemp -d "$ROOT/.bin.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  pkgs=(); for b in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
  GOFLAGS=-mod=mod go build -ldflags='-s -w' -o "$tmp/" "${pkgs[@]}"
  for b in "${missing[@]}"; do mv "$tmp/$b" "$BIN/$b"; done
  rm -rf "$tmp"
  log "built ${missing[*]} in $(( $(date +%s) - t0 ))s"
fi

if [[ ! -x "$BIN/etcd" ]]; then
  cd "$ROOT/src/etcd"
  log "building etcd v$ETCD_VERSION"
  t0=$(date +%s)
  cat > main.go <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  if [[ ! -f go.mod ]] || ! grep -q "go.etcd.io/etcd/server/v3 v$ETCD_VERSION" go.mod; then
    rm -f go.mod go.sum
    go mod init colo.local/etcdbuild >/dev/null 2>&1
    go get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" >/dev/null
    go mod tidy >/dev/null
  fi
  go build -ldflags='-s -w' -o "$BIN/etcd.tmp" .
  mv "$BIN/etcd.tmp" "$BIN/etcd"
  log "built etcd in $(( $(date +%s) - t0 ))s"
fi

if [[ ! -x "$BIN/kwok" ]]; then
  log "building kwok v$KWOK_VERSION"
  t0=$(date +%s)
  GOBIN="$BIN" go install -ldflags='-s -w' "sigs.k8s.io/kwok/cmd/kwok@v$KWOK_VERSION"
  log "built kwok in $(( $(date +%s) - t0 ))s"
fi

# Trimaran (TargetLoadPacking, LoadVariationRiskBalancing): scheduler-plugins' own
# scheduler binary. Its v0.34.7 does not compile against Kubernetes 1.36 (it uses
# k8s.io/kubernetes/pkg/scheduler/framework.Handle, moved to k8s.io/kube-scheduler), so it
# is built at the Kubernetes 1.34.7 its go.mod pins, in a wrapper module with its replace
# block; k8s.io/csi-translation-lib v0.34.7 is not served by the module proxy, so that one
# module is taken at the nearest served version, $STAGING_VERSION. A failure here only
# skips the Trimaran arms of the experiment.
TRIMARAN_VERSION=${TRIMARAN_VERSION:-0.34.7}
if [[ ! -x "$BIN/trimaran-scheduler" ]]; then
  mkdir -p "$ROOT/src/trimaran"
  cd "$ROOT/src/trimaran"
  log "building trimaran-scheduler (sigs.k8s.io/scheduler-plugins v$TRIMARAN_VERSION)"
  t0=$(date +%s)
  if mod=$(go mod download -json "sigs.k8s.io/scheduler-plugins@v$TRIMARAN_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p') && [[ -f "$mod" ]]; then
    { echo "module colo.local/trimaranbuild"; echo; grep '^go ' "$mod"; echo
      echo "require sigs.k8s.io/scheduler-plugins v$TRIMARAN_VERSION"; echo
      sed -n '/^replace (/,/^)/p' "$mod" | sed "s#^\(\s*k8s.io/csi-translation-lib => k8s.io/csi-translation-lib\) v.*#\1 $STAGING_VERSION#"
    } > go.mod
    echo 'package main' > doc.go
    if GOFLAGS=-mod=mod go build -ldflags='-s -w' -o "$BIN/trimaran-scheduler.tmp" sigs.k8s.io/scheduler-plugins/cmd/scheduler; then
      mv "$BIN/trimaran-scheduler.tmp" "$BIN/trimaran-scheduler"
      log "built trimaran-scheduler in $(( $(date +%s) - t0 ))s"
    else
      log "trimaran-scheduler did not build: the experiment skips the Trimaran arms"
    fi
  else
    log "cannot download sigs.k8s.io/scheduler-plugins@v$TRIMARAN_VERSION: the experiment skips the Trimaran arms"
  fi
fi

# kwok needs stages; the fast node and pod stages ship in its module.
if [[ ! -f "$BIN/kwok-stages.yaml" ]]; then
  dir=$(cd "$ROOT/src/etcd" && go mod download -json "sigs.k8s.io/kwok@v$KWOK_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  for f in node/fast/node-initialize.yaml pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
    cat "$dir/kustomize/stage/$f"; echo "---"
  done > "$BIN/kwok-stages.yaml.tmp"
  mv "$BIN/kwok-stages.yaml.tmp" "$BIN/kwok-stages.yaml"
fi

log "all binaries present in $BIN"
