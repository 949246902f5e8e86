"""One screen of ``--help``: a command's rarely used flags under an "advanced" group, with
short help texts; the long explanations live in ``docs/METHOD.md``."""

from __future__ import annotations

import argparse
import functools
from collections.abc import Mapping

__all__ = ["group_advanced", "DETECT_HELP", "DETECT_ADVANCED", "DETECT_METAVARS", "HELP_POSITION"]

#: the column where flags' help starts (argparse's default is 24)
HELP_POSITION = 30

#: one-line help of ``detect``'s flags (the long form is docs/METHOD.md's "detect's flags in detail")
DETECT_HELP: dict[str, str] = {
    "--baseline": "fault-free runs to fit the detectors on (default: each run itself)",
    "--out": "report folder (default ./reveal-report)",
    "--window": "window length (default 3s)",
    "--stride": "window stride (default 1s)",
    "--cross-host": "also compare the RUNs' hosts with each other",
    "--policy": "default or paper: the policy the advanced flags adjust",
    "--force": "accept a --baseline that shares few metrics or never moves",
    "--interval": "nominal sampling interval (default 100ms)",
    "--preset": "window and detector settings: paper, smoke (default paper)",
    "--select": "score only the metric keys listed in FILE (one per line)",
    "--prune": "pruned space on a run alone too / every metric (default: with baselines)",
    "--no-fold-cores": "alone: per-core channels as they are (default: folded)",
    "--no-by-family": "alone: the Z-score over every feature (default: by family)",
    "--keep-startup": "score the collector's own start-up too",
    "--job-pace": "the job's step times (CSV t,step_s): each episode's slowdown",
    "--pruning": "reuse a saved pruning.json as the metric space",
    "--trim": "auto (default), span, active, none: the part of a recording scored",
    "--thresholds": "auto (default), calibrated, baseline, robust, self, workload (paper)",
    "--prune-method": "how a space is cut: complete (default), connected, pairwise (paper)",
    "--quantile": "fit-score quantile a threshold is (0.99: top 1 %)",
    "--zscore": "robust (default: median, MAD) or standard (mean, SD: the paper's)",
    "--calibration": "trimmed (default), pooled, median: how calibrated thresholds pool",
    "--z-clip": "cap on a feature's |z| (10; calibrated, alone)",
    "--outlier-fence": "cap quantile thresholds at median + 100 MADs (on; paper: off)",
    "--sentinel-samples": "sentinel rule's samples (5; none: off)",
    "--min-run": "windows in a row for a flag (8 alone, else 1)",
    "--min-agreement": "detectors that must agree (2 if calibrated, else 1)",
    "--false-alarm-rate": "share of fault-free windows flagged (default 0.01)",
    "--view": "how a collector folder is read: dataset (default) or raw",
}

#: shorter placeholders for flags whose choices the help text lists
DETECT_METAVARS: dict[str, str] = {"--thresholds": "MODE", "--calibration": "RULE", "--trim": "RULE",
                                   "--view": "VIEW", "--policy": "NAME", "--prune-method": "HOW",
                                   "--zscore": "HOW"}

#: ``detect``'s flags shown under "advanced"
DETECT_ADVANCED: tuple[str, ...] = (
    "--force", "--interval", "--preset", "--select", "--no-prune", "--prune", "--pruning", "--trim",
    "--no-fold-cores", "--no-by-family", "--keep-startup", "--prune-method", "--quantile", "--zscore",
    "--thresholds", "--calibration", "--z-clip", "--outlier-fence", "--sentinel-samples", "--min-run",
    "--min-agreement", "--false-alarm-rate", "--view",
)


def group_advanced(
    parser: argparse.ArgumentParser,
    advanced: tuple[str, ...],
    short_help: Mapping[str, str],
    *,
    metavars: Mapping[str, str] | None = None,
    usage: str | None = None,
    doc: str = "docs/METHOD.md",
) -> argparse._ArgumentGroup:
    """Move the flags named in ``advanced`` (those ``parser`` has) into an "advanced" group
    and give every flag named in ``short_help`` that one-line help and in ``metavars`` that
    placeholder (its default and choices stay as declared); ``usage`` replaces the usage
    line that lists every flag. argparse has no public way to move a declared flag into a group, so
    the flags' actions move between the groups' lists; the parser parses exactly as before.

    >>> p = argparse.ArgumentParser(prog="x")
    >>> _ = p.add_argument("--often", help="a long explanation")
    >>> _ = p.add_argument("--rarely", type=int, default=3)
    >>> g = group_advanced(p, ("--rarely", "--absent"), {"--often": "short", "--rarely": "seldom"})
    >>> [a.dest for a in g._group_actions], p.parse_args(["--rarely", "5"]).rarely
    (['rarely'], 5)
    >>> "seldom" in p.format_help() and "short" in p.format_help() and "long" not in p.format_help()
    True
    """
    group = parser.add_argument_group("advanced", f"rarely needed; {doc} explains each")
    parser.formatter_class = functools.partial(argparse.HelpFormatter, max_help_position=HELP_POSITION)
    if usage:
        parser.usage = usage
    by_flag = {flag: a for a in parser._actions for flag in a.option_strings}
    for flag, text in short_help.items():
        if flag in by_flag:
            by_flag[flag].help = text.replace("%", "%%")
    for flag, name in (metavars or {}).items():
        if flag in by_flag:
            by_flag[flag].metavar = name
    for flag in advanced:
        action = by_flag.get(flag)
        if action is None or action in group._group_actions:
            continue
        for g in parser._action_groups:
            if action in g._group_actions:
                g._group_actions.remove(action)
        group._group_actions.append(action)
    return group
