"""The claims' model: what a reading of ours is, what a claim's reader sees, a claim of the
paper, and the rule that gives a status (:func:`claim_status`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import polars as pl

__all__ = [
    "APPROX",
    "CLAIM_COLUMNS",
    "CLAIM_KINDS",
    "CLAIM_STATUSES",
    "RULES",
    "RUN_TABLES",
    "SECTION_ORDER",
    "SETTING_COLUMNS",
    "Claim",
    "ClaimContext",
    "Reading",
    "acceptance",
    "claim_status",
]

#: the settings' columns: (setting, ours column, status column)
SETTING_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("paper", "ours_paper_method", "status_paper_method"),
    ("default", "ours_default", "status_default"),
)
#: the columns of ``paper_vs_reproduced.csv``, in order
CLAIM_COLUMNS: tuple[str, ...] = (
    "claim_id",
    "section",
    "kind",
    "quote",
    "paper_value",
    "unit",
    "rule",
    "tolerance",
    *(c for _, ours, status in SETTING_COLUMNS for c in (ours, status)),
    "public_dataset",
    "status_public_dataset",
    "data",
    "machine",
    "note",
)
CLAIM_STATUSES: tuple[str, ...] = ("reproduced", "differs", "cannot be checked here")
REPRODUCED, DIFFERS, CANNOT = CLAIM_STATUSES
CLAIM_KINDS: tuple[str, ...] = ("finding", "setting")
RULES = ("close", "range", "at_least", "at_most", "above", "below", "factor", "qualitative")
#: tables whose rows are runs: a claim about the whole dataset reads every platform's rows
RUN_TABLES: tuple[str, ...] = ("dataset_runs",)
#: the platform a claim about the whole dataset reads in a study's per-platform tables: the
#: paper's HPC (GPU) cluster first, then its local (CPU) cluster
SECTION_ORDER: tuple[str, ...] = ("gpu", "cpu")
#: the relative tolerance this catalogue gives the paper's "approximately", "~", "roughly", and
#: a number the paper gives to two significant digits without an interval (Table 2's cells)
APPROX = 0.10


@dataclass(frozen=True)
class Reading:
    """Our value for a claim (``value``; ``holds`` for a qualitative one), and what it was
    computed on when not the studies' dataset (``machine``, ``data``). No value: ``note``
    says why. A repeated measurement gives its interval (``lo``, ``hi``): the status then
    holds for the whole interval or is not decided (:func:`claim_status`)."""

    value: float | None
    note: str = ""
    holds: bool | None = None
    machine: str | None = None
    data: str | None = None
    lo: float | None = None
    hi: float | None = None


@dataclass(frozen=True)
class ClaimContext:
    """What a claim's reader sees: the output folder, the dataset folder, the setting, and the
    platform the paper's number is about (``None``: its whole dataset)."""

    out: Path
    data: str = ""
    policy: str = "default"
    platform: str | None = None

    def table(self, name: str, *, every_setting: bool = False) -> pl.DataFrame | None:
        """``out/tables/<name>.csv`` (``None`` when not written); a table with a
        ``policy`` column gives this setting's rows only (``every_setting``: all of them,
        for a value that does not depend on detection); a table of several platforms
        (a study written in platform sections) gives one platform's rows
        (:meth:`section`), except that a table of runs (:data:`RUN_TABLES`) is whole for
        a claim about the whole dataset."""
        p = self.out / "tables" / f"{name}.csv"
        if not p.exists():
            return None
        df = pl.read_csv(p, infer_schema_length=10_000)
        if "policy" in df.columns and not every_setting:
            df = df.filter(pl.col("policy") == self.policy)
        if "platform" in df.columns and not (self.platform is None and name in RUN_TABLES):
            section = self.section(df["platform"].drop_nulls().cast(pl.String).to_list())
            if section is not None:
                df = df.filter(pl.col("platform") == section)
        return df

    def section(self, platforms: Sequence[str]) -> str | None:
        """Of an output's several platforms, the one this claim reads: its own platform
        where the output has it, else the first of :data:`SECTION_ORDER` (the paper's HPC
        cluster first); ``None`` when there is one platform (nothing to choose). The choice
        is kept in :attr:`sections_read`.

        >>> ClaimContext(Path("."), platform="cpu").section(["gpu", "cpu"])
        'cpu'
        >>> ClaimContext(Path(".")).section(["cpu", "gpu"]), ClaimContext(Path(".")).section(["lab"])
        ('gpu', None)
        """
        have = sorted(set(platforms), key=lambda p: (SECTION_ORDER.index(p) if p in SECTION_ORDER else 99, p))
        if len(have) < 2:
            return None
        out = self.platform if self.platform in have else have[0]
        self.sections_read.add(out)
        return out

    @cached_property
    def sections_read(self) -> set[str]:
        """The platforms whose rows this claim read in outputs of several platforms."""
        return set()

    @property
    def root(self) -> Path | None:
        return None if self.data in ("", "synth") else Path(self.data)

    @cached_property
    def faults(self) -> set[str] | None:
        """The injected faults recorded for DATA's runs (``meta_lab.csv``), ``None`` when
        DATA records none."""
        root = self.root
        meta = root / "meta_lab.csv" if root else None
        if meta is None or not meta.exists():
            return None
        df = pl.read_csv(meta, infer_schema_length=10_000, columns=None)
        if "fault" not in df.columns:
            return None
        out = set()
        for v in df["fault"].drop_nulls().to_list():
            out |= {part.split("@", 1)[0] for part in str(v).split("+")}
        return out - {"", "none"}

    @cached_property
    def platforms(self) -> set[str]:
        df = self.table("dataset_runs")
        if df is None or "platform" not in df.columns:
            return set()
        return {str(p) for p in df["platform"].drop_nulls().to_list()}

    @property
    def is_recording(self) -> bool:
        """DATA was recorded by reveal-lab's lab recorder (``recording.json``) or made up
        (``synth``): not the paper's dataset."""
        return self.data == "synth" or bool(self.root and (self.root / "recording.json").exists())


@dataclass(frozen=True)
class Claim:
    """One statement of the paper and how to read ours."""

    claim_id: str
    section: str
    quote: str
    paper: float | tuple[float, float] | None
    unit: str
    rule: str
    tol: float
    read: Callable[[ClaimContext], Reading]
    note: str = ""
    kind: str = "finding"
    detection: bool = False
    #: how the paper's value is shown when the paper gives no number (qualitative)
    paper_words: str = ""
    #: the platform the paper's number is about (``gpu``: its HPC cluster; ``cpu``: its local
    #: cluster); ``None``: its whole dataset
    platform: str | None = None
    #: why ``tol`` is what it is, where it is neither 0 nor :data:`APPROX` of the paper's value
    tol_why: str = ""
    #: the settings this claim's tables were computed in (``None``: every one of
    #: :data:`SETTING_COLUMNS` for a detection claim); another setting's column says so
    only: str | None = None

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise ValueError(f"claim {self.claim_id}: rule {self.rule!r} not one of {RULES}")
        if self.kind not in CLAIM_KINDS:
            raise ValueError(f"claim {self.claim_id}: kind {self.kind!r} not one of {CLAIM_KINDS}")
        if self.rule == "range" and not (isinstance(self.paper, tuple) and len(self.paper) == 2):
            raise ValueError(f"claim {self.claim_id}: rule 'range' needs paper=(lo, hi)")
        if (self.rule == "qualitative") != (self.paper is None):
            raise ValueError(f"claim {self.claim_id}: a qualitative claim has no paper value, every other "
                             f"has one")
        if self.tol and not self.tol_why and not _is_approx(self.paper, self.tol):
            raise ValueError(
                f"claim {self.claim_id}: tolerance {self.tol:g} is neither APPROX of the paper's "
                f"value nor justified (tol_why)"
            )

    @property
    def tolerance_text(self) -> str:
        """The tolerance in words, with why (the ``tolerance`` column)."""
        if self.rule == "qualitative":
            return "the reader's test (note)"
        if self.rule == "factor":
            return f"within a factor {self.tol:g}" + (f": {self.tol_why}" if self.tol_why else "")
        if not self.tol:
            return (
                "none (the paper's bound)"
                if self.rule in ("above", "below", "at_least", "at_most")
                else "none"
            )
        if _is_approx(self.paper, self.tol):
            return f"±{APPROX:.0%} of the paper's value ('approximately', or two digits without an interval)"
        return f"±{self.tol:g} {self.unit}: {self.tol_why}".replace("  ", " ")

    @property
    def paper_text(self) -> str:
        p = self.paper
        if p is None:
            return self.paper_words or "no number (qualitative)"
        if isinstance(p, tuple):
            return f"{p[0]:g}–{p[1]:g}"
        prefix = {"at_most": "≤ ", "at_least": "≥ ", "above": "> ", "below": "< "}.get(self.rule, "")
        return f"{prefix}{p:g}"


def _is_approx(paper: float | tuple[float, float] | None, tol: float) -> bool:
    """``tol`` is :data:`APPROX` of the paper's value (of its range's larger end)."""
    if paper is None:
        return False
    ref = max(abs(p) for p in paper) if isinstance(paper, tuple) else abs(paper)
    return math.isclose(tol, APPROX * ref, rel_tol=1e-9)


def acceptance(rule: str, paper: float | tuple[float, float], tol: float) -> tuple[float, float, bool]:
    """The values of ours a rule accepts: ``(lo, hi, open)``, ``open`` when the ends
    themselves are excluded (``above``, ``below``, and ``factor``'s 0).

    >>> acceptance("close", 0.5, 0.05), acceptance("above", 700.0, 0.0)
    ((0.45, 0.55, False), (700.0, inf, True))
    >>> acceptance("factor", 2.0, 2.0)
    (1.0, 4.0, False)
    """
    if rule == "range":
        lo, hi = paper  # type: ignore[misc]
        return lo - tol, hi + tol, False
    p = float(paper)  # type: ignore[arg-type]
    if rule == "factor":
        return p / tol, p * tol, False
    return {
        "close": (p - tol, p + tol, False),
        "at_least": (p - tol, math.inf, False),
        "at_most": (-math.inf, p + tol, False),
        "above": (p, math.inf, True),
        "below": (-math.inf, p, True),
    }[rule]


def claim_status(
    rule: str,
    paper: float | tuple[float, float] | None,
    ours: float | None,
    tol: float,
    holds: bool | None = None,
    lo: float | None = None,
    hi: float | None = None,
) -> str:
    """The status of one claim under its rule. With an interval of ours (``lo``, ``hi``:
    a repeated measurement) the rule must hold over the whole interval to reproduce, and
    fail over the whole interval to differ; an interval across the rule's bound is not
    decided (cannot be checked here, with these repeats).

    >>> claim_status("close", 0.92, 0.85, 0.1), claim_status("close", 0.92, 0.7, 0.1)
    ('reproduced', 'differs')
    >>> claim_status("range", (1.2, 1.4), 0.5, 0.1), claim_status("at_most", 2.0, 0.5, 0.0)
    ('differs', 'reproduced')
    >>> claim_status("factor", 1.46, 0.5, 2.0), claim_status("close", 0.5, None, 0.1)
    ('differs', 'cannot be checked here')
    >>> claim_status("qualitative", None, 3.0, 0.0, holds=True), claim_status("above", 700, 700, 0)
    ('reproduced', 'differs')
    >>> ends = ((0.9, 1.1), (1.4, 1.6), (1.6, 1.7))
    >>> [claim_status("below", 1.5, (a + b) / 2, 0.0, lo=a, hi=b) for a, b in ends]
    ['reproduced', 'cannot be checked here', 'differs']
    """
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; expected one of {RULES}")
    if rule == "qualitative":
        return CANNOT if holds is None else REPRODUCED if holds else DIFFERS
    if ours is None or math.isnan(ours) or paper is None:
        return CANNOT
    a = ours if lo is None or math.isnan(lo) else min(lo, ours)
    b = ours if hi is None or math.isnan(hi) else max(hi, ours)
    if rule == "factor" and (float(paper) <= 0 or a <= 0):  # type: ignore[arg-type]
        return DIFFERS if b <= 0 else CANNOT
    A, B, open_ = acceptance(rule, paper, tol)  # noqa: N806

    def inside(v: float) -> bool:
        return A < v < B if open_ else A <= v <= B

    if inside(a) and inside(b):
        return REPRODUCED
    if b < A or a > B or (open_ and (b <= A or a >= B)):
        return DIFFERS
    return CANNOT
