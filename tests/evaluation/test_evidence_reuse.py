"""episode_evidence reuses a fault-free run's running sums across labels: same envelopes, same order."""

from __future__ import annotations

import numpy as np
import polars as pl

from reveal_lab.config import data_dir
from reveal_lab.evaluation import episode_evidence, span_envelope
from reveal_lab.evaluation._evidence import _envelope, _prefix_sums, _stamp
from reveal_lab.io import read_labels, read_meta


def test_envelope_from_prefix_sums_is_span_envelope():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 5))
    X[rng.random(X.shape) < 0.2] = np.nan
    X[:, 4] = np.nan  # a column with no sample
    sums = _prefix_sums(X)
    for length, step in ((1, 1), (7, 1), (7, 3), (40, 1), (41, 1), (0, 1)):
        want = span_envelope(X, length, step)
        got = _envelope(sums, length, step)
        for w, g in zip(want, got, strict=True):
            np.testing.assert_array_equal(w, g)  # NaN where NaN, every other value bit for bit


def test_evidence_rows_follow_the_labels_then_the_hosts():
    root = data_dir()
    ev = episode_evidence(root)
    labels = read_labels(root / "labels.csv").filter(pl.col("scope").fill_null("episode") == "episode")
    meta = read_meta(root / "meta_lab.csv")
    order = []
    for lab in labels.iter_rows(named=True):
        hosts = sorted(meta.filter(pl.col("run") == lab["run"])["host"].to_list())
        order += [(lab["run"], lab["host"], _stamp(lab["start"]), lab["fault_type"], h) for h in hosts]
    got = list(dict.fromkeys(ev.select("run", "host", "start", "fault_type", "evidence_host").iter_rows()))
    assert got == [o for o in order if o in set(got)]  # one block per label and host, in that order
    assert ev.filter(pl.col("rank").is_not_null())["rank"].min() == 1
