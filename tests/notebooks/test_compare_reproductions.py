"""scripts/compare_reproductions.py: which outputs of two reproductions differ."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("compare_reproductions", ROOT / "scripts" / "compare_reproductions.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _out(folder, table_value, claim_value, runtime):
    (folder / "tables").mkdir(parents=True)
    (folder / "tables" / "table4_detection_summary.csv").write_text(f"a,b\n1,{table_value}\n")
    (folder / "tables" / "measured_runtimes.csv").write_text(f"s\n{runtime}\n")
    (folder / "pruning.json").write_text('{"kept": 3}')
    (folder / "paper_vs_reproduced.csv").write_text(
        "claim_id,ours,data,machine\n"
        f"zscore,{claim_value},{folder},vm-{folder.name}\nchannels,829,{folder},vm-{folder.name}\n"
    )


def test_equal_outputs_pass_and_a_changed_table_or_claim_is_named(tmp_path, capsys):
    mod = _script()
    _out(tmp_path / "a", 2, 0.5, 0.1)
    _out(tmp_path / "b", 2, 0.5, 0.3)  # only the timing, the data folder and the machine differ
    assert mod.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert "3 equal, 0 differ" in capsys.readouterr().out
    _out(tmp_path / "c", 7, 0.6, 0.1)
    assert mod.main([str(tmp_path / "a"), str(tmp_path / "c")]) == 1
    got = capsys.readouterr().out
    assert "differ: tables/table4_detection_summary.csv" in got
    assert "differ: paper_vs_reproduced.csv: zscore" in got and "channels" not in got
    assert "measured: tables/measured_runtimes.csv" in got
    (tmp_path / "c" / "pruning.json").unlink()
    assert mod.main([str(tmp_path / "a"), str(tmp_path / "c")]) == 1
    assert "missing: pruning.json" in capsys.readouterr().out
    assert mod.main([str(tmp_path / "a"), str(tmp_path)]) == 2
