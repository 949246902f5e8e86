"""The detection policy: presets, resolution of "auto" for a run alone / one baseline run /
2+ baseline runs, validation that names the field, and detect_run reading it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from reveal_lab.config import get_preset
from reveal_lab.pipeline import (
    POLICIES,
    DetectionPolicy,
    Pruning,
    ResolvedPolicy,
    detect_run,
    get_policy,
    run_source,
)
from reveal_lab.synth import Anomaly, make_run

PAPER = get_preset("paper")
FAST = get_preset("paper", detect=get_preset("smoke").detect)
LAB = Path(__file__).resolve().parents[2] / "data" / "lab"


def test_default_resolves_a_run_alone():
    r = get_policy("default").resolve(baseline_runs=0, source="lab")
    assert (r.thresholds, r.fit_on, r.min_agreement, r.min_run) == ("robust", "run", 1, 8)
    assert (r.false_alarm_rate, r.z_clip, r.calibration) == (0.01, 10.0, None)
    assert (r.fold_cores, r.by_subsystem, r.skip_startup, r.prune) == (True, True, True, False)
    assert {"fold_cores", "by_subsystem", "prune"} <= set(r.reasons)
    assert (r.sentinel_rule, r.sentinel_samples, r.sentinel_min_run) == ("lone", None, 4)
    b = get_policy("default").resolve(baseline_runs=2, source="lab")
    assert (b.fold_cores, b.by_subsystem, b.z_clip, b.prune) == (False, False, 10.0, True)
    p = get_policy("paper").resolve(baseline_runs=0, source="lab")
    assert (p.fold_cores, p.by_subsystem, p.z_clip, p.prune) == (False, False, None, True)
    assert r.trim == "span"
    # every "auto" that was made concrete says why
    assert {"thresholds", "min_agreement", "min_run", "trim", "sentinel_rule"} <= set(r.reasons)


def test_default_resolves_one_baseline_run():
    r = get_policy("default").resolve(baseline_runs=1, source="public")
    assert (r.thresholds, r.fit_on, r.min_agreement, r.min_run) == ("baseline", "baseline", 1, 1)
    assert r.false_alarm_rate is None and "false_alarm_rate" in r.reasons
    assert (r.sentinel_rule, r.sentinel_samples, r.sentinel_min_run) == ("baseline", 5, None)
    assert r.z_clip is None
    assert r.trim == "none"  # a public-dataset run is scored whole


@pytest.mark.parametrize("n", [2, 5])
def test_default_resolves_two_or_more_baseline_runs(n):
    r = get_policy("default").resolve(baseline_runs=n, source="lab")
    assert (r.thresholds, r.fit_on, r.min_agreement, r.min_run) == ("calibrated", "baseline", 2, 1)
    assert (r.false_alarm_rate, r.calibration, r.z_clip) == (0.01, "trimmed", 10.0)
    assert (r.sentinel_rule, r.sentinel_samples) == ("baseline", 5)
    assert r.baseline_runs == n
    assert r.reasons["min_agreement"].startswith("auto: 2 with calibrated thresholds")


def test_paper_policy_is_the_papers_method():
    p = POLICIES["paper"]
    assert (p.thresholds, p.min_agreement, p.min_run, p.z_clip) == ("workload", 1, 1, None)
    assert (p.sentinel_samples, p.lone_sentinel, p.trim, p.prune) == (None, False, "none", True)
    assert (p.zscore, p.prune_method, p.quantile, p.skip_startup) == ("standard", "pairwise", 0.99, False)
    assert p.outlier_fence is False and POLICIES["default"].outlier_fence is True
    for n in (1, 3):  # per workload: fitted on the other fault-free runs, in-sample quantile thresholds
        r = p.resolve(baseline_runs=n, source="lab")
        assert (r.thresholds, r.fit_on, r.min_agreement, r.min_run) == ("baseline", "baseline", 1, 1)
        assert (r.sentinel_rule, r.z_clip, r.false_alarm_rate, r.outlier_fence) == (None, None, None, False)
        assert (r.trim, r.quantile, r.zscore) == ("none", 0.99, "standard")
        assert "thresholds" not in {d["field"] for d in r.departures}
    # a workload with no other fault-free run: fitted on the run itself, said as a departure
    alone = p.resolve(baseline_runs=0, source="lab")
    assert (alone.thresholds, alone.fit_on) == ("self", "run")
    (dep,) = [d for d in alone.departures if d["field"] == "thresholds"]
    assert dep["section"] == "§4.3" and "per workload" in dep["quote"] and dep["why"]
    # every departure cites the paper and says why
    assert all(d["quote"] and d["section"].startswith("§") and d["why"] for d in alone.departures)
    assert alone.to_dict()["departures"] == alone.departures
    assert POLICIES["default"] == DetectionPolicy()
    assert get_policy("default").resolve(baseline_runs=2).departures == []


def test_a_paper_policy_changed_by_the_caller_lists_the_change():
    r = get_policy("paper", min_agreement=2, zscore="robust").resolve(baseline_runs=2)
    changed = {d["field"]: d for d in r.departures}
    assert {"min_agreement", "zscore"} <= set(changed)
    assert changed["zscore"]["here"] == "zscore = 'robust'"
    untouched = get_policy("paper").resolve(baseline_runs=2).departures
    assert "min_agreement" not in {d["field"] for d in untouched}


def test_quantile_is_a_policy_field_that_reaches_the_detectors():
    with pytest.raises(ValueError, match="quantile"):
        get_policy("default", quantile=1.5)
    r = get_policy("paper", quantile=0.95).resolve(baseline_runs=0)
    assert r.quantile == 0.95
    # calibrated thresholds replace the fitted quantile: none in force, and why
    c = get_policy("default", quantile=0.95).resolve(baseline_runs=3)
    assert c.quantile is None and "quantile" in c.reasons


def test_explicit_values_are_kept_without_a_reason():
    r = get_policy("default", min_agreement=3, min_run=2, trim="none").resolve(baseline_runs=2, source="lab")
    assert (r.min_agreement, r.min_run, r.trim) == (3, 2, "none")
    assert not {"min_agreement", "min_run", "trim"} & set(r.reasons)


def test_min_run_auto_follows_the_windows():
    long = get_preset("paper", window=dataclasses.replace(PAPER.window, window_s=5.0))
    assert get_policy("default").resolve(baseline_runs=0, source="lab", preset=long).min_run == 12


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("thresholds", "sometimes"),
        ("calibration", "mean"),
        ("trim", True),
        ("false_alarm_rate", 1.5),
        ("false_alarm_rate", 0),
        ("min_agreement", 0),
        ("min_run", 2.5),
        ("sentinel_samples", True),
        ("z_clip", -1.0),
        ("prune", 3),
        ("lone_sentinel", "yes"),
        ("outlier_fence", None),
        ("outlier_fence", 1),
        ("force_baseline", None),
        ("name", ""),
    ],
)
def test_bad_values_are_refused_naming_the_field(field, value):
    with pytest.raises(ValueError, match=rf"DetectionPolicy\.{field} must be"):
        get_policy("default").with_(**{field: value})


def test_resolve_refuses_what_cannot_apply():
    with pytest.raises(ValueError, match="needs at least 2 baseline runs"):
        get_policy("default", thresholds="calibrated").resolve(baseline_runs=1, source="lab")
    with pytest.raises(ValueError, match="needs baseline runs"):
        get_policy("default", thresholds="baseline").resolve(baseline_runs=0, source="lab")
    with pytest.raises(ValueError, match=r"min_agreement must be in 1\.\.3, got 4"):
        get_policy("default", min_agreement=4).resolve(baseline_runs=0, source="lab")
    with pytest.raises(ValueError, match="source"):
        get_policy("default").resolve(baseline_runs=0, source="somewhere")
    with pytest.raises(ValueError, match="no field 'agreement'"):
        get_policy("default").with_(agreement=2)
    with pytest.raises(ValueError, match="unknown detection policy 'full'"):
        get_policy("full")


def test_policy_is_frozen_and_resolved_is_json():
    p = get_policy("default")
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.min_run = 3  # type: ignore[misc]
    d = p.resolve(baseline_runs=2, source="lab").to_dict()
    assert json.loads(json.dumps(d))["prune"] == "fit"
    assert set(d) == {f.name for f in dataclasses.fields(ResolvedPolicy)}


def _run(seed: int):
    an = [Anomaly("cpu", 40.0, 55.0, "level")]
    return make_run(90, n_channels=16, anomalies=an, seed=seed).run


def test_detect_run_with_a_policy_equals_the_same_fields_as_keywords():
    run = _run(3)
    paper = get_policy("paper", trim="none", prune=False)
    a = detect_run(run, preset=FAST, policy=paper)
    b = detect_run(
        run, preset=FAST, thresholds="self", min_agreement=1, min_run=1, trim=False, prune=False,
        zscore="standard", skip_startup=False, outlier_fence=False, sentinel_samples=None,
        lone_sentinel=False, z_clip=None,
    )
    assert a.anomalies().equals(b.anomalies())
    assert a.config["policy"]["name"] == "paper" and a.fit_mode == "self"
    assert a.config["sentinel_rule"] is None and a.config["min_run_windows"] == 1
    # the default decides otherwise on the same run: 8 windows in a row, robust thresholds
    c = detect_run(run, preset=FAST, policy=get_policy("default", trim="none", prune=False))
    assert (c.fit_mode, c.config["min_run_windows"], c.config["policy"]["min_run"]) == ("robust", 8, 8)
    assert c.config["policy"]["reasons"]["min_run"].startswith("auto")


def test_keywords_replace_fields_of_the_policy():
    run = _run(4)
    a = detect_run(run, preset=FAST, policy=get_policy("paper"), trim=False, prune=False, min_run=2)
    assert a.config["policy"]["name"] == "paper" and a.config["min_run_windows"] == 2
    assert a.config["trim"]["mode"] == "none" and not a.config["pruning"]["applied"]
    with pytest.raises(ValueError, match="no field 'min_runs'"):
        detect_run(run, preset=FAST, min_runs=2)


def test_run_source(tmp_path):
    run = _run(5)
    assert run_source(run) == "public"


def test_for_shares_and_agreeing_fill_only_an_auto_agreement():
    from reveal_lab.pipeline._policy import AGREEING_DETECTORS, ANY_DETECTOR

    auto = get_policy("default")
    assert auto.min_agreement is None
    assert auto.for_shares().min_agreement == ANY_DETECTOR == 1
    assert auto.agreeing().min_agreement == AGREEING_DETECTORS == 2
    fixed = get_policy("default", min_agreement=3)
    assert fixed.for_shares() is fixed and fixed.agreeing() is fixed
    # resolve's auto choice uses the same two numbers
    assert auto.resolve(baseline_runs=2).min_agreement == AGREEING_DETECTORS
    assert auto.resolve(baseline_runs=0).min_agreement == ANY_DETECTOR


def test_no_agreement_or_run_default_outside_the_policy_module():
    """Every default of ``min_agreement``/``min_run`` is the policy's: no function outside
    pipeline/_policy.py declares a number for them, and no call passes a literal one. The same
    for ``outlier_fence`` (True or False), except in the detectors themselves, whose
    scikit-learn parameter needs a default of its own."""
    import ast
    from pathlib import Path

    import reveal_lab

    root = Path(reveal_lab.__file__).parent

    def literal(name: str, node: ast.AST, estimator: bool) -> bool:
        if not isinstance(node, ast.Constant):
            return False
        if name in ("min_agreement", "min_run"):
            return isinstance(node.value, int) and not isinstance(node.value, bool)
        return name == "outlier_fence" and isinstance(node.value, bool) and not estimator

    found = []
    for path in root.rglob("*.py"):
        if path.name == "_policy.py" and path.parent.name == "pipeline":
            continue
        estimator = path.parent.name == "detectors"
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                a = node.args
                pos = a.posonlyargs + a.args
                pairs = list(zip(pos[len(pos) - len(a.defaults) :], a.defaults, strict=True))
                pairs += [(k, d) for k, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is not None]
                for arg, default in pairs:
                    if literal(arg.arg, default, estimator):
                        found.append(f"{path.relative_to(root)}:{node.lineno} {node.name}({arg.arg}=...)")
            if isinstance(node, ast.Call):
                for kw in node.keywords:
                    if kw.arg and literal(kw.arg, kw.value, estimator):
                        found.append(f"{path.relative_to(root)}:{node.lineno} call with {kw.arg}=...")
    assert found == []


@pytest.mark.skipif(not (LAB / "meta_lab.csv").is_file(), reason="data/lab not present")
def test_paper_policy_flags_the_top_share_of_a_lab_run():
    """A fault-free lab run (the first CNN inference run) scored with the paper policy, fitted
    on itself: each detector's threshold is the 0.99 quantile of its scores and flags exactly
    the windows above it, ``n - 1 - floor(0.99·(n - 1))`` of ``n`` (1 of 88: the top 1 %
    as numpy's linear quantile rounds it). With the outlier fence on, the Z-score threshold of
    this run is capped below that quantile and flags more.

    Broken variants caught: the fence on in the paper policy (the Z-score flags 4), a
    detector built without the policy's setting."""
    from reveal_lab.io import load_run

    meta = pl.read_csv(LAB / "meta_lab.csv", infer_schema_length=0).filter(
        (pl.col("fault") == "none") & (pl.col("model") == "CNN") & (pl.col("phase") == "infer")
    )
    run = load_run(LAB / meta["source_file"][0].removeprefix("./"))
    det = detect_run(run, preset=FAST, policy=get_policy("paper"))
    assert det.fit_mode == "self" and det.config["policy"]["outlier_fence"] is False
    w, (host,) = det.windows, det.thresholds
    n = w.height
    top = n - 1 - int(np.floor(0.99 * (n - 1)))
    for m in det.methods:
        scores = w[f"score_{m}"].to_numpy()
        assert det.thresholds[host][m] == pytest.approx(np.quantile(scores, 0.99), rel=1e-12), m
        assert int(w[f"label_{m}"].sum()) == int((scores > det.thresholds[host][m]).sum()) == top, m
    assert not any("outlier fence" in x for x in det.warnings)
    # the robust Z-score (median/MAD, constant features floored) of the workload span in a
    # complete-linkage space has a few extreme windows; the fence caps its threshold
    before = {"zscore": "robust", "trim": "span", "prune_method": "complete"}
    robust = detect_run(run, preset=FAST, policy=get_policy("paper", **before))
    fenced = detect_run(run, preset=FAST, policy=get_policy("paper", outlier_fence=True, **before))
    assert fenced.thresholds[host]["zscore"] < robust.thresholds[host]["zscore"]
    assert int(fenced.windows["label_zscore"].sum()) > top
    assert any("outlier fence" in x for x in fenced.warnings)


def test_method_md_lists_every_departure_the_paper_policy_can_give():
    """docs/METHOD.md's table of the paper setting's departures quotes the same sentences as
    the resolved policy (pipeline/_departures.py), and no longer calls two-detector agreement
    the paper's."""
    from reveal_lab.config import PROJECT_ROOT
    from reveal_lab.pipeline._departures import ALWAYS

    text = (PROJECT_ROOT / "docs" / "METHOD.md").read_text()
    alone = get_policy("paper").resolve(baseline_runs=0).departures
    given = get_policy("paper", prune=False).resolve(baseline_runs=2).departures
    other = Pruning([], {"method": "complete", "trim": True}, {})
    other_space = get_policy("paper", prune=other).resolve(baseline_runs=2).departures
    for d in [*ALWAYS, *alone, *given, *other_space]:
        assert f'{d["section"]} "{d["quote"]}"' in text.replace("\\|", "|"), d["field"]
    assert "(the paper's agreement)" not in text


@pytest.mark.parametrize(
    ("method", "trim", "fields"),
    [
        ("pairwise", "none", set()),
        ("pairwise", False, set()),
        ("complete", "none", {"prune_method"}),
        ("pairwise", True, {"prune_trim"}),
        ("complete", "span", {"prune_method", "prune_trim"}),
    ],
)
def test_a_given_space_cut_or_fitted_otherwise_is_a_departure(method, trim, fields):
    """The paper prunes every run's whole recording pairwise: a space given to the paper policy
    that was cut by another method, or fitted on a part of each run (notebook 02's trimmed
    span), is listed with the paper's sentence; the studies' own paper space is neither."""
    space = Pruning(["CPU:Busy%.-"], {"method": method, "trim": trim}, {})
    departures = get_policy("paper", prune=space).resolve(baseline_runs=2).departures
    assert {d["field"] for d in departures} & {"prune_method", "prune_trim"} == fields
    assert all(d["quote"] and d["section"].startswith("§") and d["why"] for d in departures)


@pytest.mark.skipif(not (LAB / "meta_lab.csv").is_file(), reason="data/lab not present")
def test_each_setting_gets_a_space_cut_and_fitted_as_it_scores(tmp_path):
    """scale.setting_spaces: the paper's space is cut pairwise on each run's whole recording
    (its own file), the default's is notebook 02's (complete linkage on each run's span); the
    two differ in what they were fitted on, and a second call reads the saved files."""
    from reveal_lab import scale, studies
    from reveal_lab.pipeline import load_pruning

    refs = scale.study_refs(str(LAB), max_runs=3)
    settings = studies.setting_policies(["paper", "default"])
    spaces = scale.setting_spaces(refs, tmp_path, True, settings, progress=False)
    assert spaces["paper"].params["method"] == "pairwise" and spaces["paper"].params["trim"] == "none"
    assert spaces["default"].params["method"] == "complete" and spaces["default"].params["trim"] == "auto"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pruning-pairwise-untrimmed.json", "pruning.json"]
    assert load_pruning(tmp_path / "pruning-pairwise-untrimmed.json").selected == spaces["paper"].selected
    assert scale.setting_spaces(refs, tmp_path, True, settings, progress=False)["paper"].selected == (
        spaces["paper"].selected
    )
    paper = get_policy("paper", prune=spaces["paper"]).resolve(baseline_runs=2).departures
    assert not {"prune_method", "prune_trim"} & {d["field"] for d in paper}
    # fitted without the runs' recorded correlations (Fig. 4's, not needed for a space): the
    # same space as the pruning study's whole pieces give
    runs = [scale.load_study_run(r) for r in refs]
    for name, (method, trim) in {"paper": ("pairwise", "none"), "default": ("complete", "auto")}.items():
        pieces = [studies.pruning_piece(r, trim) for r in runs]
        _, whole = studies.reduce_pruning(pieces, fit_method=method, trim=trim)
        assert whole.to_dict() == spaces[name].to_dict(), name
