"""What the public Reveal dataset's documented format says about a claim
(``../shared/reveal-dataset-format.md``: its files, columns and metadata as public material
that inspected it describes them), for the ``public_dataset`` column of
``paper_vs_reproduced.csv``.

A fact with a number is judged by the claim's own rule (``status_public_dataset``); a fact
that only says what the dataset holds has no number and leaves the claim to the data.
"""

from __future__ import annotations

from reveal_lab.studies._claim_model import Claim, Reading

__all__ = ["FORMAT_DOC", "PUBLIC_FACTS", "public_fact"]

#: where the facts are written down
FORMAT_DOC = "reveal-dataset-format.md"

_FILES = ("Reveal_GPU.zip: 740 train + 740 infer host files (2 hosts, htc-g003/g004); Reveal_CPU.zip: "
          "1,701 train + 1,341 infer (8 hosts, nserver07-16)")
_CHANNELS = (
    "≈765 columns per GPU host file, 791–795 per CPU host file, one of them the timestamp: 764 to 794 "
    "channels"
)
_LLM = (
    "LLM runs are in it (models DEEPSEEK, LLAMA, MISTRAL; phase fine-tuning) with "
    "NetworkTCPRetrans_diff:TcpRetransSegs columns: the count needs the files, not their description"
)

#: claim id -> the documented fact: ``Reading(value, text, lo=, hi=)``; no value: the text only
PUBLIC_FACTS: dict[str, Reading] = {
    "channels_over_700": Reading(764.0, _CHANNELS, lo=764.0, hi=794.0),
    "channels_about_700": Reading(
        764.0, _CHANNELS + " (the GPU hosts' inside ±10 % of 700, the CPU hosts' above)", lo=764.0, hi=794.0
    ),
    "sampling_100ms": Reading(100.0, "timestamps in 100 ms steps"),
    "sampling_100hz": Reading(100.0, "timestamps in 100 ms steps (10 Hz, not 100 Hz)"),
    "models_over_30": Reading(
        13.0,
        "the metadata's model column names 13 models (DEEPSEEK, LLAMA, MISTRAL, "
        "BARTBASE, BARTLARGE, BERTBASE, BERTLARGE, Resnet18, Resnet50, VGG16, VGG19, "
        "ViTB16, ViTL16) over 4 tasks; workloads (model__task__dataset) are not counted",
    ),
    "gpu_applications": Reading(None, _FILES + "; applications are not counted in the description"),
    "cpu_applications": Reading(None, _FILES + "; applications are not counted in the description"),
    "runs_per_workload": Reading(None, _FILES + "; runs per workload are not counted in the description"),
    "loss_llm_inference": Reading(None, _LLM),
    "loss_llm_finetuning": Reading(None, _LLM),
    "corr_microarch": Reading(
        None,
        "Intel hosts have Perf:StallRatio, Perf:OccupancyRatio, "
        "Perf:Cycle_activity_stalls_l3_miss and Perf:Cache_Misses columns: the correlation "
        "needs the files",
    ),
    "local_pmu_counters": Reading(
        None,
        "AMD hosts have Perf:Ls_dc_accesses and Perf:Ls_dispatch_ld_dispatch "
        "columns: the anomalies need the files",
    ),
}


def public_fact(claim: Claim) -> Reading | None:
    """The documented fact about ``claim`` (its text prefixed with where it is written),
    ``None`` when the description says nothing about it.

    >>> from reveal_lab.studies import CLAIMS
    >>> f = public_fact(next(c for c in CLAIMS if c.claim_id == "sampling_100ms"))
    >>> f.value, f.note.startswith(FORMAT_DOC)
    (100.0, True)
    """
    fact = PUBLIC_FACTS.get(claim.claim_id)
    if fact is None:
        return None
    return Reading(fact.value, f"{FORMAT_DOC}: {fact.note}", fact.holds, lo=fact.lo, hi=fact.hi)
