"""An interface that vanishes while the collector samples ``/proc/net/dev`` (a container's
``veth`` when it exits): its channels read as missing, the other interfaces' keep their values,
and the compiled loop goes on reading the file in its batch (one interpreted tick relearns the
layout) instead of sending every later tick back to the interpreted loop; where the probe reads
its table itself (no batch), the layout is learnt again once, not on every tick. On a tree
written here, read through ``proc_root``; the same values in every loop."""

from __future__ import annotations

import pytest
from sampling_helpers import while_sampling

from reveal_lab.collect import collect
from reveal_lab.collect.probes._net import NETDEV_FIELDS
from reveal_lab.io._collector import read_raw_frame

HEAD = (
    "Inter-|   Receive                                                |  Transmit\n"
    " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls "
    "carrier compressed\n"
)
IFACES = {
    "eth0": [4206289900 + j for j in range(16)],
    "veth1a2b": [1000 * j + 1 for j in range(16)],
    "eth1": [77 * j for j in range(16)],
}


def _netdev(ifaces: dict[str, list[int]]) -> str:
    rows = ["    lo: " + " ".join(["603473701"] * 16)]
    for d, v in ifaces.items():
        rows.append(f"{d:>6s}:{v[0]:8d} {v[1]:7d} " + " ".join(f"{x:4d}" for x in v[2:]))
    return HEAD + "\n".join(rows) + "\n"


@pytest.mark.parametrize("burst", ["1", "0", "no batch"])
def test_a_vanished_interface_reads_missing_and_the_loop_goes_on(tmp_path, monkeypatch, burst):
    monkeypatch.setenv("REVEAL_LAB_COLLECT_BURST", "1" if burst == "1" else "0")
    monkeypatch.setenv("REVEAL_LAB_COLLECT_BATCH", "0" if burst == "no batch" else "1")
    proc = tmp_path / "proc"
    dev = proc / "self" / "net" / "dev"
    dev.parent.mkdir(parents=True)
    dev.write_text(_netdev(IFACES))
    (tmp_path / "sys").mkdir()
    out = tmp_path / "run"
    rest = {d: v for d, v in IFACES.items() if d != "veth1a2b"}

    def vanish() -> bool:
        with open(dev, "r+") as f:  # in place, as the kernel's file: the collector's fd reads it
            f.write(_netdev(rest))
            f.truncate()
        return True

    with while_sampling(out, vanish) as done:
        res = collect(
            out, interval_s=0.05, duration_s=1.5, probes="netdev", host="h", handle_signals=False,
            proc_root=str(proc), sys_root=str(tmp_path / "sys"),
        )  # fmt: skip
    assert done == [True] and res.status == "complete"
    loop = res.meta["hot_loop"]
    if burst == "1" and loop["compiled_ticks"]:  # numba present
        assert loop["python_ticks"] <= 2, loop
    # the layout is learnt again once (twice where a read fell between the rewrite's two steps),
    # not on every tick after
    assert 1 <= res.meta["relayouts"]["netdev"] <= 2
    raw, _, channels, _ = read_raw_frame(out)
    names = {(c["name"].split(".")[1], c["name"].split(":")[1].split(".")[0]): c["name"] for c in channels}
    first, last = raw.row(0, named=True), raw.row(raw.height - 1, named=True)
    for d, vals in IFACES.items():
        assert [first[names[(d, f)]] for f in NETDEV_FIELDS] == vals
        want = [None] * 16 if d not in rest else vals
        assert [last[names[(d, f)]] for f in NETDEV_FIELDS] == want, d
