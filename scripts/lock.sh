#!/usr/bin/env bash
# Move requirements/lock.txt forward to the versions installed in .venv-latest (make test-latest
# builds it). Refuses unless out/test-latest/result.txt says the suite passed there.
set -euo pipefail
cd "$(dirname "$0")/.."
result=out/test-latest/result.txt
if [ ! -x .venv-latest/bin/python ] || [ ! -f "$result" ]; then
  echo "lock: run 'make test-latest' first (no .venv-latest or $result)" >&2
  exit 2
fi
if ! grep -q '^passed' "$result"; then
  echo "lock: the suite did not pass with the newest releases ($result: $(head -1 "$result")); the lock stays" >&2
  exit 1
fi
{
  echo "# Exact versions the suite passes with (Linux, CPython $(.venv-latest/bin/python -c 'import sys; print("%d.%d" % sys.version_info[:2])'); pip constraints for scripts/bootstrap.sh)."
  echo "# Refresh with 'make lock' after 'make test-latest' is green. Generated $(date -u +%F) from .venv-latest."
  .venv-latest/bin/python -m pip freeze --all --exclude-editable 2>/dev/null | grep -v '^#' | sort -f
} > requirements/lock.txt
echo "lock: requirements/lock.txt moved to .venv-latest's versions; commit it with the suite's result"
