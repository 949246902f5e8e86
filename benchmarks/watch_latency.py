#!/usr/bin/env python
"""Live detection latency: from a window's data being on disk to its verdict, 700 channels.

    .venv/bin/python benchmarks/watch_latency.py [--channels 700] [--seconds 90] [--warmup 30]
                                                 [--speed 1.0] [--poll 0.02] [--quick]

A writer process streams a seeded synthetic run (:func:`reveal_lab.synth.make_run`,
700 channels at 100 ms, one planted network episode) through the collector's own
:class:`reveal_lab.collect._writer.RunWriter` (the journal format ``reveal-lab
collect`` writes: one zlib chunk per 1 s flush, ``fdatasync``-ed, Parquet roll every
60 s), in real time by default. This machine's procfs gives ~600 channels, so the
700-channel host is synthetic. :func:`reveal_lab.live.watch` follows the directory in
this process (warm-up fit on the first 30 s, then every window scored).

For every scored window:

* **data → verdict**: from the end of the ``fdatasync`` of the chunk holding the
  window's last sample (its data is available) to the verdict (the target: < 50 ms);
* **window end → verdict**: from when the window's last sample was taken (includes
  waiting up to one 1 s journal flush; the paper reports 2.26 s end to end);
* **compute**: the engine's own time for the window (features + 3 detectors +
  attribution when anomalous).

Alternatives measured in the same run, on the same stream replayed in memory:

* the same engine scoring the Isolation Forest through scikit-learn (``fast_forest=False``);
* recomputing the offline pipeline's features over the whole history so far at
  every window (what a non-incremental loop would do), at the end of the stream.

Writes ``benchmarks/results/watch_latency.json``.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from _harness import Session, parser, row, side

INTERVAL_S = 0.1


def make_stream(channels: int, seconds: float, seed: int = 11):
    from reveal_lab.synth import Anomaly, make_run

    return make_run(
        seconds,
        n_channels=channels,
        hosts=("gpuhost01",),
        seed=seed,
        anomalies=[Anomaly("network", seconds * 0.7, seconds * 0.7 + 8.0, magnitude=8.0)],
    )


def writer(
    out: str,
    channels: int,
    seconds: float,
    speed: float,
    flush_every: int,
    roll_every: int,
    log_path: str,
    start_evt,
) -> None:  # noqa: ANN001 - mp.Event
    """Write the stream as ``reveal-lab collect`` would, paced in (scaled) real time."""
    from reveal_lab.collect._writer import RunWriter, write_json_atomic
    from reveal_lab.telemetry import parse_metric_name

    run, _ = make_stream(channels, seconds)
    frame = run.frame
    cols = [c for c in frame.columns if c != "timestamp"]
    chans = []
    for c in cols:
        m = parse_metric_name(c)
        chans.append(
            {
                "source": m.source if m else "X",
                "field": m.field if m else c,
                "instance": m.instance if m else None,
                "unit": m.unit if m else None,
                "counter": False,
                "dtype": "f",
                "dataset_source": None,
                "name": c,
                "dataset": c,
                "probe": "synthetic",
            }
        )
    ts_ns = frame.get_column("timestamp").dt.epoch("ns").to_numpy()
    values = frame.select(cols).to_numpy()
    d = Path(out)
    d.mkdir(parents=True)
    write_json_atomic(
        d / "meta.json",
        {
            "host": "gpuhost01",
            "status": "running",
            "interval_ms": 100,
            "clock": {"wall_ns": int(ts_ns[0]), "mono_ns": 0},
        },
    )
    w = RunWriter(d, chans, flush_s=3600, segment_s=3600)  # flushed and rolled here, on schedule
    log = []
    start_evt.wait()
    wall0 = time.time()
    for i in range(frame.height):
        mono = i * int(INTERVAL_S * 1e9)
        w.append(i, int(ts_ns[i]), mono, [], values[i].tolist())
        if (i + 1) % flush_every == 0:
            # the sample i was taken at wall0 + i * interval (scaled); flush at the end of its period
            due = wall0 + (i + 1) * INTERVAL_S / speed
            time.sleep(max(0.0, due - time.time()))
            w.flush(mono)
            log.append({"last_seq": i, "flushed_at": time.time(), "taken_at": wall0 + i * INTERVAL_S / speed})
            if (i + 1) % roll_every == 0:
                w.roll(mono)
    w.close(frame.height * int(INTERVAL_S * 1e9))
    Path(log_path).write_text(json.dumps(log))


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs), q)) if xs else float("nan")


def percentiles(xs: list[float]) -> dict:
    return {"n": len(xs), "median": pct(xs, 50), "p95": pct(xs, 95), "max": max(xs) if xs else float("nan")}


def replay_compute(channels: int, seconds: float, warmup: float, fast_forest: bool) -> list[float]:
    """Per-window compute of the engine on the same stream pushed from memory (1 s chunks)."""
    from reveal_lab.live import LiveDetector

    run, _ = make_stream(channels, seconds)
    det = LiveDetector(warmup_s=warmup, fast_forest=fast_forest)
    out = []
    for i in range(0, run.frame.height, 10):
        out += [v.compute_ms for v in det.push(run.frame.slice(i, 10)) if v.phase == "scored"]
    return out


def naive_recompute(channels: int, seconds: float, n: int = 5) -> list[float]:
    """Offline features over the whole history at the last ``n`` windows (the non-incremental way)."""
    from reveal_lab.config import WindowConfig
    from reveal_lab.features import window_features
    from reveal_lab.pipeline import detection_view

    run, _ = make_stream(channels, seconds)
    out = []
    for k in range(n):
        hist = run.frame.slice(0, run.frame.height - 10 * (n - 1 - k))
        t = time.perf_counter()
        window_features(detection_view(hist)[0], WindowConfig())
        out.append((time.perf_counter() - t) * 1e3)
    return out


def rows(details: dict) -> list[dict]:
    """The result rows: data to verdict after the fit; compute per window against the same engine
    with scikit-learn's forest; features per window against features over the full history."""
    stream = details["stream"]
    what = f"{stream['channels']} channels at {stream['interval_ms']} ms"
    lat = details["data_to_verdict_ms_after_fit"]
    alt = details["alternatives_same_run"]
    fast = side("incremental engine, fast forest", alt["engine_fast_forest_compute_ms"])
    return [
        row(
            f"`watch`: data to verdict after the fit, {what}",
            "ms",
            side("watch", lat),
            note=f"p95 {lat['p95']:.0f} ms; target {details['target_ms']} ms; "
            f"paper {details['paper_end_to_end_s']} s",
        ),
        row(
            f"`watch`: compute per window, {what}",
            "ms",
            fast,
            side("same, scikit-learn forest", alt["engine_sklearn_forest_compute_ms"]),
        ),
        row(
            f"`watch`: features per window, {what}",
            "ms",
            {**fast, "name": "incremental engine"},
            side("features over the full history", alt["naive_full_history_features_ms"]),
        ),
    ]


def follow_stream(args) -> tuple[list, object, list[dict]]:  # noqa: ANN001 - the parsed arguments
    """Stream the run from a writer process and :func:`reveal_lab.live.watch` it here: the
    verdicts, watch's summary and the writer's flush log."""
    from reveal_lab.live import watch

    with tempfile.TemporaryDirectory(prefix="reveal-watch-") as tmp:
        out, log_path = str(Path(tmp) / "run"), str(Path(tmp) / "flushes.json")
        ctx = mp.get_context("spawn")
        start = ctx.Event()
        proc = ctx.Process(
            target=writer, args=(out, args.channels, args.seconds, args.speed, 10, 600, log_path, start)
        )
        proc.start()
        verdicts: list = []
        try:
            start.set()
            summary = watch(
                out,
                warmup_s=args.warmup,
                poll_s=args.poll,
                idle_exit_s=5.0,
                duration_s=args.seconds / args.speed + 120,
                show="none",
                echo=None,
                on_verdict=verdicts.append,
            )
            proc.join(timeout=60)
        finally:
            if proc.is_alive():
                proc.kill()
                proc.join()
        return verdicts, summary, json.loads(Path(log_path).read_text())


def latencies(verdicts: list, flushes: list[dict], speed: float) -> dict[str, list[float]]:
    """Per scored window: data on disk to verdict (all, and after the warm-up fit's backlog),
    window end to verdict, and compute (normal and anomalous windows apart)."""
    last_seqs = np.array([f["last_seq"] for f in flushes])
    t0 = verdicts[0].start
    out: dict[str, list[float]] = {k: [] for k in ("data", "steady", "end", "compute", "compute_anom")}
    # windows whose data arrived while the detectors were being fitted wait for the fit
    fit_done = max(v.decided_at for v in verdicts if v.phase == "warmup")
    for v in (v for v in verdicts if v.phase == "scored"):
        i_last = int(round((v.end - t0).total_seconds() / INTERVAL_S)) - 1  # the window's last sample
        f = flushes[int(np.searchsorted(last_seqs, i_last, side="left"))]
        out["data"].append((v.decided_at - f["flushed_at"]) * 1e3)
        if f["flushed_at"] > fit_done:
            out["steady"].append(out["data"][-1])
        taken = f["taken_at"] - (f["last_seq"] - i_last) * INTERVAL_S / speed + INTERVAL_S / speed
        out["end"].append((v.decided_at - taken) * 1e3)
        out["compute_anom" if v.anomalous else "compute"].append(v.compute_ms)
    return out


def alternatives(channels: int, seconds: float, warmup: float) -> dict:
    """Per-window compute of the engine with the fast and with scikit-learn's forest, and of
    features over the full history, on the same stream replayed in memory."""
    sk = replay_compute(channels, seconds, warmup, False)
    fast = replay_compute(channels, seconds, warmup, True)
    naive = naive_recompute(channels, seconds)
    return {
        "engine_fast_forest_compute_ms": percentiles(fast),
        "engine_sklearn_forest_compute_ms": percentiles(sk),
        "sklearn_over_fast_median": statistics.median(sk) / statistics.median(fast),
        "naive_full_history_features_ms": percentiles(naive),
        "naive_over_incremental_median": statistics.median(naive) / statistics.median(fast),
    }


def main(argv: list[str] | None = None) -> int:
    ap = parser("watch_latency", __doc__, quick="60 channels, 25 s of data at 5x speed, 10 s warm-up")
    ap.add_argument("--channels", type=int, default=700)
    ap.add_argument("--seconds", type=float, default=90.0, help="stream length (data seconds)")
    ap.add_argument("--warmup", type=float, default=30.0)
    ap.add_argument("--speed", type=float, default=1.0, help="stream speed (1 = real time)")
    ap.add_argument("--poll", type=float, default=0.02, help="watch poll period (s)")
    args = ap.parse_args(argv)
    if args.quick:
        args.channels, args.seconds, args.warmup, args.speed = 60, 25.0, 10.0, 5.0
    session = Session("watch_latency", argv)
    warnings.simplefilter("ignore")
    # compile the numba kernels before timing anything (a long-running watcher does this once)
    replay_compute(args.channels, args.warmup + 5, args.warmup, True)
    verdicts, summary, flushes = follow_stream(args)
    lat = latencies(verdicts, flushes, args.speed)
    scored = [v for v in verdicts if v.phase == "scored"]
    details = {
        "stream": {
            "kind": "synthetic run written with the collector's RunWriter (real journal format)",
            "channels": args.channels,
            "seconds": args.seconds,
            "interval_ms": 100,
            "flush_s": 1.0,
            "segment_roll_s": 60,
            "speed": args.speed,
            "poll_s": args.poll,
            "warmup_s": args.warmup,
        },
        "windows": {
            "scored": len(scored),
            "anomalous": sum(v.anomalous for v in scored),
            "warmup": summary.warmup_windows,
            "gaps": summary.gaps,
        },
        "data_to_verdict_ms": percentiles(lat["data"]),
        "data_to_verdict_ms_after_fit": percentiles(lat["steady"]),
        "backlog_windows_waiting_for_fit": len(lat["data"]) - len(lat["steady"]),
        "poll_ms_per_batch": percentiles(summary.poll_ms),
        "push_ms_per_batch": percentiles(summary.push_ms),
        "window_end_to_verdict_ms": percentiles(lat["end"]),
        "compute_ms_normal_windows": percentiles(lat["compute"]),
        "compute_ms_anomalous_windows": percentiles(lat["compute_anom"]),
        "follow": summary.follow,
        "alternatives_same_run": alternatives(args.channels, args.seconds, args.warmup),
        "target_ms": 50.0,
        "meets_target_median_after_fit": pct(lat["steady"], 50) < 50.0,
        "meets_target_p95_after_fit": pct(lat["steady"], 95) < 50.0,
        "paper_end_to_end_s": 2.26,
    }
    session.write(args.out, rows(details), details)
    _print(details)
    return 0


def _print(r: dict) -> None:
    d, e, st = r["data_to_verdict_ms"], r["window_end_to_verdict_ms"], r["data_to_verdict_ms_after_fit"]
    print(
        f"{r['windows']['scored']} windows scored ({r['windows']['anomalous']} anomalous), "
        f"{r['stream']['channels']} channels"
    )
    print(f"data on disk -> verdict: median {d['median']:.1f} ms, p95 {d['p95']:.1f} ms (target < 50 ms)")
    print(
        f"  after the warm-up fit's backlog ({r['backlog_windows_waiting_for_fit']} windows): median "
        f"{st['median']:.1f} ms, p95 {st['p95']:.1f} ms; per batch: read "
        f"{r['poll_ms_per_batch']['median']:.1f} "
        f"ms, push {r['push_ms_per_batch']['median']:.1f} ms (medians)"
    )
    print(f"window end -> verdict:   median {e['median']:.0f} ms, p95 {e['p95']:.0f} ms (paper: 2.26 s)")
    a = r["alternatives_same_run"]
    print(
        f"compute/window: incremental {a['engine_fast_forest_compute_ms']['median']:.1f} ms, with sklearn's "
        f"forest {a['engine_sklearn_forest_compute_ms']['median']:.1f} ms, full-history recompute "
        f"{a['naive_full_history_features_ms']['median']:.0f} ms"
    )


if __name__ == "__main__":
    sys.exit(main())
