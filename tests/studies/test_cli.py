"""``laplace-lab study list | run | status | plot | export`` end to end (in process)."""

from __future__ import annotations

import csv

from laplace_lab.cli import main
from laplace_lab.studies.store import Store
from tests.studies.toy import TOY

PLUGIN = ["--plugin", "tests.studies.toy"]


def test_list_shows_the_catalog_and_plugins(capsys):
    assert main(["study", "list", *PLUGIN]) == 0
    out = capsys.readouterr().out
    assert "toy-exponential-mean: 4 grid points x 50 reps (--full: 6 x 1000)" in out


def test_run_status_plot_export_round_trip(tmp_path, capsys):
    store = tmp_path / "toy.sqlite"
    base = [TOY.name, *PLUGIN, "--store", str(store)]
    argv = ["study", "run", *base, "--reps", "6", "--grid", "n=200", "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "12 replications run, 0 already in" in out
    assert "n=200, scale=2.0, pause=0.0 | covered:" in out
    assert main(argv) == 0
    assert "0 replications run, 12 already in" in capsys.readouterr().out

    assert main(["study", "status", *base]) == 0
    out = capsys.readouterr().out
    assert "12 replications stored (schema 1" in out
    assert "default grid: 0/200 done" in out  # the default grid (n=100,1000) is not run

    png = tmp_path / "toy.png"
    assert main(["study", "plot", *base, "--out", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000

    assert main(["study", "export", *base]) == 0
    with (tmp_path / "toy.csv").open() as fh:
        lines = list(csv.DictReader(fh))
    assert len(lines) == 12
    with Store(store, study=TOY.name, create=False) as db:
        stored = {(r.params["scale"], r.rep): r.metrics["estimate"] for r in db.rows()}
    for line in lines:  # the CSV holds every float exactly
        assert float(line["estimate"]) == stored[(float(line["scale"]), int(line["rep"]))]
    assert main(["study", "export", *base, "--summary"]) == 0
    with (tmp_path / "toy-summary.csv").open() as fh:
        summary = list(csv.DictReader(fh))
    assert len(summary) == 2 * 3  # 2 grid points x 3 metrics
    assert {s["interval"] for s in summary if s["metric"] == "covered"} == {"wilson"}


def test_user_errors_are_one_clear_line(tmp_path, capsys):
    assert main(["study", "run", "no-such-study", "--no-progress"]) == 2
    assert "unknown study 'no-such-study'" in capsys.readouterr().err
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"garbage" * 1000)
    assert main(["study", "run", TOY.name, *PLUGIN, "--store", str(bad), "--no-progress"]) == 2
    assert "corrupt or not SQLite" in capsys.readouterr().err
    argv = ["study", "run", TOY.name, *PLUGIN, "--store", str(tmp_path / "x.sqlite")]
    assert main([*argv, "--grid", "m=3"]) == 2
    assert "unknown parameter 'm'" in capsys.readouterr().err
    assert main(["study", "status", TOY.name, *PLUGIN, "--store", str(tmp_path / "no")]) == 2
    assert "no store for study" in capsys.readouterr().err
    assert main(["study", "run", TOY.name, "--plugin", "no.such.module"]) == 2
    assert "cannot import study plugin module 'no.such.module'" in capsys.readouterr().err
