"""index.html's first section: one line per setting with the counts, the data and machine
columns, the reliability paper's rows apart; and a reproduction whose claims cannot be
written stops with exit status 1 and the reason."""

from __future__ import annotations

import datetime as dt
import json

import nbformat
import polars as pl
import pytest

from reveal_lab.cli import main
from reveal_lab.notebooks import NotebookResult, write_index
from reveal_lab.reliability import paper_claims
from reveal_lab.studies import claim_counts, paper_vs_reproduced, save_table


@pytest.fixture
def claims(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "recording.json").write_text(json.dumps({"sessions": [{"machine": {"cpu_model": "Lab CPU 7"}}]}))
    save_table(pl.DataFrame({"run_id": ["r"], "workload": ["w"], "platform": ["lab"], "n_metrics": [701],
                             "interval_ms": [100.0]}), tmp_path, "dataset_runs")
    return paper_vs_reproduced(tmp_path, data=str(data)), str(data)


def _page(tmp_path, **kw) -> str:
    results = [NotebookResult("01-x.ipynb", "First notebook", "ok")]
    return write_index(tmp_path, results, preset="smoke", data="d", started=dt.datetime(2026, 1, 1),
                       **kw).read_text()


def test_the_page_opens_with_the_counts_per_setting(tmp_path, claims):
    df, data = claims
    page = _page(tmp_path, claims=df, reliability=pl.DataFrame(paper_claims(simulate=False)))
    c = claim_counts(df)
    first = (f"{c['paper']['reproduced']} of {sum(c['paper'].values())} claims of the paper reproduced on d, "
             f"{c['paper']['differs']} differ, {c['paper']['cannot be checked here']} cannot be checked here")
    assert page.index(first) < page.index("First notebook")
    # the counts' table first, then the sentences, then the rows grouped by section
    assert page.index("The paper beside us") < page.index("findings of the paper") < page.index(first)
    assert page.index(first) < page.index('<details class="group">')
    for col in ("<th>ours, the paper&#39;s method</th>", "<th>ours, reveal-lab&#39;s default</th>",
                "<th>public dataset</th>"):
        assert col in page
    assert data in page and "Lab CPU 7" in page  # the data given and the machine it records
    assert page.index("claims of the paper") < page.index("Another paper") < page.index("lemon_512plus")


def test_a_claims_failure_is_shown_in_their_place(tmp_path):
    page = _page(tmp_path, claims_error="OSError: disk full")
    assert "could not be written: OSError: disk full" in page


def _one_notebook(tmp_path):
    """A manifest of one notebook that does nothing."""
    d = tmp_path / "nbs"
    d.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "reveal-lab", "display_name": "Python (reveal-lab)",
                                 "language": "python"}
    params = nbformat.v4.new_code_cell('data = ""\nout_dir = "."\nsmoke = False\n')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell("x = 1")]
    nbformat.write(nb, d / "01-one.ipynb")
    (d / "manifest.yml").write_text("kernel: reveal-lab\npresets: {smoke: {}, full: {}}\n"
                                    "notebooks:\n  - {notebook: 01-one.ipynb}\n")
    return d / "manifest.yml"


@pytest.mark.notebook
def test_a_data_run_names_its_own_data_and_machine(tmp_path):
    data = tmp_path / "elsewhere"
    data.mkdir()
    machine = {"sessions": [{"machine": {"cpu_model": "Other CPU 3"}}]}
    (data / "recording.json").write_text(json.dumps(machine))
    out = tmp_path / "out"
    rc = main(["reproduce", "--preset", "smoke", "--data", str(data), "--out", str(out), "--manifest",
               str(_one_notebook(tmp_path))])
    assert rc == 0
    df = pl.read_csv(out / "paper_vs_reproduced.csv")
    row = df.filter(pl.col("claim_id") == "channels_over_700").row(0, named=True)
    assert row["data"] == str(data.resolve()) and row["machine"].startswith("Other CPU 3")
    assert "lab dataset" not in " ".join(df["machine"].to_list())
    page = (out / "index.html").read_text()
    assert f"reproduced on {data.resolve()}," in page and "Other CPU 3" in page


@pytest.mark.notebook
def test_reproduce_stops_when_the_claims_cannot_be_written(tmp_path, capsys):
    out = tmp_path / "out"
    (out / "paper_vs_reproduced.csv").mkdir(parents=True)  # where the table goes: a folder, so writing fails
    rc = main(["reproduce", "--preset", "smoke", "--data", "synth", "--out", str(out), "--manifest",
               str(_one_notebook(tmp_path))])
    err = capsys.readouterr().err
    assert rc == 1 and "the claims could not be written" in err and "paper_vs_reproduced.csv" in err
    assert "could not be written" in (out / "index.html").read_text()
