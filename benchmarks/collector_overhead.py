"""Collector overhead: CPU as a share of one core and bytes per second on disk.

For each interval (100, 200, 300, 600 ms) these processes run side by side for the
same window:

* ``loop``   -- the collector with only its ``self`` probe (the floor of the hot loop);
* ``procfs`` -- the collector with every procfs probe, all at the interval (the default
  rates: our extended set, 12 probes), every tick in the compiled hot loop;
* ``paper``  -- the collector with the procfs sources the paper's collector read
  (``/proc/stat``, meminfo, diskstats, net/dev, snmp+netstat, sockstat), all at the
  interval, with the UNIX socket count (``/proc/net/unix``) once a second;
* ``procfs_interpreted`` / ``paper_interpreted`` -- the same with the compiled hot
  loop off (``REVEAL_LAB_COLLECT_BURST=0``: every tick in the Python loop, batched
  reads on), for the ratio;
* ``procfs_slow`` -- every procfs probe, with the slowly varying, expensive ones
  sampled about once a second (``SLOW``: loadavg, psi, vmstat, interrupts,
  softirqs, unix, with the period rounded up to a whole number of intervals); the
  others at the interval;
* ``full``   -- the collector with every probe that is available here (the default
  ``--probes all``: procfs, perf, cgroup, turbostat, gpu), the perf counters read in the
  collector with ``perf_event_open`` (``REVEAL_LAB_PERF_BACKEND=events``; where the kernel
  refuses, the run records the fall-back it took);
* ``full_perf_child`` -- the same probes with the perf counters from a ``perf stat -I``
  child (``REVEAL_LAB_PERF_BACKEND=child``, the collector before ``perf_event_open``), side
  by side with ``full`` in the same window;
* ``perf``   -- a bare ``perf stat -I <interval> -x, -a -A`` on the events the
  collector's perf probe counts here (the paper's style of collection, for comparison);
* ``reads``  -- a process that only ``pread``s, at the same deadlines, every file the
  procfs probes keep open, and parses nothing: the kernel's share, a floor no parser
  can go under (``reads_paper``: the same for the paper's set).

Alone: the side-by-side window above puts 12 processes (and the bytes-on-disk run) on two
cores, all waking every interval; a host runs one collector. (Measured on the 2-core VM, alone
cost more, not less: waking an idle vCPU is dearer than waking a busy one.) So ``full``,
``full_perf_child``, ``procfs``, ``loop`` and bare ``perf stat`` are also measured one at a
time (``--alone-intervals``, default 100 and 600 ms; the order rotates each repeat; nothing
else of the benchmark runs meanwhile), reported as ``alone_by_interval_ms`` with ``full``'s
ratio to ``full_perf_child``.

Time to first sample: a collector with the default probes is started ``--repeats`` times
with numba's cache warm (as after ``scripts/bootstrap.sh``, which runs
``python -m reveal_lab.collect.warm``) and once with an empty cache (``NUMBA_CACHE_DIR``
pointing at a new folder: a fresh install without the warm step); the time from just
before ``Popen`` to the first sample's ``t_wall_ns`` is reported (``time_to_first_sample``).

Before the sweep, one process opens each procfs probe and measures, per probe, the
thread CPU time of ``sample()`` and of the bare ``pread``s of its files, both in a
tight loop (warm caches) and once per 100 ms tick (what the collector pays: caches
cold after the sleep); the table goes into the JSON as ``per_probe_cost``.

CPU is read twice per process tree: utime+stime from ``/proc/<pid>/stat`` (clock
ticks) and the scheduler's on-CPU nanoseconds from ``/proc/<pid>/task/*/schedstat``,
after a warm-up, over the same window. The sweep repeats ``--repeats`` times; medians
are reported. Meanwhile one ``full`` collector at 100 ms runs for ``--size-duration``
seconds with one Parquet segment, to measure bytes per second on disk (final folder,
segments only, and journal bytes written).

    .venv/bin/python benchmarks/collector_overhead.py            # ~8 minutes
    .venv/bin/python benchmarks/collector_overhead.py --quick    # ~1 minute, smoke

Writes ``benchmarks/results/collector_overhead.json``.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _harness import ROOT, Session, parser, row, side

CLI = [sys.executable, "-c", "import sys; from reveal_lab.cli import main; sys.exit(main())"]
TICK = os.sysconf("SC_CLK_TCK")


def tree(pid: int) -> list[int]:
    """pid and its descendants (perf / nvidia-smi children of the collector)."""
    out = [pid]
    for t in glob.glob(f"/proc/{pid}/task/*/children"):
        try:
            kids = open(t).read().split()
        except OSError:
            continue
        for k in kids:
            out += tree(int(k))
    return out


def cpu_seconds(pids: list[int]) -> tuple[float, float]:
    """(utime+stime from /proc/pid/stat, on-CPU time from schedstat), summed over pids."""
    st = sc = 0.0
    for pid in pids:
        try:
            f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            st += (int(f[11]) + int(f[12])) / TICK
            sc += (
                sum(int(open(t).read().split()[0]) for t in glob.glob(f"/proc/{pid}/task/*/schedstat")) / 1e9
            )
        except (OSError, IndexError, ValueError):
            continue
    return st, sc


def perf_events_here() -> list[str]:
    sys.path.insert(0, str(ROOT))
    from reveal_lab.collect.probes._perf import DEFAULT_EVENTS, probe_events

    try:
        _, ok, _ = probe_events(DEFAULT_EVENTS)
    except Exception:  # noqa: BLE001 - perf missing or not permitted
        return []
    return ok


#: the child scripts' helper: this process's open /proc and /sys files
PROC_FDS = """
import os
def proc_fds():
    out = set()
    for fd in map(int, os.listdir("/proc/self/fd")):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(("/proc/", "/sys/")) and not target.startswith("/proc/self/fd"):
            out.add(fd)
    return out
"""

READS_FLOOR = (
    PROC_FDS
    + """
import os, sys, time
import reveal_lab.collect.probes
from reveal_lab.collect import PROBES, ProbeContext, resolve_probes
ctx = ProbeContext(host="h", interval_s=float(sys.argv[1]))
probes = []
for n in resolve_probes(sys.argv[3]):
    p = PROBES[n]()
    try:
        p.open(ctx)
        probes.append(p)
    except Exception:
        pass
fds = sorted(proc_fds())
open(sys.argv[2], "w").write(str(len(fds)))
iv = float(sys.argv[1]); t0 = time.monotonic(); k = 0
while True:
    k += 1
    d = t0 + k * iv - time.monotonic()
    if d > 0:
        time.sleep(d)
    for fd in fds:
        os.pread(fd, 1 << 16, 0)
"""
)


#: the procfs sources the paper's collector read (its Table 1: /proc/stat, meminfo,
#: diskstats, net/dev, nstat, ss -s)
#: (the UNIX socket count once a second, as the collector's sockets probe did before
#: ``unix`` became a probe of its own: /proc/net/unix grows with the socket count)
PAPER = "cpu,meminfo,diskstats,netdev,nstat,sockets,unix@1s"


def paper_spec(interval_ms: int) -> str:
    """:data:`PAPER` with the UNIX count's period rounded up to whole intervals (>= 1 s)."""
    return PAPER.replace("unix@1s", f"unix@{interval_ms * -(-1000 // interval_ms)}ms")


#: the files the ``reads_paper`` floor reads every tick (the paper set less /proc/net/unix)
PAPER_FILES = "cpu,meminfo,diskstats,netdev,nstat,sockets"
#: slowly varying or expensive sources sampled about once a second in ``procfs_slow``
#: (the kernel refreshes loadavg every 5 s and the PSI averages every 2 s)
SLOW = ("loadavg", "psi", "vmstat", "interrupts", "softirqs", "unix")


def slow_spec(interval_ms: int) -> str:
    """``procfs`` with the :data:`SLOW` probes at the first whole number of intervals >= 1 s."""
    period = interval_ms * -(-1000 // interval_ms)
    return "procfs," + ",".join(f"{n}@{period}ms" for n in SLOW)


#: setups also measured one at a time (``--alone-setups``), as a collector runs in deployment
ALONE_SETUPS = ("full", "full_perf_child", "procfs", "loop", "perf")


def configs(interval_ms: int) -> dict[str, str]:
    return {
        "loop": "self",
        "procfs": "procfs",
        "procfs_interpreted": "procfs",
        "procfs_unbatched": "procfs",
        "paper": paper_spec(interval_ms),
        "paper_interpreted": paper_spec(interval_ms),
        "procfs_slow": slow_spec(interval_ms),
        "full": "all",
        "full_perf_child": "all",
    }


def config_env(name: str) -> dict[str, str]:
    """``*_interpreted``: the compiled hot loop off (every tick in Python);
    ``procfs_unbatched``: batched reads off as well (each probe reads its own files)."""
    perf = {"full": "events", "full_perf_child": "child"}.get(name, "auto")
    return {
        "REVEAL_LAB_PERF_BACKEND": perf,
        "REVEAL_LAB_COLLECT_BATCH": "0" if name == "procfs_unbatched" else "1",
        "REVEAL_LAB_COLLECT_BURST": "0"
        if name.endswith("_interpreted") or name == "procfs_unbatched"
        else "1",
    }


PER_PROBE = (
    PROC_FDS
    + """
import json, os, sys, time
import numpy as np
import reveal_lab.collect.probes
from reveal_lab.collect import PROBES, ProbeContext, resolve_probes
n_warm, n_tick, iv = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
ctx = ProbeContext(host="h", interval_s=iv)
tt = time.thread_time_ns
probes = []
for name in resolve_probes("procfs,-self"):
    before = proc_fds()
    p = PROBES[name]()
    try:
        p.open(ctx)
    except Exception as exc:
        print(json.dumps({"probe": name, "skipped": str(exc)}), flush=True)
        continue
    fds = sorted(proc_fds() - before)
    vi, vf = np.zeros(p.n_int, np.int64), np.zeros(p.n_float)
    probes.append((name, p, fds, vi, vf))
res = {name: {"channels": len(p.channels), "files": len(fds), "sample": [], "read": []}
       for name, p, fds, _, _ in probes}
def read(fds):
    for fd in fds:
        n = 1 << 14
        while len(os.pread(fd, n, 0)) == n:
            n *= 4
for name, p, fds, vi, vf in probes:
    for _ in range(20):
        p.sample(vi, vf)
    t = tt()
    for _ in range(n_warm):
        p.sample(vi, vf)
    res[name]["warm_sample_us"] = (tt() - t) / n_warm / 1e3
    t = tt()
    for _ in range(n_warm):
        read(fds)
    res[name]["warm_read_us"] = (tt() - t) / n_warm / 1e3
# once per tick, as in the collector (alternating sample() and the bare reads)
t0 = time.monotonic()
for k in range(1, 2 * n_tick + 1):
    d = t0 + k * iv - time.monotonic()
    if d > 0:
        time.sleep(d)
    for name, p, fds, vi, vf in probes:
        if k % 2:
            t = tt(); p.sample(vi, vf); res[name]["sample"].append(tt() - t)
        else:
            t = tt(); read(fds); res[name]["read"].append(tt() - t)
# every probe in one tick, each reading its own files vs one batched read first
from reveal_lab.collect.probes._table import Table, TableBatch
batch = TableBatch.create([t for _, p, _, _, _ in probes for t in p.own_tables() if isinstance(t, Table)])
tot = {"own": [], "batched": []}
t0 = time.monotonic()
for k in range(1, 2 * n_tick + 1):
    d = t0 + k * iv - time.monotonic()
    if d > 0:
        time.sleep(d)
    t = tt()
    if k % 2 and batch is not None:
        batch.run()
    for name, p, fds, vi, vf in probes:
        p.sample(vi, vf)
    tot["own" if not (k % 2 and batch is not None) else "batched"].append(tt() - t)
for name, p, fds, vi, vf in probes:
    r = res[name]
    s, rd = sorted(r.pop("sample")), sorted(r.pop("read"))
    r["tick_sample_us"] = s[len(s) // 2] / 1e3
    r["tick_read_us"] = rd[len(rd) // 2] / 1e3
    r["tick_sample_mean_us"] = sum(s) / len(s) / 1e3
    r["tick_read_mean_us"] = sum(rd) / len(rd) / 1e3
    p.close()
res["__tick__"] = {k: sum(v) / len(v) / 1e3 for k, v in tot.items() if v}
res["__tick__"]["batched_tables"] = len(batch.tables) if batch is not None else 0
print(json.dumps(res))
"""
)


def per_probe_cost(n_warm: int = 2000, n_tick: int = 200, interval_s: float = 0.1) -> dict:
    out = (
        subprocess.run(
            [sys.executable, "-c", PER_PROBE, str(n_warm), str(n_tick), str(interval_s)],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        .stdout.strip()
        .splitlines()
    )
    res = json.loads(out[-1])
    tick = res.pop("__tick__")
    for line in out[:-1]:
        d = json.loads(line)
        res[d["probe"]] = {"skipped": d["skipped"]}
    for name, r in res.items():
        r["paper_set"] = name in PAPER_FILES.split(",") or name == "unix"
        if "tick_sample_mean_us" in r:
            r["pct_of_core_at_100ms"] = r["tick_sample_mean_us"] / 1000
    return {
        "probes": res,
        "all_probes_per_tick_us": {
            "each_reads_own_files": tick.get("own"),
            "one_batched_read": tick.get("batched"),
            "batched_tables": tick["batched_tables"],
        },
    }


def start_collector(
    out: Path, probes: str, interval_ms: int, extra: list[str] | None = None, env: dict | None = None
) -> subprocess.Popen:
    cmd = [
        *CLI,
        "collect",
        "--out",
        str(out),
        "--interval",
        f"{interval_ms}ms",
        "--probes",
        probes,
        *(extra or []),
    ]
    return subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, **(env or {})}
    )


def wait_ready(out: Path, timeout: float = 60) -> None:
    t = time.monotonic() + timeout
    while not (out / "channels.json").exists():
        if time.monotonic() > t:
            raise TimeoutError(f"collector in {out} did not start")
        time.sleep(0.05)


def stop(p: subprocess.Popen) -> None:
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def measure_interval(
    interval_ms: int,
    window_s: float,
    warmup_s: float,
    events: list[str],
    work: Path,
    only: set[str] | None = None,
) -> dict:
    """CPU of each setup over one window, all side by side; ``only``: just those setups
    (``{"full"}``: the collector alone on the machine, as it runs in deployment)."""
    procs: dict[str, subprocess.Popen] = {}
    dirs = {}
    specs = {k: v for k, v in configs(interval_ms).items() if only is None or k in only}
    for name, probes in specs.items():
        dirs[name] = work / f"{name}-{interval_ms}-{time.monotonic_ns()}"
        # procfs_unbatched: each probe reads its own files (the collector before batching)
        env = config_env(name)
        procs[name] = start_collector(dirs[name], probes, interval_ms, env=env)
    ready = {}
    for name, spec in (("reads", "procfs,-self"), ("reads_paper", PAPER_FILES)):
        if only is not None and name not in only:
            continue
        ready[name] = work / f"{name}-{interval_ms}-{time.monotonic_ns()}"
        procs[name] = subprocess.Popen(
            [sys.executable, "-c", READS_FLOOR, str(interval_ms / 1000), str(ready[name]), spec],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    if events and (only is None or "perf" in only):
        procs["perf"] = subprocess.Popen(
            [
                "perf",
                "stat",
                "-I",
                str(interval_ms),
                "-x,",
                "-a",
                "-A",
                "-e",
                ",".join(events),
                "-o",
                "/dev/null",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    try:
        for d in dirs.values():
            wait_ready(d)
        t_end = time.monotonic() + 60
        while not all(r.exists() for r in ready.values()) and time.monotonic() < t_end:
            time.sleep(0.05)
        time.sleep(warmup_s)
        pids = {k: tree(p.pid) for k, p in procs.items()}
        c0 = {k: cpu_seconds(v) for k, v in pids.items()}
        t0 = time.monotonic()
        time.sleep(window_s)
        c1 = {k: cpu_seconds(v) for k, v in pids.items()}
        t1 = time.monotonic()
    finally:
        for p in procs.values():
            stop(p)
    res = {}
    n_reads = {}
    for name, r in ready.items():
        try:
            n_reads[name] = int(r.read_text())
            r.unlink()
        except (OSError, ValueError):
            n_reads[name] = None
    for k in procs:
        res[k] = {
            "stat_pct_of_core": 100 * (c1[k][0] - c0[k][0]) / (t1 - t0),
            "schedstat_pct_of_core": 100 * (c1[k][1] - c0[k][1]) / (t1 - t0),
            "processes": len(pids[k]),
        }
    for name, d in dirs.items():
        try:
            meta = json.loads((d / "meta.json").read_text())
            res[name].update(
                probes=specs[name],
                channels=meta.get("n_channels"),
                samples=meta.get("samples"),
                missed_ticks=meta.get("missed_ticks"),
                hot_loop=meta.get("hot_loop"),
                perf_backend=meta.get("probe_info", {}).get("perf", {}).get("backend"),
                perf_skipped=meta.get("probes_skipped", {}).get("perf"),
            )
        except (OSError, ValueError):
            pass
        shutil.rmtree(d, ignore_errors=True)
    for name, n in n_reads.items():
        res[name]["files"] = n
    return res


def time_to_first_sample(work: Path, env: dict | None = None, probes: str = "all") -> dict:
    """Seconds from just before starting ``reveal-lab collect`` (100 ms) to its first
    sample's wall-clock timestamp."""
    out = work / f"ttfs-{time.monotonic_ns()}"
    t0 = time.time_ns()
    p = start_collector(out, probes, 100, ["--duration", "1.5s"], env=env)
    try:
        p.wait(600)
    finally:
        stop(p)
    import polars as pl

    segs = sorted(out.glob("segment-*.parquet"))
    first = min(pl.read_parquet(f, columns=["t_wall_ns"])["t_wall_ns"].min() for f in segs) if segs else None
    meta = json.loads((out / "meta.json").read_text()) if (out / "meta.json").exists() else {}
    shutil.rmtree(out, ignore_errors=True)
    return {
        "seconds": None if first is None else (first - t0) / 1e9,
        "exit": p.returncode,
        "probes_used": meta.get("probes_used"),
    }


def dir_bytes(d: Path) -> int:
    return sum(f.stat().st_size for f in d.iterdir() if f.is_file())


def rows(details: dict) -> list[dict]:
    """The result rows: CPU (% of one core, on-CPU time) of each setup per interval, against the
    same probes in the interpreted loop where measured, else a bare ``perf stat -I``; bytes on disk."""
    out: list[dict] = []
    for iv, s in details["median_by_interval_ms"].items():
        perf = s.get("perf", {}).get("schedstat_pct_of_core")
        for k in ("paper", "procfs_slow", "procfs", "full", "loop"):
            v = s.get(k)
            if v is None:
                continue
            case = f"`{k}` collector every {iv} ms ({v.get('channels', '?')} channels), CPU"
            interp = s.get(f"{k}_interpreted", {}).get("schedstat_pct_of_core")
            if interp:  # the compiled hot loop against the same probes in the interpreted loop
                alt, note = (
                    side(f"{k}, interpreted loop", interp),
                    f"perf stat -I {iv}: {perf:.3g} %" if perf else "",
                )
            else:
                alt, note = (side(f"perf stat -I {iv}", perf) if perf else None), ""
            out.append(row(case, "% of a core", side(k, v["schedstat_pct_of_core"]), alt, note=note))
    size = details["bytes_on_disk"]
    out.append(
        row(
            f"bytes on disk, all probes at {size['interval_ms']} ms ({size['channels']} channels)",
            "B/s",
            side("collector", size["folder_bytes_per_s"]),
            note="paper: 14-22 kB/s filtered",
        )
    )
    return out


def startup(work: Path, repeats: int) -> dict:
    """Time to first sample with numba's cache warm (``repeats`` times) and once cold."""
    warm_starts = [time_to_first_sample(work) for _ in range(repeats)]
    cold_dir = work / "numba-cold"
    cold_start = time_to_first_sample(work, env={"NUMBA_CACHE_DIR": str(cold_dir)})
    shutil.rmtree(cold_dir, ignore_errors=True)
    ok = [r["seconds"] for r in warm_starts if r["seconds"] is not None]
    out = {
        "warm_cache_s_median": statistics.median(ok) if ok else None,
        "warm_cache_runs": warm_starts,
        "cold_cache_s": cold_start["seconds"],
        "cold_cache_run": cold_start,
        "target_s": 1.0,
        "met": bool(ok) and statistics.median(ok) <= 1.0,
    }
    print(
        f"time to first sample: warm cache {out['warm_cache_s_median']} s (median of {len(ok)}), "
        f"cold cache {out['cold_cache_s']} s",
        flush=True,
    )
    return out


def alone(args, events: list[str], work: Path) -> tuple[dict, list[dict]]:  # noqa: ANN001
    """Each of ``--alone-setups`` measured alone (the order rotating per repeat) at each of
    ``--alone-intervals``: medians per interval and setup, and every run."""
    intervals = [int(x) for x in args.alone_intervals.split(",") if x.strip()]
    setups = [x for x in args.alone_setups.split(",") if x.strip()]
    runs: list[dict] = []
    for rep in range(args.repeats):
        for iv in intervals:
            for name in setups[rep % len(setups) :] + setups[: rep % len(setups)]:
                load = os.getloadavg()[0]
                r = measure_interval(iv, args.window, args.warmup, events, work, only={name})
                if name not in r:  # perf with no events here
                    continue
                runs.append({"setup": name, "interval_ms": iv, "repeat": rep, "loadavg_1m": load, **r[name]})
                print(
                    f"alone rep {rep} {iv:4d} ms {name}: {r[name]['schedstat_pct_of_core']:.3f}%", flush=True
                )
    out: dict = {}
    for iv in intervals:
        out[iv] = {}
        for name in setups:
            vals = [r for r in runs if r["interval_ms"] == iv and r["setup"] == name]
            if vals:
                out[iv][name] = {m: statistics.median(v[m] for v in vals) for m in CPU_KEYS}
                out[iv][name]["runs"] = len(vals)
        for a, b in (("full", "full_perf_child"), ("full", "procfs")):
            if a in out[iv] and b in out[iv] and out[iv][b]["schedstat_pct_of_core"] > 0:
                out[iv][a][f"ratio_to_{b}"] = (
                    out[iv][a]["schedstat_pct_of_core"] / out[iv][b]["schedstat_pct_of_core"]
                )
    return out, runs


def side_by_side(args, intervals: list[int], events: list[str], work: Path) -> list[dict]:  # noqa: ANN001
    """Every setup side by side at each interval, ``--repeats`` times."""
    runs: list[dict] = []
    for rep in range(args.repeats):
        for iv in intervals:
            r = measure_interval(iv, args.window, args.warmup, events, work)
            r["interval_ms"], r["repeat"] = iv, rep
            runs.append(r)
            print(
                f"rep {rep} {iv:4d} ms: "
                + "  ".join(
                    f"{k} {v['schedstat_pct_of_core']:.3f}%" for k, v in r.items() if isinstance(v, dict)
                ),
                flush=True,
            )
    return runs


def bytes_on_disk(size_dir: Path, duration: float) -> dict:
    """Bytes per second of the finished size run (folder, segments, journal written)."""
    meta = json.loads((size_dir / "meta.json").read_text())
    seg = sum(f.stat().st_size for f in size_dir.glob("segment-*.parquet"))
    return {
        "probes": "all",
        "interval_ms": 100,
        "duration_s": duration,
        "channels": meta.get("n_channels"),
        "samples": meta.get("samples"),
        "missed_ticks": meta.get("missed_ticks"),
        "folder_bytes": dir_bytes(size_dir),
        "folder_bytes_per_s": dir_bytes(size_dir) / duration,
        "segment_bytes_per_s": seg / duration,
        "journal_bytes_written_per_s": (meta.get("bytes_journal_written") or 0) / duration,
        "raw_bytes_per_s_if_float64": 8 * (meta.get("n_channels") or 0) * 10,
        "channels_json_bytes": (size_dir / "channels.json").stat().st_size,
    }


#: the two CPU figures of each process tree
CPU_KEYS = ("stat_pct_of_core", "schedstat_pct_of_core")
#: the setups of the side-by-side sweep, in the order of the summary
SWEEP = (
    "loop",
    "reads",
    "reads_paper",
    "procfs",
    "procfs_unbatched",
    "procfs_interpreted",
    "paper",
    "paper_interpreted",
    "procfs_slow",
    "full",
    "full_perf_child",
    "perf",
)


def _summary_of(k: str, rows: list[dict]) -> dict:
    """Setup ``k``'s medians over ``rows`` (one interval's repeats) and its ratios to the
    processes beside it, each repeat's ratio first, then the median."""
    vals = [r[k] for r in rows if k in r]
    s: dict = {m: statistics.median(v[m] for v in vals) for m in CPU_KEYS}
    s["channels"] = vals[0].get("channels")
    for key in ("hot_loop", "probes"):
        if vals[0].get(key):
            s[key] = vals[0][key]
    if vals[0].get("perf_backend") or vals[0].get("perf_skipped"):
        s["perf_backend"] = vals[0].get("perf_backend") or f"skipped: {vals[0].get('perf_skipped')}"
    refs = ("procfs", "perf") + ((k + "_interpreted",) if k in ("paper", "procfs") else ())
    refs += ("full_perf_child",) if k == "full" else ()
    for ref in refs:
        if k != ref and all(ref in r for r in rows):
            rat = [
                r[k]["schedstat_pct_of_core"] / r[ref]["schedstat_pct_of_core"]
                for r in rows
                if k in r and r[ref]["schedstat_pct_of_core"] > 0
            ]
            if rat:
                s[f"median_ratio_to_{ref}"] = statistics.median(rat)
    return s


def summarise(runs: list[dict], intervals: list[int]) -> dict:
    """Per interval, each setup's medians and ratios (:func:`_summary_of`), and each one's ratio to
    the bare ``perf stat`` of the same window."""
    summary = {}
    for iv in intervals:
        rows_ = [r for r in runs if r["interval_ms"] == iv]
        s = {k: _summary_of(k, rows_) for k in SWEEP if any(k in r for r in rows_)}
        if "perf" in s and s["perf"]["schedstat_pct_of_core"] > 0:
            for k in ("procfs", "procfs_unbatched", "paper", "procfs_slow", "full", "full_perf_child"):
                if k in s:
                    s[k]["ratio_to_perf_stat"] = (
                        s[k]["schedstat_pct_of_core"] / s["perf"]["schedstat_pct_of_core"]
                    )
        summary[iv] = s
    return summary


CONFIGURATIONS = {
    "procfs": "every procfs probe at the interval (default rates; extended set; compiled hot loop)",
    "procfs_unbatched": "procfs with REVEAL_LAB_COLLECT_BATCH=0 and _BURST=0: each probe preads "
    "and scans its own files every tick in Python (the collector before batched reads)",
    "paper": f"{PAPER} at the interval (the paper's procfs sources; compiled hot loop)",
    "procfs_interpreted / paper_interpreted": "the same probes with REVEAL_LAB_COLLECT_BURST=0 "
    "(every tick in the Python loop; batched reads on)",
    "procfs_slow": f"every procfs probe; {', '.join(SLOW)} about once a second; compiled hot loop "
    "(period rounded up to whole intervals: --probes " + slow_spec(100) + " at 100 ms)",
    "reads / reads_paper": f"a Python loop of bare preads of the files of procfs / {PAPER_FILES}, no parsing",
    "loop": "the hot loop with the self probe only",
    "full": "every probe available here (--probes all), perf counters via perf_event_open "
    "(REVEAL_LAB_PERF_BACKEND=events)",
    "full_perf_child": "the same with the perf counters from a perf stat -I child "
    "(REVEAL_LAB_PERF_BACKEND=child), in the same window",
    "perf": "bare perf stat -I on the same events",
}


def targets(summary: dict, alone_: dict, startup_: dict, size: dict) -> dict:
    """The targets and whether each is met, beside the paper's figures."""

    def pct(table: dict, k: str) -> float:
        return table.get(100, {}).get(k, {}).get("schedstat_pct_of_core", 1e9)

    return {
        "procfs_pct_of_core_at_100ms": 0.3,
        "full_bytes_per_s_at_100ms": 5000,
        "full_pct_of_core_at_100ms": 0.6,
        "full_at_100ms_met": pct(summary, "full") <= 0.6,
        "full_at_100ms_alone_met": pct(alone_, "full") <= 0.6,
        "first_sample_s": 1.0,
        "first_sample_met": startup_["met"],
        **{
            f"{k}_at_100ms_met": pct(summary, k) <= 0.3
            for k in (
                "procfs",
                "procfs_interpreted",
                "procfs_unbatched",
                "paper",
                "paper_interpreted",
                "procfs_slow",
            )
        },
        "bytes_met": size["folder_bytes_per_s"] <= 5000,
        "paper": {
            "pct_of_core_at_100ms": [1.2, 1.4],
            "bytes_per_s_raw": 42000,
            "bytes_per_s_filtered": [14000, 22000],
        },
    }


def per_probe_report(work: Path, quick: bool) -> dict:
    """Compile (or load numba's cache) once before anything is timed (a cold cache costs each
    collector seconds of CPU at start), then :func:`per_probe_cost`, printed."""
    subprocess.run(
        [sys.executable, "-m", "reveal_lab.collect.warm"],  # what scripts/bootstrap.sh runs
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    per_probe = per_probe_cost(n_tick=50 if quick else 200)
    print("per probe (µs per sample, once per 100 ms tick; bare reads):", flush=True)
    print(f"  all procfs probes per tick (µs, mean): {per_probe['all_probes_per_tick_us']}", flush=True)
    for name, r in per_probe["probes"].items():
        if "tick_sample_us" in r:
            print(
                f"  {name:11s} sample {r['tick_sample_us']:7.1f}  read {r['tick_read_us']:7.1f}"
                f"  (warm {r['warm_sample_us']:.1f} / {r['warm_read_us']:.1f})",
                flush=True,
            )
    return per_probe


def main(argv: list[str] | None = None) -> int:
    ap = parser("collector_overhead", __doc__, repeats=3, quick="1 repeat, 5 s windows, 30 s size run")
    ap.add_argument("--intervals", default="100,200,300,600")
    ap.add_argument("--window", type=float, default=20.0, help="measurement window per interval (s)")
    ap.add_argument("--warmup", type=float, default=3.0)
    ap.add_argument("--size-duration", type=float, default=300.0, help="length of the bytes-on-disk run (s)")
    ap.add_argument(
        "--alone-intervals",
        default="100,600",
        help="intervals (ms) at which each of --alone-setups is also measured alone ('' for none)",
    )
    ap.add_argument("--alone-setups", default=",".join(ALONE_SETUPS))
    args = ap.parse_args(argv)
    if args.quick:
        args.window, args.repeats, args.size_duration, args.warmup = 5.0, 1, 30.0, 2.0
    session = Session("collector_overhead", argv)
    intervals = [int(x) for x in args.intervals.split(",")]
    work = Path(tempfile.mkdtemp(prefix="rvl-bench-"))
    events = perf_events_here()
    per_probe = per_probe_report(work, args.quick)
    startup_ = startup(work, args.repeats)
    alone_, alone_runs = alone(args, events, work)  # before anything else is started
    size_dir = work / "size-run"
    size_proc = start_collector(
        size_dir,
        "all",
        100,
        ["--duration", f"{args.size_duration}s", "--segment", f"{args.size_duration + 60}s"],
    )
    wait_ready(size_dir)
    runs = side_by_side(args, intervals, events, work)
    size_proc.wait(args.size_duration + 120)
    size = bytes_on_disk(size_dir, args.size_duration)
    shutil.rmtree(work, ignore_errors=True)
    summary = summarise(runs, intervals)
    m = session.header["machine"]
    details = {
        # what notebook 08 labels the stored benchmark with (reveal_lab.studies reads the rest)
        "host": {"cpu_model": m["cpu_model"], "cpus": m["cores"], "kernel": m["kernel"], "uid": os.getuid()},
        "perf_events": events,
        "window_s": args.window,
        "warmup_s": args.warmup,
        "repeats": args.repeats,
        "configurations": CONFIGURATIONS,
        "per_probe_cost": per_probe,
        "time_to_first_sample": startup_,
        "median_by_interval_ms": summary,
        "alone_by_interval_ms": alone_,
        "alone_runs": alone_runs,
        "bytes_on_disk": size,
        "targets": targets(summary, alone_, startup_, size),
        "runs": runs,
    }
    session.write(Path(args.out), rows(details), details)
    keys = ("median_by_interval_ms", "alone_by_interval_ms", "bytes_on_disk", "time_to_first_sample")
    print(json.dumps({k: details[k] for k in keys}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
