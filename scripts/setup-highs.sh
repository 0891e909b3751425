#!/usr/bin/env bash
# HiGHS (highspy from PyPI) for policy's MILP cross-check of the exact clustering search
# (policy/search_milp_test.go), in a virtual environment under $HOME/.cache/colo-highs,
# created only when missing. Called by scripts/setup.sh; idempotent.
set -euo pipefail
dir="${HOME}/.cache/colo-highs"
py="$dir/venv/bin/python"
ver=1.16.0
if "$py" -c "import highspy, sys; sys.exit(0 if highspy.Highs().version() == '$ver' else 1)" >/dev/null 2>&1; then
  exit 0
fi
if ! command -v python3 >/dev/null 2>&1 || ! python3 -c "import venv, ensurepip" >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends python3 python3-venv >/dev/null
fi
rm -rf "$dir/venv"
mkdir -p "$dir"
python3 -m venv "$dir/venv"
"$dir/venv/bin/pip" install -q --disable-pip-version-check "highspy==$ver"
"$py" -c "import highspy; highspy.Highs()" >/dev/null
echo "setup: highspy $ver in $dir/venv" >&2
