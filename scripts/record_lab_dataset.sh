#!/usr/bin/env bash
# Record the bundled lab dataset (data/lab) on a quiet Linux host, as root, in one command.
#
#   sudo scripts/record_lab_dataset.sh [PLAN] [RAW_DIR] [OUT_DIR]
#   sudo SLOTS=0-25 scripts/record_lab_dataset.sh v2 /var/tmp/reveal_lab/raw_v2   # a part; then SLOTS=26-51
#
# PLAN: v2 (default: 52 slots of 90 s, 5 fault-free repeats of 7 workloads, graded faults,
# DDP on three hosts, the before/after case studies; ~97 min estimated, printed by the dry
# run), v1 (the first data/lab) or smoke (one 8 s run).
# Environment: LOAD_GATE (default 0.5: before each slot wait while the 1-minute load average
# less the lab's own share is above it; "off" disables), GATE_WAIT (default 10min: then stop
# with exit status 75; run again with SLOTS= the remaining slots and the same RAW_DIR),
# SLOTS (default: all), HF_DIR (default out/hf_lab: the Hugging Face export is refreshed
# there), MAX_MB (default 40: refuse to replace OUT_DIR with more Parquet than this),
# BUILD_ONLY=1 (skip recording: build OUT_DIR from RAW_DIR, e.g. after recording in parts),
# WARMUP (default 0s: none; `make record-lab` passes 15s, as data/lab v3 was recorded: before
# each workload's first slot a discarded fault-free run on the same hosts, kept in
# RAW_DIR/warmup; the v2 recording's first repeats, made first in the session, held nearly
# all its false alarms), SETTLE (default 30s: before a session's first slot wait until the
# page cache moves by at most 2 MB/s over that long; v3's first slot, 4 min after boot, ran
# while the kernel's reclaim freed 1.7 GB of page cache and was recorded again; "0" disables).
# Needs: root, iproute2 (ip netns), util-linux (nsenter), iptables, cgroups (v1 or v2),
# RPS/XPS files under /sys/class/net/*/queues (for the IRQ-imbalance case study), and the
# venv from scripts/bootstrap.sh (torch==2.13.0 CPU via the `workloads` extra).
# Record with nothing else running on the machine: no tests, notebooks or benchmarks.
#
# Every run leaves its collector directories and a run manifest in RAW_DIR; OUT_DIR gets the
# Parquet runs in the public grammar, meta_lab.csv, labels.csv (with magnitudes),
# recording.json (per-slot load readings) and README.md (provenance). Then, for the README:
#   .venv/bin/reveal-lab evaluate --data OUT_DIR --out results/evaluate --json results/evaluate/evaluation.json
#   .venv/bin/reveal-lab reproduce --out out/reproduce      # notebook 11: the case studies' comparison
set -euo pipefail
cd "$(dirname "$0")/.."
PLAN="${1:-v2}"
RAW="${2:-/var/tmp/reveal_lab/raw_$(date -u +%Y%m%dT%H%M%S)}"
OUT="${3:-data/lab}"
LOAD_GATE="${LOAD_GATE:-0.5}"
GATE_WAIT="${GATE_WAIT:-10min}"
WARMUP="${WARMUP:-0s}"
SETTLE="${SETTLE:-30s}"
HF_DIR="${HF_DIR:-out/hf_lab}"
MAX_MB="${MAX_MB:-40}"
if [ "$(id -u)" != 0 ]; then echo "run as root (network namespaces, cgroups, iptables)" >&2; exit 1; fi
scripts/bootstrap.sh all,workloads
RL=.venv/bin/reveal-lab
SLOT_ARGS=()
if [ -n "${SLOTS:-}" ]; then SLOT_ARGS=(--slots "$SLOTS"); fi
if [ "${BUILD_ONLY:-0}" != 1 ]; then
    "$RL" record --plan "$PLAN" "${SLOT_ARGS[@]}" --warmup "$WARMUP" --dry-run
    set +e
    "$RL" record --plan "$PLAN" "${SLOT_ARGS[@]}" --raw "$RAW" --no-build \
        --load-gate "$LOAD_GATE" --gate-wait "$GATE_WAIT" --warmup "$WARMUP" --settle "$SETTLE"
    rc=$?
    set -e
    if [ "$rc" = 75 ]; then
        echo "the machine stayed busy (see above); nothing was built. Resume when it is quiet with" >&2
        echo "  SLOTS=<the slots not yet in $RAW/recording.json> $0 $PLAN $RAW $OUT" >&2
        exit 75
    elif [ "$rc" != 0 ]; then
        exit "$rc"
    fi
    if [ -n "${SLOTS:-}" ]; then
        echo "recorded slots $SLOTS into $RAW; when every part is recorded: BUILD_ONLY=1 $0 $PLAN $RAW $OUT"
        exit 0
    fi
fi
rm -rf "$OUT.tmp"
"$RL" record --build-only --raw "$RAW" --out "$OUT.tmp"
.venv/bin/python - "$OUT.tmp" "$MAX_MB" <<'PY'
import sys
from pathlib import Path

from reveal_lab.lab import read_labels, read_meta

out, max_mb = Path(sys.argv[1]), float(sys.argv[2])
mb = sum(p.stat().st_size for p in out.rglob("*.parquet")) / 1e6
meta, labels = read_meta(out / "meta_lab.csv"), read_labels(out / "labels.csv")
print(f"{meta.height} host files, {labels.height} labels, {mb:.1f} MB of Parquet")
if mb > max_mb:
    sys.exit(f"{out}: {mb:.1f} MB of Parquet is more than MAX_MB={max_mb:g}; not replacing the dataset")
if labels.height and labels["magnitude"].null_count():
    sys.exit(f"{out}/labels.csv: {labels['magnitude'].null_count()} labels without a magnitude")
PY
rm -rf "$OUT" && mv "$OUT.tmp" "$OUT"
"$RL" dataset export --data "$OUT" --hf "$HF_DIR" --overwrite
du -sh "$OUT" "$HF_DIR"
