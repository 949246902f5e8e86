"""The claims read notebook 02's pruned space of their platform, never a space the paper
setting cut otherwise beside it (``pruning--PLATFORM-pairwise-untrimmed.json``)."""

from __future__ import annotations

import json

from reveal_lab.scale import space_file
from reveal_lab.studies._claim_model import ClaimContext
from reveal_lab.studies._claim_readers import _pruning_json


def test_a_platforms_space_is_read_not_the_papers_cut_beside_it(tmp_path):
    for platform, n in (("gpu", 3), ("cpu", 5)):
        base = tmp_path / f"pruning--{platform}.json"
        base.write_text(json.dumps({"selected": ["m"] * n, "params": {}}))
        space_file(base, "pairwise", "none").write_text(json.dumps({"selected": ["m"] * 9, "params": {}}))
    assert len(list(tmp_path.glob("pruning--*.json"))) == 4
    assert len(_pruning_json(ClaimContext(tmp_path, platform="cpu"))["selected"]) == 5
    assert len(_pruning_json(ClaimContext(tmp_path, platform="gpu"))["selected"]) == 3
    assert len(_pruning_json(ClaimContext(tmp_path))["selected"]) == 3  # the whole dataset's: GPU cluster's
