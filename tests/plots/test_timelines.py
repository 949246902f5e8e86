"""Fig. 2's flag timelines and the report's score timelines: what is drawn equals the
windows' flags, scores and thresholds computed here, and episodes are shaded where labelled."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
import pytest

from reveal_lab import plots

T0 = dt.datetime(2026, 1, 1, 12)


def _frame() -> pl.DataFrame:
    rows = []
    for run, host in [("r1", "labA"), ("r1", "labB"), ("r2", "labA")]:
        shift = 0 if host == "labA" else 5
        for k in range(60):
            rows.append(
                {
                    "run": run,
                    "host": host,
                    "start": T0 + dt.timedelta(seconds=k),
                    "end": T0 + dt.timedelta(seconds=k + 3),
                    "score_zscore": float((k * 7) % 11),
                    "flag_zscore": 20 + shift <= k <= 25 + shift,
                    "flag_iforest": k in (3, 40 + shift),
                }
            )
    return pl.DataFrame(rows)


EPISODES = pl.DataFrame(
    {"run": ["r1"], "host": ["labB"], "start": [T0 + dt.timedelta(seconds=18)], "end": [T0 + dt.timedelta(seconds=30)]}
)


def _xspan(patch) -> tuple[float, float]:
    """x extent of an axvspan in data units (a Rectangle or, in newer matplotlib, a Polygon)."""
    if hasattr(patch, "get_width"):
        return float(patch.get_x()), float(patch.get_x() + patch.get_width())
    xy = np.asarray(patch.get_xy())
    return float(xy[:, 0].min()), float(xy[:, 0].max())


def _bars(ax, gid):
    (coll,) = [c for c in ax.collections if c.get_gid() == gid]
    return sorted((float(p.vertices[:, 0].min()), float(p.vertices[:, 0].max())) for p in coll.get_paths())


def test_flag_timelines_draw_the_flagged_windows():
    """Broken variants: every window drawn (flags ignored), panels out of order, episodes unshaded."""
    f = _frame()
    fig = plots.plot_flag_timelines(f, EPISODES)
    axes = fig.axes
    assert len(axes) == 3
    # the run with a labelled episode comes first
    assert axes[0].get_title(loc="left") == "r1 · labB"
    for ax in axes:
        run, host = ax.get_title(loc="left").split(" · ")
        part = f.filter((pl.col("run") == run) & (pl.col("host") == host))
        for m in ("zscore", "iforest"):
            sel = part.filter(pl.col(f"flag_{m}"))
            want = sorted(
                ((s - T0).total_seconds(), (e - T0).total_seconds()) for s, e in sel.select("start", "end").rows()
            )
            got = _bars(ax, f"flags:{m}")
            assert np.allclose(np.array(got).reshape(-1, 2), np.array(want).reshape(-1, 2)) and len(got) == len(want)
        assert [t.get_text() for t in ax.get_yticklabels()] == ["zscore", "iforest"]
    spans = [p for p in axes[0].patches if p.get_label() == "labelled fault episode" or p.get_alpha() == 0.3]
    assert len(spans) == 1
    assert _xspan(spans[0]) == pytest.approx((18.0, 30.0))
    assert not [p for p in axes[1].patches if p.get_alpha() == 0.3]  # no episode on r1 · labA


def test_score_timeline_draws_scores_threshold_and_flags():
    """Broken variants: threshold missing or wrong, flagged dots on unflagged windows."""
    w = _frame().filter((pl.col("run") == "r1") & (pl.col("host") == "labA"))
    w = w.rename({"flag_zscore": "label_zscore"}).select("start", "end", "score_zscore", "label_zscore")
    fig = plots.plot_score_timeline(w, {"zscore": 7.5}, EPISODES.select("start", "end"))
    ax = fig.axes[0]
    lines = {ln.get_gid(): ln for ln in ax.get_lines()}
    mid = np.arange(60) + 1.5
    assert lines["score:zscore"].get_xdata() == pytest.approx(mid)
    assert lines["score:zscore"].get_ydata() == pytest.approx(w["score_zscore"].to_numpy())
    assert lines["threshold:zscore"].get_ydata()[0] == pytest.approx(7.5)
    flagged = w["label_zscore"].to_numpy()
    assert lines["flagged:zscore"].get_xdata() == pytest.approx(mid[flagged])


def test_evidence_traces_shade_the_windows_of_each_metric():
    t = [T0 + dt.timedelta(seconds=0.1 * i) for i in range(300)]
    traces = pl.DataFrame({"timestamp": t, "a": np.sin(np.arange(300) / 9.0), "b": np.arange(300.0)})
    wins = pl.DataFrame(
        {"metric": ["a", "a", "b"], "start": [t[10], t[200], t[50]], "end": [t[40], t[230], t[80]]}
    )
    fig = plots.plot_evidence_traces(traces, wins)
    a, b = fig.axes
    assert a.get_lines()[0].get_ydata() == pytest.approx(traces["a"].to_numpy())
    assert len(a.patches) == 2 and len(b.patches) == 1
    assert _xspan(b.patches[0]) == pytest.approx((5.0, 8.0))
