"""The outcome of :func:`~reveal_lab.pipeline.detect_run` for one run: its windows, evidence,
thresholds and summary (:class:`Detection`), and the columns of ``anomalies.csv``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from reveal_lab.telemetry import SUBSYSTEMS

__all__ = ["ANOMALIES_COLUMNS", "Detection"]

#: the columns of ``anomalies.csv``, in order
ANOMALIES_COLUMNS: tuple[str, ...] = (
    "window_id",
    "start",
    "end",
    "host",
    "methods",
    "agreement",
    "subsystem",
    "metric",
    "feature",
    "score",
    "claim",
)


@dataclass
class Detection:
    """The outcome of :func:`detect_run` for one run.

    Attributes
    ----------
    windows : one row per scored window and host: ``window_id, start, end, host,
        n_samples``, ``score_<detector>``, ``label_<detector>``, ``agreement``,
        ``raw_agreement`` (before the ``min_run`` rule), ``combined``, the sentinel rule's
        ``sentinel_samples``, ``sentinel``,
        ``sentinel_metric``, ``sentinel_subsystem`` (:func:`sentinel_windows`; with baseline
        runs), ``anomalous`` (the decision: ``agreement >= min_agreement`` or ``sentinel``),
        and for anomalous windows their (joint) ``subsystems``, ``top_subsystem`` and
        ``share_<subsystem>`` (a window flagged by the sentinel rule alone: its counter's
        subsystem, share 1).
    evidence : one row per anomalous window × metric–feature pair (the columns of
        ``anomalies.csv`` first, see :data:`ANOMALIES_COLUMNS`).
    thresholds : per host, per detector.
    summary : counts and shares (see :meth:`make_summary`).
    """

    run_id: str
    meta: dict[str, Any]
    windows: pl.DataFrame
    evidence: pl.DataFrame
    methods: list[str]
    thresholds: dict[str, dict[str, float]]
    fit_mode: str
    min_agreement: int
    config: dict[str, Any]
    excluded: pl.DataFrame
    warnings: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    #: cross-host deviation for runs with 3+ hosts (:func:`reveal_lab.crosshost.deviation`;
    #: :func:`reveal_lab.crosshost.baseline_deviation` when 2+ baseline runs have the same hosts)
    crosshost: pl.DataFrame | None = None
    #: with baseline runs: the counters 0 in every baseline sample that move here
    #: (:func:`reveal_lab.pipeline.sentinel_counters`)
    sentinels: pl.DataFrame | None = None
    #: the anomalous episodes: a host's anomalous windows less than 10 s apart merged
    #: (:func:`reveal_lab.pipeline.episodes_of`)
    episodes: pl.DataFrame | None = None

    @property
    def scores(self) -> dict[str, np.ndarray]:
        return {m: self.windows[f"score_{m}"].to_numpy() for m in self.methods}

    @property
    def labels(self) -> dict[str, np.ndarray]:
        return {m: self.windows[f"label_{m}"].to_numpy() for m in self.methods}

    @property
    def agreement(self) -> np.ndarray:
        return self.windows["agreement"].to_numpy()

    @property
    def combined(self) -> np.ndarray:
        return self.windows["combined"].to_numpy()

    @property
    def decision(self) -> pl.Expr:
        """The run's decision on a window of :attr:`windows`: its ``anomalous`` column
        (agreement reaches ``min_agreement``, or the sentinel rule fires)."""
        if "anomalous" in self.windows.columns:
            return pl.col("anomalous").fill_null(False)
        return pl.col("agreement") >= self.min_agreement

    @property
    def anomalous(self) -> pl.DataFrame:
        """The windows the run's decision flags (:attr:`decision`)."""
        return self.windows.filter(self.decision)

    def anomalies(self) -> pl.DataFrame:
        """The evidence with exactly the columns of ``anomalies.csv``."""
        return self.evidence.select(ANOMALIES_COLUMNS)

    def make_summary(self) -> dict[str, Any]:
        w = self.windows
        anom = self.anomalous
        hosts = w["host"].unique(maintain_order=True).to_list()

        def block(ws: pl.DataFrame, an: pl.DataFrame) -> dict[str, Any]:
            k = ws.height
            per_det = {
                m: {
                    "flagged": int(ws[f"label_{m}"].sum()),
                    "share": float(ws[f"label_{m}"].sum() / k) if k else 0.0,
                }
                for m in self.methods
            }
            agree = {str(a): int((ws["agreement"] == a).sum()) for a in range(len(self.methods) + 1)}
            subs = {}
            for s in SUBSYSTEMS:
                hit = (
                    int(an.filter(pl.col("subsystems").str.split("+").list.contains(s)).height)
                    if an.height
                    else 0
                )
                top = int((an["top_subsystem"] == s).sum()) if an.height else 0
                if hit or top:
                    subs[s] = {"windows": hit, "share": hit / k if k else 0.0, "top": top}
            return {
                "windows": k,
                "anomalous": an.height,
                "anomalous_share": an.height / k if k else 0.0,
                "per_detector": per_det,
                "agreement": agree,
                "per_subsystem": subs,
            }

        out = {
            "run_id": self.run_id,
            "fit_mode": self.fit_mode,
            "min_agreement": self.min_agreement,
            "methods": self.methods,
            "hosts": hosts,
            "config": self.config,
            "meta": {k: v for k, v in self.meta.items() if k != "extra"},
            "thresholds": self.thresholds,
            **block(w, anom),
            "episodes": self.episodes.height if self.episodes is not None else None,
            "per_host": {
                h: block(w.filter(pl.col("host") == h), anom.filter(pl.col("host") == h)) for h in hosts
            }
            if len(hosts) > 1
            else {},
            "evidence_rows": self.evidence.height,
            "crosshost_persistent": (
                int(self.crosshost["persistent"].sum()) if self.crosshost is not None else None
            ),
            "excluded_metrics": self.excluded.height,
            "sentinel_counters": None if self.sentinels is None else self.sentinels.height,
            "sentinel_windows": int(w["sentinel"].sum()) if "sentinel" in w.columns else 0,
            # windows that had the detectors' agreement before the min_run rule dropped it
            "short_runs_dropped": (
                int(((w["raw_agreement"] >= self.min_agreement) & ~w["anomalous"]).sum())
                if "raw_agreement" in w.columns
                else 0
            ),
            "warnings": list(self.warnings),
            "timings_s": self.timings,
        }
        out["no_anomaly"] = anom.height == 0
        return out
