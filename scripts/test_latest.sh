#!/usr/bin/env bash
# Build .venv-latest with the newest releases of every dependency (no lock) and run the suite there.
# Writes out/test-latest/{result.txt,pytest.txt,freeze.txt} and prints the result: "passed" or the
# failing tests by name. Exits 0 whatever the suite's outcome (drift is reported, not a failure of
# `make test`); exits non-zero only when the environment cannot be built.
set -euo pipefail
cd "$(dirname "$0")/.."
out=out/test-latest
mkdir -p "$out"
VENV=.venv-latest LOCK=none scripts/bootstrap.sh all,workloads
.venv-latest/bin/python -m pip freeze --all --exclude-editable 2>/dev/null | grep -v '^#' | sort -f > "$out/freeze.txt"
diff <(grep -v '^#' requirements/lock.txt | sort -f) "$out/freeze.txt" > "$out/drift.txt" || true
set +e
REVEAL_LAB_LATEST=1 .venv-latest/bin/python -m pytest -q -p no:cacheprovider > "$out/pytest.txt" 2>&1
rc=$?
set -e
if [ "$rc" = 0 ]; then
  echo "passed: $(tail -1 "$out/pytest.txt")" | tee "$out/result.txt"
else
  { echo "failed (pytest exit $rc): $(tail -1 "$out/pytest.txt")"; grep -E '^(FAILED|ERROR) ' "$out/pytest.txt" || true; } | tee "$out/result.txt"
fi
echo "versions that differ from the lock: $(grep -c '^>' "$out/drift.txt" || true) (see $out/drift.txt)"
