"""Nothing recorded is lost: kill -9, torn journal tails, a full disk, an ordinary user,
a network namespace."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from collect_helpers import collect_cmd, journal_chunk_sizes, net_interfaces, wait_for, wait_for_chunks

from reveal_lab.io._collector import read_collector_run
from reveal_lab.telemetry import TelemetryError, TelemetryWarning, validate_frame

needs_root = pytest.mark.root


@pytest.fixture(scope="module")
def killed_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("k") / "run"
    proc = subprocess.Popen(
        collect_cmd(out, "--interval", "100ms", "--duration", "60s", "--probes", "procfs", "--host", "k"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(out / "channels.json")
        wait_for_chunks(out, 3)  # three flushes: the first tick's, then one a second
        time.sleep(0.3)  # then killed between two flushes
        kill_ns = time.time_ns()
        proc.send_signal(signal.SIGKILL)
        rc = proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stderr.close()
    # the collector was still running and died of the SIGKILL (not of an earlier error or exit)
    assert rc == -signal.SIGKILL, rc
    return out, kill_ns


def test_kill9_leaves_every_synced_sample_readable(killed_run):
    out, kill_ns = killed_run
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "running"  # never finalised: the process died
    assert not list(out.glob("segment-*")) and list(out.glob("journal-*.bin"))
    with pytest.warns(TelemetryWarning, match="killed"):
        run = read_collector_run(out)
    validate_frame(run.frame)
    raw = read_collector_run(out, view="raw").frame
    last = raw.get_column("timestamp")[-1]
    start_ms = meta["clock"]["wall_ns"] // 1_000_000
    kill_ms = kill_ns // 1_000_000
    # the frame's timestamps are naive UTC: datetime.timestamp() would read them as local time
    lost_ms = kill_ms - int(last.replace(tzinfo=dt.UTC).timestamp() * 1000)
    # nothing readable comes from after the kill; how much before it is lost is pinned by
    # the journal's chunks (test_kill9_loses_at_most_one_flush_period), not by wall time,
    # which a loaded machine stretches
    assert 0 <= lost_ms, lost_ms
    missed = int(raw.get_column("Collector:missed_ticks.k[count]")[-1])
    assert raw.height + missed >= (kill_ms - start_ms - 1500) / 100


def test_kill9_loses_at_most_one_flush_period(killed_run):
    """A kill -9 loses only the samples queued since the last flush: the journal holds one
    chunk per flush period (default 1 s), each with at most ``flush/interval + 1`` samples
    whatever the load (ticks are never closer than the interval), and every chunk written
    is read back. Broken variant: a 2 s flush period (default or writer) gives ~20-sample
    chunks and fails here; the old wall-clock bound (lost <= 1.5 s) passed it by chance."""
    out, _ = killed_run
    meta = json.loads((out / "meta.json").read_text())
    assert meta["flush_s"] == 1.0 and meta["interval_ms"] == 100.0
    sizes = journal_chunk_sizes(next(out.glob("journal-*.bin")))
    assert len(sizes) >= 2, sizes  # killed after three flushes
    assert max(sizes) <= 1.0 / 0.1 + 1, sizes
    with pytest.warns(TelemetryWarning, match="killed"):
        assert read_collector_run(out, view="raw").frame.height == sum(sizes)


def test_torn_and_garbled_journal_tails_are_warnings(killed_run, tmp_path):
    out, _ = killed_run
    copy = tmp_path / "torn"
    shutil.copytree(out, copy)
    journal = next(copy.glob("journal-*.bin"))
    full = read_collector_run(copy, view="raw").frame.height
    data = journal.read_bytes()
    journal.write_bytes(data[:-7])
    with pytest.warns(TelemetryWarning, match=r"torn last chunk .* bytes ignored"):
        run = read_collector_run(copy, view="raw")
    assert 0 < run.frame.height < full
    assert any("torn last chunk" in w for w in run.warnings)
    journal.write_bytes(data + b"\x00garbage after the last chunk")
    with pytest.warns(TelemetryWarning, match="no chunk marker"):
        run = read_collector_run(copy, view="raw")
    assert run.frame.height == full
    # a flipped byte inside a chunk: that chunk's samples are reported and left out
    bad = bytearray(data)
    bad[-20] ^= 0xFF
    journal.write_bytes(bytes(bad))
    with pytest.warns(TelemetryWarning, match="fails its CRC"):
        run = read_collector_run(copy, view="raw")
    assert run.frame.height < full


def test_garbled_metadata_files_name_the_file_and_line(killed_run, tmp_path):
    out, _ = killed_run
    for name in ("meta.json", "channels.json"):
        copy = tmp_path / name
        shutil.copytree(out, copy)
        text = (copy / name).read_text()
        (copy / name).write_text(text[: len(text) // 2])  # a file cut short
        with pytest.raises(TelemetryError, match=f"{name} is not valid JSON") as e:
            read_collector_run(copy)
        assert e.value.path == str(copy / name) and e.value.line is not None
        assert str(copy / name) in str(e.value)


def test_clean_stop_on_sigterm_rolls_a_segment(tmp_path):
    out = tmp_path / "t"
    proc = subprocess.Popen(
        collect_cmd(out, "--interval", "100ms", "--probes", "cpu,meminfo"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(out / "channels.json")
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    stdout, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "interrupted"
    assert [p.name for p in out.iterdir() if p.name.startswith(("segment", "journal"))] == [
        "segment-000000.parquet"
    ]
    run = read_collector_run(out)
    assert run.frame.height == meta["samples"] >= 5 and run.warnings == []


ENOSPC_SCRIPT = textwrap.dedent("""
    import json, os, subprocess, sys, time
    mnt, cmd = sys.argv[1], json.loads(sys.argv[2])
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mnt], check=True)
    out = os.path.join(mnt, "run")
    p = subprocess.Popen(cmd + ["--out", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t = time.monotonic() + 30
    while not os.path.exists(os.path.join(out, "channels.json")) and time.monotonic() < t:
        time.sleep(0.05)
    time.sleep(1.6)
    fd = os.open(os.path.join(mnt, "filler"), os.O_WRONLY | os.O_CREAT)   # fill the disk to the last byte
    try:
        while os.write(fd, b"x" * 4096):
            pass
    except OSError:
        pass
    os.close(fd)
    rc = p.wait(30)
    _, err = p.communicate()
    os.unlink(os.path.join(mnt, "filler"))    # make room so the reader may run its own imports
    from reveal_lab.io._collector import read_collector_run
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = read_collector_run(out)
    print(json.dumps({"rc": rc, "stderr": err[-3000:], "rows": run.frame.height, "warnings": run.warnings,
                      "files": sorted(os.listdir(out))}))
""")


@needs_root
def test_full_disk_stops_with_a_clear_message_and_readable_data(tmp_path):
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare to mount a private tiny tmpfs")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    script = tmp_path / "enospc.py"
    script.write_text(ENOSPC_SCRIPT)
    cmd = collect_cmd(Path("unused"), "--interval", "100ms", "--duration", "60s", "--probes", "procfs")
    cmd = cmd[: cmd.index("--out")] + cmd[cmd.index("--out") + 2 :]
    res = subprocess.run(
        ["unshare", "-m", "--propagation", "private", sys.executable, str(script), str(mnt), json.dumps(cmd)],
        capture_output=True,
        text=True,
        timeout=90,
    )
    if res.returncode != 0 and "mount" in res.stderr and "permission" in res.stderr.lower():
        pytest.skip(f"cannot mount tmpfs here: {res.stderr[-300:]}")
    assert res.returncode == 0, res.stderr[-2000:]
    r = json.loads(res.stdout.strip().splitlines()[-1])
    assert r["rc"] == 3, r
    assert "disk full" in r["stderr"] and "readable" in r["stderr"], r["stderr"]
    assert r["rows"] >= 10  # ~1.6 s of samples were synced before the disk filled
    assert "journal-000000.bin" in r["files"]


@needs_root
def test_ordinary_user_gets_reduced_probes(request):
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to drop to nobody")
    import tempfile

    as_nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    # nobody must reach this interpreter and its packages: a checkout or venv inside a directory
    # only root may read (mktemp -d makes it 0700) runs as a bare Python without them
    probe = subprocess.run([*as_nobody, sys.executable, "-c", "import numpy, polars, reveal_lab.cli"],
                           capture_output=True, text=True, timeout=120, cwd="/")
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["no message"])[-1]
        pytest.skip(f"the unprivileged user cannot use this environment ({sys.executable}): {last}; "
                    "a checkout or venv in a directory only root can read (e.g. mktemp -d, mode 0700)")
    base = Path(tempfile.mkdtemp(prefix="rvl-user-", dir="/tmp"))  # pytest's tmp is private to root
    request.addfinalizer(lambda: shutil.rmtree(base, ignore_errors=True))
    os.chmod(base, 0o777)
    out = base / "user"
    res = subprocess.run(
        [*as_nobody, *collect_cmd(out, "--interval", "100ms", "--duration", "1s", "--probes", "procfs,perf")],
        capture_output=True,
        text=True,
        timeout=300,  # ends a hang only: as nobody numba cannot use the cache, and compiles under load
        cwd="/",
    )
    assert res.returncode == 0, res.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert meta["uid"] != 0
    assert {"cpu", "meminfo"} <= set(meta["probes_used"])
    assert ("netdev" in meta["probes_used"]) == bool(net_interfaces())  # none besides lo: skipped
    paranoid = int(Path("/proc/sys/kernel/perf_event_paranoid").read_text())
    if paranoid >= 1 and shutil.which("perf"):
        assert "perf" in meta["probes_skipped"]
        assert "perf_event_paranoid" in meta["probes_skipped"]["perf"]
    # every tick of the 1 s run is either a sample or counted missed (a loaded machine misses
    # some): the count, not a wall-clock share, is what the collector guarantees
    assert read_collector_run(out).frame.height == meta["samples"] > 0
    assert meta["samples"] + meta["missed_ticks"] >= 8, (meta["samples"], meta["missed_ticks"])


@needs_root
def test_collector_inside_a_network_namespace_sees_that_namespace(tmp_path):
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and iproute2")
    ns = f"rvl-test-{os.getpid()}"
    if subprocess.run(["ip", "netns", "add", ns], capture_output=True).returncode != 0:
        pytest.skip("cannot create a network namespace here")
    try:
        r = subprocess.run(
            ["ip", "link", "add", "rvl-a", "type", "veth", "peer", "name", "rvl-b", "netns", ns],
            capture_output=True,
            text=True,
        )
        if r.returncode != 0:
            pytest.skip(f"cannot create a veth pair: {r.stderr}")
        out = tmp_path / "ns"
        res = subprocess.run(
            [
                "ip",
                "netns",
                "exec",
                ns,
                *collect_cmd(out, "--duration", "1s", "--probes", "netdev,nstat,sockets", "--host", "n1"),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert res.returncode == 0, res.stderr
        meta = json.loads((out / "meta.json").read_text())
        assert meta["net_namespace"] != os.readlink("/proc/self/ns/net")
        assert meta["probe_info"]["netdev"]["interfaces"] == ["rvl-b"]
        cols = read_collector_run(out).frame.columns
        assert "NetworkInterStat_diff:rx_bytes.rvl-b.n1[Bytes]" in cols
        assert not any(".eth0." in c for c in cols)
    finally:
        subprocess.run(["ip", "link", "del", "rvl-a"], capture_output=True)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def test_two_hosts_merge_by_time(tmp_path):
    from reveal_lab.io._collector import merge_hosts

    procs = [
        subprocess.Popen(
            collect_cmd(tmp_path / h, "--duration", "2s", "--probes", "cpu,meminfo", "--host", h),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for h in ("h1", "h2")
    ]
    for p in procs:
        assert p.wait(60) == 0, p.stderr.read()
        p.stderr.close()
    a, b = read_collector_run(tmp_path / "h1"), read_collector_run(tmp_path / "h2")
    m = merge_hosts([a, b])
    validate_frame(m.frame)
    assert m.meta.hosts == ("h1", "h2")
    assert m.frame.height == a.frame.height
    col = "Memory:MemTotal.h2[kB]"
    # a reference row holds h2's values exactly when an h2 sample lies within half an interval
    # of it: checked against the two runs' own timestamps, since how many rows match depends on
    # how far apart the two processes started and on the phase between their ticks (two
    # collectors ~50 ms out of phase straddle the tolerance), i.e. on this machine's scheduling
    ta = a.frame.get_column("timestamp").dt.epoch("ms").to_numpy()
    tb = b.frame.get_column("timestamp").dt.epoch("ms").to_numpy()
    tol = b.meta.interval_ms / 2
    near = np.abs(ta[:, None] - tb[None, :]).min(axis=1) <= tol
    assert (m.frame.get_column(col).is_not_null().to_numpy() == near).all()
    assert m.frame.get_column(col).null_count() == (~near).sum()
    # the two ran at the same time: with h2's phase against h1 taken as its clock offset, the
    # rows line up whatever the phase (under load the two can start ~50 ms out of phase, and
    # then no row is within half an interval as they ran)
    phase = float(np.median(tb - ta[np.abs(tb[:, None] - ta[None, :]).argmin(axis=1)]))
    aligned = merge_hosts([a, b], skew_ms={"h2": phase})
    lined_up = aligned.frame.get_column(col).is_not_null().sum()
    assert lined_up >= min(a.frame.height, b.frame.height) // 2, (phase, lined_up)
    assert set(m.split_hosts()) == {"h1", "h2"}
    # a known clock offset moves host h2 on the reference timeline
    shifted = b.frame.with_columns(pl.col("timestamp") + pl.duration(milliseconds=5000))
    from reveal_lab.telemetry import Run

    b2 = Run(b.meta, shifted, [])
    with pytest.warns(TelemetryWarning, match="matched no reference"):
        far = merge_hosts([a, b2])
    assert far.frame.get_column(col).null_count() == far.frame.height
    near = merge_hosts([a, b2], skew_ms={"h2": 5000})
    assert near.frame.get_column(col).null_count() == m.frame.get_column(col).null_count()
