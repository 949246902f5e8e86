"""A device IRQ freed while the collector samples ``/proc/interrupts`` (a device's MSI vectors
released, a NIC's queues torn down): its row vanishes from the file. The named classes keep
their values, the per-core ``devices`` sums go on over the IRQs still listed (the freed one
counting as zero, as the interpreted path counts it), and the compiled loop goes on with the
table in its batch and the probe's compiled ops (one interpreted tick relearns the layout)
instead of sampling the probe in Python on every later tick. On a tree written here
(:func:`~reveal_lab.collect.write_proc_tree`), read through ``proc_root``; the same values in
every loop."""

from __future__ import annotations

import pytest
from sampling_helpers import while_sampling

from reveal_lab.collect import collect, write_proc_tree
from reveal_lab.io._collector import read_raw_frame

CORES = 4
#: the IRQ freed mid-run: an NVMe queue's (``nvme0q1``)
GONE = b"33:"


def _expected(text: bytes) -> dict[str, int]:
    """Each channel's value from a plain split of ``/proc/interrupts``: a named class per core
    (``ERR``/``MIS``: one value, core 0), ``devices``: the numbered rows summed per core."""
    lines = text.splitlines()
    ncpu = len(lines[0].split())
    out: dict[str, int] = {f"Interrupts:devices.{c}.h[count]": 0 for c in range(ncpu)}
    for line in lines[1:]:
        toks = line.split()
        label = toks[0].rstrip(b":").decode()
        vals = [int(t) for t in toks[1 : 1 + ncpu] if t.isdigit()]
        for c, v in enumerate(vals):
            if label.isdigit():
                out[f"Interrupts:devices.{c}.h[count]"] += v
            else:
                out[f"Interrupts:{label}.{c}.h[count]"] = v
    return out


@pytest.mark.parametrize("burst", ["1", "0", "no batch"])
def test_a_freed_irq_drops_out_of_the_sums_and_the_loop_goes_on(tmp_path, monkeypatch, burst):
    monkeypatch.setenv("REVEAL_LAB_COLLECT_BURST", "1" if burst == "1" else "0")
    monkeypatch.setenv("REVEAL_LAB_COLLECT_BATCH", "0" if burst == "no batch" else "1")
    proc, sys_ = write_proc_tree(tmp_path / "host", CORES)
    irq = proc / "interrupts"
    before = irq.read_bytes()
    after = b"".join(ln for ln in before.splitlines(keepends=True) if not ln.lstrip().startswith(GONE))
    assert len(after) < len(before)
    want0, want1 = _expected(before), _expected(after)
    assert want0.keys() == want1.keys()
    assert all(want1[f"Interrupts:devices.{c}.h[count]"] <= want0[f"Interrupts:devices.{c}.h[count]"]
               for c in range(CORES))  # fmt: skip
    assert want1 != want0  # the freed IRQ counted on some core
    out = tmp_path / "run"

    def free() -> bool:
        with open(irq, "r+b") as f:  # in place, as the kernel's file: the collector's fd reads it
            f.write(after)
            f.truncate()
        return True

    with while_sampling(out, free, delay_s=0.6) as done:
        res = collect(
            out, interval_s=0.05, duration_s=1.5, probes="interrupts", host="h", handle_signals=False,
            proc_root=str(proc), sys_root=str(sys_),
        )  # fmt: skip
    assert done == [True] and res.status == "complete"
    loop = res.meta["hot_loop"]
    if burst == "1" and loop["compiled_ticks"]:  # numba present
        # the interpreted ticks are those before the compiled loop was ready and the one (two
        # where a read fell between the rewrite's two steps) that relearnt the layout; the
        # probe is never sampled in Python beside the compiled ticks
        assert loop["python_ticks"] - loop.get("ticks_before_compiled", 0) <= 2, loop
        assert loop["partial_ticks"] == 0, loop
    assert 1 <= res.meta["relayouts"]["interrupts"] <= 2
    raw, _, channels, _ = read_raw_frame(out)
    names = [c["name"] for c in channels if c["probe"] == "interrupts"]
    assert sorted(names) == sorted(want0)
    first, last = raw.row(0, named=True), raw.row(raw.height - 1, named=True)
    assert {n: first[n] for n in names} == want0
    assert {n: last[n] for n in names} == want1
    # from the first tick that read the rewritten file on, every row has its values
    rows = [{n: r[n] for n in names} for r in raw.iter_rows(named=True)]
    k = rows.index(want1)
    assert all(r == want1 for r in rows[k:])
