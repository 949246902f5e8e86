"""The benchmarks' harness (``benchmarks/_harness.py``): the timer's statistics, the row and
its ratio, the result schema and what it refuses."""

from __future__ import annotations

import doctest
import json
import math
from pathlib import Path

import pytest

from reveal_lab.config import PROJECT_ROOT

BENCH = PROJECT_ROOT / "benchmarks"


@pytest.fixture
def h(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201 - the module
    monkeypatch.syspath_prepend(str(BENCH))
    import _harness

    return _harness


def test_the_docstring_examples_hold(h):
    assert doctest.testmod(h).failed == 0


def test_stats_are_the_median_min_max_and_sample_std_of_the_runs(h):
    s = h.stats([4.0, 1.0, 2.0, 3.0])
    assert (s["median"], s["min"], s["max"], s["n"]) == (2.5, 1.0, 4.0, 4)
    assert math.isclose(s["std"], math.sqrt(5 / 3))  # sample (n - 1) standard deviation
    assert s["runs"] == [4.0, 1.0, 2.0, 3.0]
    assert h.stats([7.0])["std"] == 0.0
    with pytest.raises(ValueError, match="no values"):
        h.stats([])


def test_time_repeats_calls_once_per_repeat_and_divides_by_per(h):
    calls = []
    wall, cpu, out = h.time_repeats(lambda: calls.append(1) or len(calls), 3, per=10)
    assert len(calls) == 3 and out == 3
    assert wall["n"] == cpu["n"] == 3 and len(wall["runs"]) == 3
    assert all(v >= 0 for v in wall["runs"] + cpu["runs"])
    assert wall["min"] <= wall["median"] <= wall["max"]
    with pytest.raises(ValueError, match="repeats"):
        h.time_repeats(lambda: None, 0)


def test_a_row_says_how_many_times_better_ours_is(h):
    slower = h.row("t", "s", h.side("ours", [2.0]), h.side("alt", [6.0]))
    assert slower["ratio"] == 3.0 and slower["higher_is_better"] is False
    faster = h.row("r", "runs/min", h.side("ours", 12.0), h.side("alt", 4.0), higher_is_better=True)
    assert faster["ratio"] == 3.0
    alone = h.row("a", "ms", h.side("ours", {"median": 5.0, "p95": 9.0}), peak_mb=12.5, note="n")
    assert alone["ratio"] is None and alone["alternative"] is None
    assert alone["ours"] == {"name": "ours", "median": 5.0, "p95": 9.0}
    assert (alone["peak_mb"], alone["note"]) == (12.5, "n")
    assert (
        set(slower)
        == set(alone)
        == {"case", "unit", "ours", "alternative", "ratio", "higher_is_better", "peak_mb", "note"}
    )


def test_a_session_writes_the_one_schema(h, tmp_path: Path):
    s = h.Session("demo", ["--quick"])
    rows = [h.row("c", "s", h.side("ours", [1.0, 2.0, 3.0]), h.side("alt", [4.0, 8.0]))]
    doc = s.write(tmp_path / "demo.json", rows, {"extra": float("inf"), "runs": [float("nan"), 1.0]})
    back = json.loads((tmp_path / "demo.json").read_text())
    assert list(back)[: len(h.TOP_KEYS)] == list(h.TOP_KEYS)
    assert back["schema"] == 2 and back["kind"] == "timing" and back["benchmark"] == "demo"
    assert back["command"] == "benchmarks/demo.py --quick"
    assert len(back["load_before"]) == len(back["load_after"]) == 3
    assert back["machine"]["cores"] >= 1 and "loadavg" not in back["machine"]
    assert back["date"].endswith("+00:00") and back["extra"] is None  # NaN/inf as null
    assert back["runs"] == [None, 1.0] and back["results"][0]["ratio"] == 3.0 and back["elapsed_s"] >= 0
    with pytest.raises(ValueError, match=r"schema's keys \['machine'\]"):
        s.result(rows, {"machine": "mine"})
    assert doc["results"][0]["ours"]["median"] == 2.0
    assert h.validate_timing(back)[0]["case"] == "c"
    # a row whose median is not a number is refused before anything is written
    with pytest.raises(ValueError, match=r"results\[0\]\.ours"):
        s.write(tmp_path / "bad.json", [h.row("c", "s", h.side("ours", float("nan")))])
    assert not (tmp_path / "bad.json").exists()


@pytest.mark.parametrize(
    ("doc", "says"),
    [
        ([], "top level is not an object"),
        ({"results": []}, "'schema': 2 and 'kind': 'timing'"),
        ({"schema": 2, "kind": "timing", "results": []}, "non-empty list"),
        (
            {"schema": 2, "kind": "timing", "results": [{"case": "c", "unit": "s", "ours": 1.0}]},
            r"results\[0\]\.ours is not",
        ),
        (
            {
                "schema": 2,
                "kind": "timing",
                "results": [
                    {"case": "c", "unit": "s", "ours": {"name": "o", "median": 1}, "higher_is_better": "no"}
                ],
            },
            r"results\[0\]\.higher_is_better",
        ),
        (
            {
                "schema": 2,
                "kind": "timing",
                "results": [
                    {
                        "case": "c",
                        "unit": "s",
                        "ours": {"name": "o", "median": 1},
                        "alternative": {"name": "a"},
                        "higher_is_better": False,
                    }
                ],
            },
            r"results\[0\]\.alternative is not",
        ),
    ],
)
def test_validate_names_what_is_wrong(h, doc, says):
    with pytest.raises(ValueError, match=says):
        h.validate_timing(doc)


def test_the_common_arguments(h):
    ap = h.parser("demo", "Demo benchmark.\n\nMore.", repeats=5, quick="tiny")
    a = ap.parse_args([])
    assert a.out == h.RESULTS / "demo.json" and a.repeats == 5 and a.quick is False
    assert ap.parse_args(["--quick", "--repeats", "2", "--out", "x.json"]).repeats == 2
    with pytest.raises(SystemExit):
        ap.parse_args(["--repeats", "0"])
    assert not hasattr(h.parser("plain", None).parse_args([]), "repeats")
