"""The dataset README's hand-written story survives `reveal-lab record --build-only`:
``provenance_readme`` rebuilds everything above the marker from the recorder's log and keeps
the text from the marker on. Broken variants caught: dropping the story (the second assert),
duplicating it on each rebuild (the last)."""

import json

from reveal_lab.lab._provenance import STORY_MARKER, provenance_readme


def _dataset(tmp_path):
    raw, out = tmp_path / "raw", tmp_path / "out"
    raw.mkdir()
    out.mkdir()
    (raw / "recording.json").write_text(json.dumps({"sessions": [{"argv": ["record"], "slots": []}]}))
    (out / "meta_lab.csv").write_text("run,model,phase,world_size,fault\nr,MLP,train,1,none\n")
    (out / "labels.csv").write_text("run,host,fault_type,start,end,expected_subsystem,magnitude\n")
    return raw, out


def test_story_below_the_marker_is_kept_once(tmp_path):
    raw, out = _dataset(tmp_path)
    generated = provenance_readme(raw, out)
    assert STORY_MARKER not in generated  # no README yet: nothing to keep
    story = f"{STORY_MARKER}\n\n## The recording's story\n\nSlot 7 was recorded again.\n"
    (out / "README.md").write_text("# an older generated text\n\nstale table\n\n" + story)
    rebuilt = provenance_readme(raw, out)
    assert rebuilt.endswith(story) and rebuilt.startswith(generated)
    assert "stale table" not in rebuilt
    (out / "README.md").write_text(rebuilt)
    assert provenance_readme(raw, out) == rebuilt
