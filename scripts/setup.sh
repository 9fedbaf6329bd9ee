# Sourced by book.sh and test.sh: create .venv, install requirements and fedlib (editable) when they
# changed, and point FEDLIB_DATA at ../shared/data when it is unset and that folder exists.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
if [ ! -x .venv/bin/python ]; then
  "${PYTHON:-python3}" -m venv .venv
fi
stamp=.venv/.fedlib-requirements
# The Flower extra (fedlib.flower, tests/test_flower.py; about 20 s more on a first install) is pinned in its own file.
reqs="requirements.txt benchmarks/requirements-flower.txt pyproject.toml"
if [ ! -f "$stamp" ] || ! cat $reqs | cmp -s - "$stamp"; then
  echo "installing requirements into .venv (first run takes about two minutes) ..."
  if ! .venv/bin/python -m pip install -q -r requirements.txt -r benchmarks/requirements-flower.txt -e . \
      >.venv/install.log 2>&1; then
    grep -v "^WARNING: Location" .venv/install.log | tail -40
    echo "pip install failed; full log in .venv/install.log" >&2
    exit 1
  fi
  cat $reqs >"$stamp"
fi
if [ -z "${FEDLIB_DATA:-}" ] && [ -d "$ROOT/../shared/data" ]; then
  export FEDLIB_DATA="$ROOT/../shared/data"
fi
export FEDLIB_NUM_THREADS="${FEDLIB_NUM_THREADS:-2}"
export PATH="$ROOT/.venv/bin:$PATH"
