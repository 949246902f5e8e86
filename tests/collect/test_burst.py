"""The compiled hot loop (``reveal_lab.collect._burst``) against the interpreted one, on
this machine's real procfs: same channels, same sampling rules (slow probes null on
the ticks they skip, Python probes sampled on their own ticks), a layout change mid-run
handled, clean stops and ``kill -9`` leave readable data; and proc files longer than
one page are read to their end."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid

import numpy as np
import polars as pl
import pytest
from collect_helpers import collect_cmd, journal_chunk_sizes, wait_for, wait_for_chunks

from reveal_lab.collect._probe import ProbeContext, read_all, sanitize_instance
from reveal_lab.collect.probes._table import LineCount, Table, TableBatch
from reveal_lab.io._collector import read_collector_run, read_raw_frame
from reveal_lab.telemetry import parse_metric_name

pytest.importorskip("numba")

BURSTABLE = "cpu,meminfo@300ms,diskstats,netdev,nstat,softirqs@200ms,sockets,unix@500ms"


def _interface(column: str) -> str:
    """The interface of a ``NetworkInterStat:FIELD.INTERFACE.HOST[UNIT]`` column."""
    return column.split(":", 1)[1].split("[", 1)[0].split(".", 1)[1].rsplit(".", 1)[0]


def _meta(out):
    return json.loads((out / "meta.json").read_text())


def _channels(out) -> list[dict]:
    return json.loads((out / "channels.json").read_text())


def _key(channel: dict) -> tuple[str, str | None]:
    """A channel's probe and instance (an interface, a disk, a core; ``None`` for none)."""
    return channel["probe"], channel["instance"]


def _shared_instances(*runs) -> tuple[list[list[dict]], set[tuple[str, str | None]]]:
    """Each run's ``channels.json`` restricted to the (probe, instance) pairs every run has, and
    the pairs some run lacks (an instance that appeared or vanished between the runs' starts)."""
    chans = [_channels(r) for r in runs]
    keys = [{_key(c) for c in ch} for ch in chans]
    common = set.intersection(*keys)
    return [[c for c in ch if _key(c) in common] for ch in chans], set.union(*keys) - common


def _k(out, frame):
    """Deadline index of every row (see test_divisors)."""
    meta = _meta(out)
    t = frame.get_column("t_mono_ns").to_numpy()
    lag = frame.get_column(next(c for c in frame.columns if c.startswith("Collector:lag"))).to_numpy()
    return np.round((t - 1000 * lag - meta["clock"]["mono_ns"]) / 1e8).astype(int)


def _expected_sampled(k, d):
    due, expect = 0, []
    for kk in k:
        expect.append(kk >= due)
        if kk >= due:
            due = (kk // d + 1) * d
    return np.array(expect)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """The same probes for 3 s, compiled loop and interpreted loop, side by side."""
    base = tmp_path_factory.mktemp("burst")
    procs = {}
    for name, flag in (("compiled", "1"), ("python", "0")):
        env = dict(os.environ, REVEAL_LAB_COLLECT_BURST=flag)
        procs[name] = subprocess.Popen(
            collect_cmd(
                base / name, "--interval", "100ms", "--duration", "3s", "--probes", BURSTABLE, "--host", "b"
            ),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
    for name, p in procs.items():
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, (name, err)
    return base / "compiled", base / "python"


def _collect_in_process(out, spec, host, seconds):
    """``collect()`` in this process (the test probe is registered here only); its meta
    and ``hot_loop`` counts."""
    from reveal_lab.collect import collect

    res = collect(out, interval_s=0.1, duration_s=seconds, probes=spec, host=host, handle_signals=False)
    assert res.status == "complete"
    meta = _meta(out)
    return meta, meta["hot_loop"]


def test_a_python_probe_every_tick_runs_partial_ticks(tmp_path, python_probe):
    """A probe sampled in Python at the interval (like perf or NVML): every tick is
    partial, and the rows equal in shape and rules those of the interpreted loop."""
    out = tmp_path / "partial"
    meta, hot = _collect_in_process(out, f"cpu,netdev,loadavg@300ms,{python_probe}", "q", 2)
    assert hot["compiled_ticks"] == 0
    assert hot["partial_ticks"] + hot["python_ticks"] == meta["samples"] > 0
    assert meta["samples"] + meta["missed_ticks"] == 20  # 2 s at 100 ms, whatever the load
    assert hot["python_ticks"] <= sum(meta["relayouts"].values())
    rawf = read_raw_frame(out)[0]
    k = _k(out, rawf)
    up = rawf.get_column("System:uptime.q[s]")
    assert up.null_count() == 0 and not up.is_nan().any() and (up.diff().drop_nulls() > 0).all()
    la = rawf.get_column("System:loadavg1.q[-]").fill_nan(None).is_not_null().to_numpy()
    assert (la == _expected_sampled(k, 3)).all()
    lag = rawf.get_column("Collector:lag.q[us]")
    assert (lag >= 0).all()


@pytest.mark.slow
def test_compiled_loop_runs_the_ticks_and_matches_the_interpreted_one(pair):
    comp, py = pair
    mc, mp = _meta(comp), _meta(py)
    assert mc["status"] == mp["status"] == "complete"
    # every tick of the compiled run ran compiled (but a tick on which a file's layout
    # changed, e.g. an interface appeared, which the probes redo in Python); none of the
    # interpreted run did
    relayouts = sum(mc["relayouts"].values())
    assert mc["hot_loop"]["python_ticks"] <= relayouts, (mc["hot_loop"], mc["relayouts"])
    assert mc["hot_loop"]["compiled_ticks"] + mc["hot_loop"]["python_ticks"] == mc["samples"] >= 20
    assert mc["hot_loop"]["compiled_ticks"] >= mc["samples"] - relayouts
    assert mp["hot_loop"]["compiled_ticks"] == 0 and mp["hot_loop"]["python_ticks"] == mp["samples"]
    for m in (mc, mp):
        assert m["samples"] + m["missed_ticks"] == 30
    # the same probes give the same channels, in the same order, in both loops; an interface or
    # disk that appeared or vanished between the two processes' starts (another test's veth
    # pair: the root tests run beside this one) is listed by one run only
    (cc, cp), odd = _shared_instances(comp, py)
    assert {probe for probe, _ in odd} <= {"netdev", "diskstats"}, odd
    assert cc == cp
    assert mc["probes_used"] == mp["probes_used"]
    assert {c["probe"] for c in cc} >= set(mc["probes_used"]) - {"netdev", "diskstats"}
    if not odd:
        assert (comp / "channels.json").read_text() == (py / "channels.json").read_text()
    gone = {parse_metric_name(c["name"]).instance for c in _channels(comp) + _channels(py) if _key(c) in odd}
    fc, fp = (
        f.select([c for c in f.columns if getattr(parse_metric_name(c), "instance", None) not in gone])
        for f in (read_collector_run(comp).frame, read_collector_run(py).frame)
    )
    assert fc.columns == fp.columns and fc.schema == fp.schema
    steps = fc.get_column("timestamp").diff().dt.total_milliseconds().drop_nulls()
    assert (steps > 0).all() and 90 <= steps.median() <= 110
    # static values agree between the two processes
    total = "Memory:MemTotal.b[kB]"
    assert (
        fc.get_column(total).drop_nulls().unique().to_list()
        == fp.get_column(total).drop_nulls().unique().to_list()
    )


@pytest.mark.slow
def test_compiled_loop_keeps_the_slow_probe_rules(pair):
    comp, _ = pair
    rawf, meta, channels, _ = read_raw_frame(comp)
    k = _k(comp, rawf)
    assert (np.diff(k) > 0).all()
    by_probe = {}
    for c in channels:
        by_probe.setdefault(c["probe"], []).append(c["name"])
    for probe, d in (("meminfo", 3), ("softirqs", 2), ("unix", 5)):
        block = rawf.select(by_probe[probe])
        sampled = ~block.select(pl.all_horizontal(pl.all().is_null())).to_series().to_numpy()
        assert (sampled == _expected_sampled(k, d)).all(), (probe, k.tolist(), sampled.tolist())
    every_tick = [p for p in ("cpu", "netdev", "nstat", "sockets", "self") if p in meta["probes_used"]]
    assert {"cpu", "self"} <= set(every_tick)  # netdev is skipped where there is no interface
    for probe in every_tick:
        cols = by_probe[probe]
        if probe == "netdev":
            # an interface removed while the pair recorded (another test's veth: the root tests
            # run beside this one) reads as missing from then on; those still here read every tick
            here = {sanitize_instance(d) for d in os.listdir("/sys/class/net")}
            cols = [c for c in cols if _interface(c) in here]
            assert cols, by_probe[probe]
        assert rawf.select(cols).null_count().sum_horizontal().item() == 0, probe
    # the self probe's values come from the compiled loop: lag in µs, missed ticks, CPU time
    lag = rawf.get_column("Collector:lag.b[us]")
    assert (lag >= 0).all() and lag.median() < 50_000
    cpu = rawf.get_column("Collector:cpu_time.b[us]").to_numpy()
    assert (np.diff(cpu) >= 0).all() and cpu[-1] > 0
    # counters rise monotonically on the compiled ticks (read fresh every tick)
    ctxt = rawf.get_column("CPU:ctxt.b[count]").to_numpy()
    assert (np.diff(ctxt) > 0).all()


@pytest.fixture
def python_probe():
    """A probe that samples in Python (no tables, no compiled ops): /proc/uptime parsed
    with float(), selectable by name for the test only."""
    from reveal_lab.collect import PROBES, Channel, Probe

    class Uptime(Probe):
        name, group = "test_uptime", "procfs"
        description = "/proc/uptime, parsed in Python (test probe)"

        def open(self, ctx):
            self.fd = ctx.open_ro("/proc/uptime")
            self._fds = [self.fd]
            self.channels = [Channel("System", "uptime", None, "s", dtype="f")]

        def sample(self, ints, floats):
            floats[0] = float(os.pread(self.fd, 128, 0).split()[0])

    PROBES[Uptime.name] = Uptime
    try:
        yield "test_uptime"
    finally:
        PROBES.pop("test_uptime", None)


def test_python_probes_run_on_their_ticks_between_compiled_ones(tmp_path, python_probe):
    out = tmp_path / "mixed"
    meta, hot = _collect_in_process(out, f"cpu,netdev,loadavg@300ms,psi@500ms,{python_probe}@400ms", "m", 3)
    # on the Python probe's ticks the compiled loop does the rest of the tick ("partial")
    assert hot["compiled_ticks"] > 0 and hot["partial_ticks"] > 0
    assert hot["compiled_ticks"] + hot["partial_ticks"] + hot["python_ticks"] == meta["samples"]
    rawf, _, channels, _ = read_raw_frame(out)
    k = _k(out, rawf)

    def sampled(name):
        col = rawf.get_column(name)
        return (col.fill_nan(None) if col.dtype.is_float() else col).is_not_null().to_numpy()

    # compiled probes (ops) and the Python probe each keep their own period
    for name, d in (
        ("System:loadavg1.m[-]", 3),
        ("System:threads_total.m[count]", 3),
        ("System:uptime.m[s]", 4),
    ):
        assert (sampled(name) == _expected_sampled(k, d)).all(), (name, k.tolist(), sampled(name).tolist())
    if "psi" in meta["probes_used"]:
        psi = next(c["name"] for c in channels if c["probe"] == "psi")
        assert (sampled(psi) == _expected_sampled(k, 5)).all()
    # the Python ticks are those on which the Python probe was due (plus any tick on
    # which a file's layout changed: the probes redo that one in Python)
    due = int(_expected_sampled(k, 4).sum())
    relayouts = sum(meta["relayouts"].values())
    assert due - relayouts <= hot["partial_ticks"] <= due
    assert hot["python_ticks"] <= relayouts
    # the other channels of the partial ticks are there (cpu every tick, never null)
    cpu = [c["name"] for c in channels if c["probe"] == "cpu"]
    assert rawf.select(cpu).null_count().sum_horizontal().item() == 0
    up = rawf.get_column("System:uptime.m[s]").drop_nans().drop_nulls().to_numpy()
    assert (np.diff(up) > 0).all()


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None, reason="needs root and iproute2")
@pytest.mark.root  # one at a time with the other tests that add and remove network devices
@pytest.mark.slow
def test_a_new_interface_mid_run_is_relearnt(tmp_path):
    """Two devices appearing change /proc/net/dev's layout: the compiled loop hands that
    tick to the probe's own label-based path and carries on compiled."""
    out = tmp_path / "relayout"
    name = "rl" + uuid.uuid4().hex[:8]
    proc = subprocess.Popen(
        collect_cmd(out, "--interval", "100ms", "--duration", "4s", "--probes", "cpu,netdev", "--host", "r"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(out / "channels.json", timeout=60)
        time.sleep(1.0)
        add = subprocess.run(
            ["ip", "link", "add", name, "type", "veth", "peer", "name", name + "p"],
            capture_output=True,
            text=True,
        )
        if add.returncode != 0:
            proc.kill()
            pytest.skip(f"cannot add a veth pair: {add.stderr.strip()}")
        _, err = proc.communicate(timeout=60)
    finally:
        subprocess.run(["ip", "link", "del", name], capture_output=True)
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    meta = _meta(out)
    if "netdev" not in meta["probes_used"]:
        pytest.skip(f"netdev unavailable here: {meta['probes_skipped'].get('netdev')}")
    assert meta["relayouts"]["netdev"] >= 1
    assert meta["hot_loop"]["python_ticks"] >= 1 and meta["hot_loop"]["compiled_ticks"] >= 20
    assert meta["samples"] + meta["missed_ticks"] == 40
    rawf = read_raw_frame(out)[0]
    net = [c for c in rawf.columns if c.startswith("NetworkInterStat:")]
    assert net and not any(name in c for c in net)  # the channels are those of the start
    # the interfaces known from the start keep their values on every tick, before and after
    assert rawf.select(net).null_count().sum_horizontal().item() == 0


def test_sigterm_stops_the_compiled_loop_promptly(tmp_path):
    out = tmp_path / "term"
    proc = subprocess.Popen(
        collect_cmd(out, "--interval", "100ms", "--probes", "cpu,meminfo,netdev", "--host", "t"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(out / "channels.json", timeout=60)
    time.sleep(1.5)
    sent_mono_ns = time.monotonic_ns()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    meta = _meta(out)
    assert meta["status"] == "interrupted" and meta["hot_loop"]["compiled_ticks"] >= 1
    run = read_collector_run(out)
    # >= 1.5 s ran before the signal: 15 deadlines, each a sample or a counted miss (load
    # decides the split, so only the sum is checked)
    assert run.frame.height == meta["samples"] > 0
    assert meta["samples"] + meta["missed_ticks"] >= 10, (meta["samples"], meta["missed_ticks"])
    # the loop stops at its next wake-up (the signal interrupts the sleep; one arriving
    # while files are read is seen by the next flush at the latest): no sample is taken
    # more than one flush period plus one tick after the signal, on the collector's clock
    last = int(read_raw_frame(out)[0].get_column("t_mono_ns")[-1])
    assert last <= sent_mono_ns + 1_200_000_000, (last - sent_mono_ns) / 1e9


def test_kill9_in_the_compiled_loop_leaves_the_synced_samples(tmp_path):
    out = tmp_path / "k9"
    proc = subprocess.Popen(
        collect_cmd(
            out,
            "--interval",
            "100ms",
            "--duration",
            "60s",
            "--probes",
            "cpu,meminfo,netdev,nstat",
            "--host",
            "k",
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(out / "channels.json", timeout=60)
        wait_for_chunks(out, 3)  # three flushes: the first tick's, then one a second
        time.sleep(0.3)  # then killed between two flushes
        kill_ns = time.time_ns()
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(10) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
    with pytest.warns(Warning, match="killed"):
        raw = read_collector_run(out, view="raw").frame
    last_ms = raw.get_column("timestamp").dt.epoch("ms")[-1]  # naive UTC, not local time
    lost_ms = kill_ns // 1_000_000 - last_ms
    # how much is lost is pinned by the journal's chunks (at most one flush period of
    # samples each, all read back), not by wall time, which load stretches
    assert 0 <= lost_ms, lost_ms
    sizes = [n for p in sorted(out.glob("journal-*.bin")) for n in journal_chunk_sizes(p)]
    assert len(sizes) >= 2 and max(sizes) <= 1.0 / 0.1 + 1, sizes
    assert raw.height == sum(sizes)
    missed = int(raw.get_column("Collector:missed_ticks.k[count]")[-1])
    assert raw.height + missed >= 15  # 2 s synced: each deadline a sample or a counted miss


def test_proc_files_longer_than_a_page_are_read_to_the_end():
    """/proc/net/unix returns one page per read; 150 socket pairs make it ~3 pages.
    read_all, a Table and the compiled batch read must all see every line."""
    pairs = [socket.socketpair() for _ in range(150)]
    try:
        ctx = ProbeContext(host="h", interval_s=0.1)

        def index(lines):
            mapping = {}
            for ln, line in enumerate(lines[1:], start=1):
                toks = line.split()
                if len(toks) >= 7:
                    mapping[int(toks[6])] = (ln, 6)  # the inode column, keyed by itself
            return mapping, {0: lines[0]}

        for _ in range(20):  # other processes may open or close sockets meanwhile: retry
            with open("/proc/self/net/unix", "rb") as f:
                before = f.read()
            fd = os.open("/proc/self/net/unix", os.O_RDONLY)
            try:
                whole = read_all(fd)
            finally:
                os.close(fd)
            table = Table(ctx, "/proc/self/net/unix", index)
            small = Table(ctx, "/proc/self/net/snmp", lambda lines: ({0: (1, 1)}, {}))
            one_read = small.single
            small.close()
            values = table.values()
            batch = TableBatch.create([table])
            assert batch is not None
            batch.run()
            batched = batch.out.copy()
            with open("/proc/self/net/unix", "rb") as f:
                after = f.read()
            table.close()
            if before == after:
                break
        else:
            pytest.skip("/proc/net/unix kept changing")
        lines = LineCount(ctx, "/proc/self/net/unix")
        lb = TableBatch.create([lines], direct=[True])
        assert lb is not None and lb.run()  # the compiled count, layout "unchanged"
        counted, own = int(lb.out[0]), lines.values()[0]
        lines.close()
        n_before = before.count(b"\n") - 1
        assert abs(counted - n_before) <= 20 and abs(own - n_before) <= 20  # others may open sockets
        assert len(before) > 3 * 4096
        assert whole == before
        inodes = sorted(int(line.split()[6]) for line in before.split(b"\n")[1:] if len(line.split()) >= 7)
        assert len(inodes) >= 300
        assert sorted(table.keys) == inodes
        assert not table.single  # one read returns one page of this file: read to the end
        assert one_read  # /proc/net/snmp is generated whole: one read is enough
        np.testing.assert_array_equal(values, np.array(table.keys))
        np.testing.assert_array_equal(batched, np.array(table.keys))
    finally:
        for a, b in pairs:
            a.close()
            b.close()


@pytest.mark.parametrize("name", ["loadavg", "psi", "interrupts"])
def test_compiled_ops_give_what_sample_gives_from_the_same_read(name):
    """One batched read; the compiled ops and the probe's own ``sample()`` (which takes
    the same batched values) must agree exactly, floats included."""
    import reveal_lab.collect.probes  # noqa: F401  (registers the probes)
    from reveal_lab.collect import PROBES
    from reveal_lab.collect._burst import apply_ops
    from reveal_lab.collect._compiled import proc_tables as _proc_tables
    from reveal_lab.collect._probe import OP_FIXED, ProbeUnavailable

    p = PROBES[name]()
    try:
        p.open(ProbeContext(host="h", interval_s=0.1))
    except ProbeUnavailable as exc:
        pytest.skip(str(exc))
    try:
        tables = _proc_tables(p)
        batch = TableBatch.create(tables)
        assert batch is not None
        ops = p.compiled_ops()
        assert ops, "a procfs probe with tables has compiled ops"
        for _ in range(5):
            vi_c, vf_c = np.full(p.n_int, -7, np.int64), np.full(p.n_float, -7.0)
            vi_p, vf_p = vi_c.copy(), vf_c.copy()
            batch.run()
            for ti in range(len(tables)):
                mine = np.array([o for o in ops if o[0] == ti], dtype=np.int64).reshape(-1, 6)
                poff = np.array([0, len(mine)], dtype=np.int64)
                apply_ops(
                    0, int(batch.ooff[ti, 0]), poff, mine[:, 1].copy(), mine[:, 2].copy(), mine[:, 3].copy(),
                    mine[:, 4].copy(), mine[:, 5].copy(), batch.out, vi_c, vf_c,
                )  # fmt: skip
            p.sample(vi_p, vf_p)  # takes this tick's batched values (Table._pre)
            assert all(t._pre is None for t in tables), "sample() used the batched values"
            np.testing.assert_array_equal(vi_c, vi_p)
            np.testing.assert_array_equal(vf_c, vf_p)
            # every channel written (no -7 left), floats as the file prints them
            assert not (vi_c == -7).any() and not (vf_c == -7.0).any()
            time.sleep(0.05)
        kinds = {o[1] for o in ops}
        assert (OP_FIXED in kinds) == (p.n_float > 0)
        if name == "loadavg":
            text = open("/proc/loadavg").read().split()  # noqa: SIM115
            assert abs(vf_p[0] - float(text[0])) < 5  # same file a moment later
            assert vf_p[0] == float(f"{vf_p[0]:.2f}")  # exact two-decimal value
    finally:
        p.close()
