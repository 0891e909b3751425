#!/usr/bin/env bash
# Installs what colo's tests and real-host runs need on a fresh Debian 12 machine, and
# starts dockerd when none answers. Idempotent: safe to run again.
set -euo pipefail
need=()
for pkg in docker.io fuse3 chromium influxdb stress-ng prometheus gcc libc6-dev intel-cmt-cat; do  # gcc: go test -race (cgo); intel-cmt-cat: pqos
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# Debian's influxdb package starts a server on install where systemd runs; colo's tests
# start their own on loopback, so stop a packaged one that may hold port 8086.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet influxdb 2>/dev/null; then
  systemctl stop influxdb || true
fi
# Likewise Debian's prometheus package (port 9090): colo agent's tests run their own on a
# free loopback port with a temporary configuration.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet prometheus 2>/dev/null; then
  systemctl stop prometheus || true
fi
if ! docker info >/dev/null 2>&1; then
  echo "setup: starting dockerd" >&2
  (dockerd >/var/log/colo-dockerd.log 2>&1 &)
  for i in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  docker info >/dev/null 2>&1 || { echo "setup: dockerd did not answer in 60 s; see /var/log/colo-dockerd.log" >&2; exit 1; }
fi

# containerd v2 + runc + crictl for colo agent's NRI test (and the k8s module), built from
# the Go module proxy into $HOME/.cache/colo-containerd only when missing.
bash "$(dirname "$0")/build-containerd.sh" >/dev/null

# HiGHS (highspy, PyPI) for policy's MILP cross-check of the exact search, in a venv under
# $HOME/.cache/colo-highs only when missing.
bash "$(dirname "$0")/setup-highs.sh"
