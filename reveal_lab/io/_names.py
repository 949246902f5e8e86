"""The file-name grammar of the public Reveal dataset:
``{prefix}_{MODEL}for{Task}_{dataset}_{YYYY-MM-DDTHH-MM-SS}_{host}.txt`` and what it says
about a run (model, task, dataset, host, start; phase and mode derived from the prefix)."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from reveal_lab.telemetry import RunMeta

__all__ = ["RunFileName", "parse_run_filename", "meta_from_name", "LLM_MODELS", "PREFIX_PHASE"]

_PLATFORM_RE = re.compile(r"(?i)(?:^|[^a-z])(gpu|cpu|lab)(?:[^a-z]|$)")
#: models the paper runs as LLM fine-tuning (``mode="llm"`` when no meta row says otherwise)
LLM_MODELS: frozenset[str] = frozenset({"DEEPSEEK", "LLAMA", "MISTRAL"})
#: ``prefix`` of the file name → phase, when no meta row says otherwise
PREFIX_PHASE: dict[str, str] = {
    "data": "fine-tuning",
    "train": "train",
    "infer": "infer",
    "inference": "infer",
    "test": "infer",
}

_NAME_RE = re.compile(
    r"^(?P<prefix>[A-Za-z][A-Za-z0-9]*)_(?P<model>[A-Za-z0-9.\-]+?)for(?P<task>[A-Z][A-Za-z0-9]*)_"
    r"(?P<dataset>.+?)_(?P<start>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2})_(?P<host>.+?)"
    r"(?P<suffix>\.[A-Za-z0-9]+)?$"
)


@dataclass(frozen=True, slots=True)
class RunFileName:
    """The parts of a run file name ``{prefix}_{MODEL}for{Task}_{dataset}_{start}_{host}.txt``."""

    prefix: str
    model: str
    task: str
    dataset: str
    start: dt.datetime
    host: str
    suffix: str = ""

    @property
    def run_id(self) -> str:
        when = f"{self.start:%Y-%m-%dT%H-%M-%S}"
        return f"{self.prefix}_{self.model}for{self.task}_{self.dataset}_{when}_{self.host}"

    @property
    def workload(self) -> str:
        return f"{self.model}__{self.task}__{self.dataset}"

    def format(self) -> str:
        return self.run_id + self.suffix


def parse_run_filename(name: str) -> RunFileName | None:
    """Parse a run file name (a path is fine: only its last part counts).

    The dataset part may contain ``_`` and the host ``-``: the timestamp anchors both.
    Returns ``None`` when the name does not follow the grammar (never raises).

    Examples
    --------
    >>> r = parse_run_filename("train_separated/infer_ViTB16forImageSemanticSegmentation_scene_parse_150_"
    ...                        "2025-05-13T08-15-30_htc-g004.txt")
    >>> r.prefix, r.model, r.task, r.dataset, r.host, r.start.isoformat()
    ('infer', 'ViTB16', 'ImageSemanticSegmentation', 'scene_parse_150', 'htc-g004', '2025-05-13T08:15:30')
    >>> r.format()
    'infer_ViTB16forImageSemanticSegmentation_scene_parse_150_2025-05-13T08-15-30_htc-g004.txt'
    >>> parse_run_filename("notes.txt") is None
    True
    """
    base = PurePosixPath(str(name).replace("\\", "/")).name
    m = _NAME_RE.match(base)
    if m is None:
        return None
    try:
        start = dt.datetime.strptime(m.group("start"), "%Y-%m-%dT%H-%M-%S")
    except ValueError:
        return None
    return RunFileName(
        m.group("prefix"),
        m.group("model"),
        m.group("task"),
        m.group("dataset"),
        start,
        m.group("host"),
        m.group("suffix") or "",
    )


def _derive_phase(prefix: str | None, split: str | None) -> str | None:
    if prefix and prefix.lower() in PREFIX_PHASE:
        return PREFIX_PHASE[prefix.lower()]
    return split


def _derive_mode(prefix: str | None, model: str | None) -> str | None:
    if model is None:
        return None
    return "llm" if (prefix == "data" or model.upper() in LLM_MODELS) else "nonllm"


def meta_from_name(name: str, platform: str | None = None) -> RunMeta:
    """:class:`RunMeta` from a run's file name alone (phase and mode derived from the prefix).

    >>> m = meta_from_name("data_LLAMAforTextClassification_imdb_2025-05-02T09-10-11_htc-g004.txt")
    >>> m.phase, m.mode, m.workload, m.hosts
    ('fine-tuning', 'llm', 'LLAMA__TextClassification__imdb', ('htc-g004',))
    """
    text = str(name)
    if "::" in text:  # an archive member: zips made on Windows separate folders with '\\'
        base = PurePosixPath(text.split("::")[-1].replace("\\", "/")).name
    else:  # a local path: on POSIX a backslash is part of the file name
        base = PurePosixPath(text).name
    r = parse_run_filename(base) if "\\" not in base else None
    stem = base.rsplit(".", 1)[0] if "." in base else base
    if r is None:
        return RunMeta(run_id=stem, platform=platform, source_path=str(name))
    return RunMeta(
        run_id=r.run_id,
        hosts=(r.host,),
        workload=r.workload,
        model=r.model,
        task=r.task,
        dataset=r.dataset,
        phase=_derive_phase(r.prefix, None),
        mode=_derive_mode(r.prefix, r.model),
        platform=platform,
        source_path=str(name),
        start_time=r.start.isoformat(),
        extra={"prefix": r.prefix},
    )


def _platform_of(name: str) -> str | None:
    m = _PLATFORM_RE.search(name)
    return m.group(1).lower() if m else None
