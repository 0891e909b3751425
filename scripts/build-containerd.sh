#!/usr/bin/env bash
# Builds containerd v2 (which has NRI; Debian 12's containerd 1.6 does not) and runc from
# the Go module proxy into a cache, only when the binaries are missing:
#
#   $HOME/.cache/colo-containerd/<containerd version>-runc<runc version>/bin/
#       containerd  ctr  containerd-shim-runc-v2  runc
#
# Prints that bin directory on stdout (last line). Other scripts and tests (colo agent's
# NRI test, the k8s module) find it the same way: COLO_CONTAINERD_BIN overrides it, else
# `scripts/build-containerd.sh` is run and its last line used. Keep the path stable.
# Needs: go, gcc and libseccomp-dev (runc is built with the seccomp tag; installed here
# when missing). Idempotent; a partial build never counts as done (the bin directory is
# filled in a temporary directory and renamed).
set -euo pipefail
CONTAINERD_VERSION="${COLO_CONTAINERD_VERSION:-v2.2.9}"
RUNC_VERSION="${COLO_RUNC_VERSION:-v1.4.3}"
cache="${HOME}/.cache/colo-containerd/${CONTAINERD_VERSION}-runc${RUNC_VERSION}"
bin="$cache/bin"
want=(containerd ctr containerd-shim-runc-v2 runc)
ok=1
for b in "${want[@]}"; do [ -x "$bin/$b" ] || ok=0; done
if [ "$ok" = 1 ]; then echo "$bin"; exit 0; fi

if ! dpkg-query -W -f='${Status}' libseccomp-dev 2>/dev/null | grep -q "install ok installed"; then
  echo "build-containerd: installing libseccomp-dev gcc pkg-config" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends libseccomp-dev gcc libc6-dev pkg-config >/dev/null
fi
mkdir -p "$cache"
tmp="$(mktemp -d "$cache/.build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
# Build outside any module so the project's go.mod does not interfere.
cd "$tmp"
export GOFLAGS=-buildvcs=false GOBIN="$tmp/bin"
echo "build-containerd: containerd $CONTAINERD_VERSION (takes minutes on 2 cores)" >&2
CGO_ENABLED=0 go install -tags "no_btrfs no_devmapper no_zfs" \
  "github.com/containerd/containerd/v2/cmd/containerd@$CONTAINERD_VERSION" \
  "github.com/containerd/containerd/v2/cmd/ctr@$CONTAINERD_VERSION" \
  "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION"
echo "build-containerd: runc $RUNC_VERSION" >&2
CGO_ENABLED=1 go install -tags seccomp "github.com/opencontainers/runc@$RUNC_VERSION"
for b in "${want[@]}"; do [ -x "$tmp/bin/$b" ] || { echo "build-containerd: $b missing after build" >&2; exit 1; }; done
rm -rf "$bin"
mv "$tmp/bin" "$bin"
echo "$bin"
