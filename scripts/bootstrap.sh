#!/usr/bin/env bash
# Create or reuse .venv and install reveal-lab with the extras a task needs.
# Usage: scripts/bootstrap.sh [EXTRAS]   (default: all,workloads)
# Re-installs only when pyproject.toml or this script change, or for an extras set not yet
# installed: the stamp file in .venv holds one line per extras set installed from the
# current files, so alternating sets (e.g. `make setup` and `scripts/bootstrap.sh lab`)
# does not reinstall each time.
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="${1:-all,workloads}"
PY="${PYTHON:-python3}"
"$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "reveal-lab needs Python >= 3.11, found " + sys.version.split()[0])'
if [ ! -x .venv/bin/python ]; then
  echo "[bootstrap] creating .venv with $("$PY" --version)"
  "$PY" -m venv .venv
fi
stamp=".venv/.reveal-lab-stamp"
hash="$(cat pyproject.toml scripts/bootstrap.sh | sha256sum | cut -c1-16)"
want="$hash $EXTRAS"
if [ ! -f "$stamp" ] || ! grep -qxF "$want" "$stamp"; then
  echo "[bootstrap] installing reveal-lab[$EXTRAS] into .venv (first run takes a few minutes)"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[$EXTRAS]"
  # keep the other sets installed from these same files; drop stale ones
  { grep -F "$hash " "$stamp" 2>/dev/null || true; echo "$want"; } > "$stamp.new"
  mv "$stamp.new" "$stamp"
fi
.venv/bin/python -m reveal_lab.collect.warm || echo "[bootstrap] warning: could not warm the collector's compiled cache (its first start compiles)"
# System tools the lab harness and its tests use (root only; skipped otherwise).
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && ! command -v iptables >/dev/null; then
  echo "[bootstrap] installing iptables (lab fault injection)"
  (apt-get install -y -q iptables >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q iptables >/dev/null 2>&1; }) \
    || echo "[bootstrap] warning: could not install iptables; packet-loss tests will be skipped"
fi
