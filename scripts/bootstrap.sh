#!/usr/bin/env bash
# Create or reuse a virtual environment and install reveal-lab with the extras a task needs,
# at the exact versions of requirements/lock.txt (pip constraints: a release published after
# the lock cannot change what a fresh clone installs).
# Usage: scripts/bootstrap.sh [EXTRAS]   (default: all,workloads)
# Environment: VENV (default .venv); LOCK (default requirements/lock.txt; LOCK=none installs
# the newest releases, as `make test-latest` does in .venv-latest).
# Re-installs only when pyproject.toml, the lock or this script change, or for an extras set not yet
# installed: the stamp file in .venv holds one line per extras set installed from the
# current files, so alternating sets (e.g. `make setup` and `scripts/bootstrap.sh lab`)
# does not reinstall each time.
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="${1:-all,workloads}"
PY="${PYTHON:-python3}"
VENV="${VENV:-.venv}"
LOCK="${LOCK:-requirements/lock.txt}"
if [ "$LOCK" != none ] && [ ! -f "$LOCK" ]; then
  echo "[bootstrap] lock file $LOCK not found (LOCK=none installs the newest releases)" >&2
  exit 2
fi
"$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "reveal-lab needs Python >= 3.11, found " + sys.version.split()[0])'
if [ ! -x "$VENV/bin/python" ]; then
  echo "[bootstrap] creating $VENV with $("$PY" --version)"
  "$PY" -m venv "$VENV"
fi
stamp="$VENV/.reveal-lab-stamp"
if [ "$LOCK" = none ]; then
  constraints=()
  hash="$(cat pyproject.toml scripts/bootstrap.sh | sha256sum | cut -c1-16)-latest"
else
  constraints=(-c "$LOCK")
  hash="$(cat pyproject.toml scripts/bootstrap.sh "$LOCK" | sha256sum | cut -c1-16)"
fi
want="$hash $EXTRAS"
if [ ! -f "$stamp" ] || ! grep -qxF "$want" "$stamp"; then
  echo "[bootstrap] installing reveal-lab[$EXTRAS] into $VENV from ${LOCK} (first run takes a few minutes)"
  "$VENV/bin/python" -m pip install -q "${constraints[@]}" --upgrade pip
  "$VENV/bin/python" -m pip install -q "${constraints[@]}" -e ".[$EXTRAS]"
  # keep the other sets installed from these same files; drop stale ones
  { grep -F "$hash " "$stamp" 2>/dev/null || true; echo "$want"; } > "$stamp.new"
  mv "$stamp.new" "$stamp"
  # UMAP and pynndescent compile their numba functions when imported (cache=True, in their own
  # __pycache__, which only an install changes): ~18 s of CPU cold against ~3 s from the cache,
  # once here instead of in the first processes that draw the projections (notebook 07)
  "$VENV/bin/python" -c "import umap" >/dev/null 2>&1 || echo "[bootstrap] warning: could not import umap (notebook 07 compiles it)"
fi
"$VENV/bin/python" -m reveal_lab.collect.warm || echo "[bootstrap] warning: could not warm the collector's compiled cache (its first start compiles)"
"$VENV/bin/python" -m reveal_lab.features.warm || echo "[bootstrap] warning: could not warm the feature kernels' compiled cache (the first detection compiles)"
# System tools the lab harness and its tests use (root only; skipped otherwise).
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && ! command -v iptables >/dev/null; then
  echo "[bootstrap] installing iptables (lab fault injection)"
  (apt-get install -y -q iptables >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q iptables >/dev/null 2>&1; }) \
    || echo "[bootstrap] warning: could not install iptables; packet-loss tests will be skipped"
fi
# Headless Chromium for the JupyterLab browser test (root only; the test skips, saying why, without it).
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && ! command -v chromium >/dev/null; then
  echo "[bootstrap] installing chromium (browser test of the first-look notebook)"
  (apt-get install -y -q chromium >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1; }) \
    || echo "[bootstrap] warning: could not install chromium; the browser test will be skipped"
fi
