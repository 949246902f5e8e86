#!/usr/bin/env bash
# Re-record the bundled lab dataset (data/lab) on a Linux host, as root.
#
#   sudo scripts/record_lab_dataset.sh [PLAN] [RAW_DIR] [OUT_DIR]
#
# PLAN: default (40 slots, 3 fault-free repeats per workload, ~45 min on 2 cores) or smoke
# (one 8 s run, ~30 s). The bundled data/lab also has a 4th fault-free repeat recorded with
# `--repeats 4 --slots ...` (see the recording sessions in data/lab/README.md).
# Needs: root, iproute2 (ip netns), util-linux (nsenter), iptables, cgroups (v1 or v2),
# the venv from scripts/bootstrap.sh (torch==2.13.0 CPU via the `workloads` extra).
# Every run leaves its collector directories and a run manifest in RAW_DIR; OUT_DIR gets
# the Parquet runs in the public grammar, meta_lab.csv, labels.csv, recording.json and
# README.md (provenance). Then the evaluation table:
#   .venv/bin/reveal-lab evaluate --data OUT_DIR --out results/evaluate
set -euo pipefail
cd "$(dirname "$0")/.."
PLAN="${1:-default}"
RAW="${2:-/var/tmp/reveal_lab/raw_$(date -u +%Y%m%dT%H%M%S)}"
OUT="${3:-data/lab}"
if [ "$(id -u)" != 0 ]; then echo "run as root (network namespaces, cgroups, iptables)" >&2; exit 1; fi
scripts/bootstrap.sh all,workloads
.venv/bin/reveal-lab record --plan "$PLAN" --dry-run
.venv/bin/reveal-lab record --plan "$PLAN" --raw "$RAW" --no-build
rm -rf "$OUT.tmp" && .venv/bin/reveal-lab record --build-only --raw "$RAW" --out "$OUT.tmp"
rm -rf "$OUT" && mv "$OUT.tmp" "$OUT"
du -sh "$OUT"
