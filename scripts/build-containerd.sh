#!/usr/bin/env bash
# Builds containerd v2 (which has NRI; Debian 12's containerd 1.6 does not), runc and
# crictl from the Go module proxy into a cache, only the binaries that are missing:
#
#   $HOME/.cache/colo-containerd/<containerd version>-runc<runc version>/bin/
#       containerd  ctr  containerd-shim-runc-v2  runc  crictl
#
# Prints that bin directory on stdout (last line). Other scripts and tests (colo agent's
# NRI test, the k8s module) find it the same way: COLO_CONTAINERD_BIN overrides it, else
# `scripts/build-containerd.sh` is run and its last line used. Keep the path stable.
# Needs: go, gcc and libseccomp-dev (runc is built with the seccomp tag; installed here
# when missing). Idempotent; a partial build never counts as done (each binary is built
# in a temporary directory and renamed into place).
set -euo pipefail
CONTAINERD_VERSION="${COLO_CONTAINERD_VERSION:-v2.2.9}"
RUNC_VERSION="${COLO_RUNC_VERSION:-v1.4.3}"
CRICTL_VERSION="${COLO_CRICTL_VERSION:-v1.34.0}"
cache="${HOME}/.cache/colo-containerd/${CONTAINERD_VERSION}-runc${RUNC_VERSION}"
bin="$cache/bin"
if [ -n "${COLO_CONTAINERD_BIN:-}" ]; then echo "$COLO_CONTAINERD_BIN"; exit 0; fi
mkdir -p "$bin"
missing() { for b in "$@"; do [ -x "$bin/$b" ] || return 0; done; return 1; }

tmp="$(mktemp -d "$cache/.build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
# Build outside any module so the project's go.mod does not interfere.
cd "$tmp"
export GOFLAGS=-buildvcs=false GOBIN="$tmp/bin"
install() { # install BINARY...: move built binaries into the cache
  for b in "$@"; do [ -x "$tmp/bin/$b" ] || { echo "build-containerd: $b missing after build" >&2; exit 1; }; mv "$tmp/bin/$b" "$bin/$b"; done
}
if missing containerd ctr containerd-shim-runc-v2; then
  echo "build-containerd: containerd $CONTAINERD_VERSION (takes minutes on 2 cores)" >&2
  CGO_ENABLED=0 go install -tags "no_btrfs no_devmapper no_zfs" \
    "github.com/containerd/containerd/v2/cmd/containerd@$CONTAINERD_VERSION" \
    "github.com/containerd/containerd/v2/cmd/ctr@$CONTAINERD_VERSION" \
    "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION"
  install containerd ctr containerd-shim-runc-v2
fi
if missing runc; then
  if ! dpkg-query -W -f='${Status}' libseccomp-dev 2>/dev/null | grep -q "install ok installed"; then
    echo "build-containerd: installing libseccomp-dev gcc pkg-config" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends libseccomp-dev gcc libc6-dev pkg-config >/dev/null
  fi
  echo "build-containerd: runc $RUNC_VERSION" >&2
  CGO_ENABLED=1 go install -tags seccomp "github.com/opencontainers/runc@$RUNC_VERSION"
  install runc
fi
if missing crictl; then
  echo "build-containerd: crictl $CRICTL_VERSION" >&2
  CGO_ENABLED=0 go install "sigs.k8s.io/cri-tools/cmd/crictl@$CRICTL_VERSION"
  install crictl
fi
echo "$bin"
