"""``laplace-lab study list | run | status | plot | export`` end to end (in process)."""

from __future__ import annotations

import csv

from laplace_lab.cli import main
from laplace_lab.studies.store import Store
from tests.studies.toy import TOY

PLUGIN = ["--plugin", "tests.studies.toy"]


def test_list_shows_the_catalog_and_plugins_with_grid_keys_and_values(capsys):
    assert main(["study", "list", *PLUGIN]) == 0
    out = capsys.readouterr().out
    assert "toy-exponential-mean: 4 grid points x 50 reps (--full: 6 x 1000)" in out
    assert "    grid:   n=100,1000  scale=0.5,2.0  pause=0.0\n" in out
    assert "    --full: n=100,1000,10000  scale=0.5,2.0  pause=0.0\n" in out
    assert "    grid:   N=10,100,1000,10000,100000  scenario=separated,ties,near-ties" in out


def test_status_counts_the_grid_of_the_last_run_and_extends_with_it(tmp_path, capsys):
    base = [TOY.name, *PLUGIN, "--store", str(tmp_path / "t.sqlite")]
    run = ["study", "run", *base, "--no-progress", "--reps", "3"]
    assert main([*run, "--grid", "n=30,60,90"]) == 0
    assert main([*run, "--grid", "n=30"]) == 0  # all done already: the grid is now n=30
    capsys.readouterr()
    assert main(["study", "status", *base]) == 0
    out = capsys.readouterr().out
    assert "18 replications stored at 6 grid points" in out
    assert "grid of the last run (n=30  scale=0.5,2.0  pause=0.0; 3 reps): 6/6 done" in out


def test_repeated_grid_options_add_up(tmp_path, capsys):
    base = [TOY.name, *PLUGIN, "--store", str(tmp_path / "t.sqlite")]
    run = ["study", "run", *base, "--no-progress", "--reps", "2"]
    assert main([*run, "--grid", "n=30", "--grid", "scale=0.5"]) == 0  # both apply
    capsys.readouterr()
    assert main(["study", "status", *base]) == 0
    assert "grid of the last run (n=30  scale=0.5  pause=0.0; 2 reps): 2/2 done" in (
        capsys.readouterr().out
    )


def test_one_replication_prints_no_nan_intervals(tmp_path, capsys):
    argv = ["study", "run", TOY.name, *PLUGIN, "--store", str(tmp_path / "one.sqlite")]
    assert main([*argv, "--reps", "1", "--grid", "n=50", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "nan" not in out.lower()
    assert "error: " in out and "(no interval from n=1) (normal, n=1)" in out
    assert main(["study", "export", *argv[2:], "--summary", "--out", "-"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "nan" not in "".join(lines).lower() and len(lines) == 1 + 2 * 3


def test_export_to_standard_output(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = ["study", "run", TOY.name, *PLUGIN, "--reps", "2", "--grid", "n=50", "--no-progress"]
    assert main(argv) == 0
    capsys.readouterr()
    assert main(["study", "export", TOY.name, *PLUGIN, "--out", "-"]) == 0
    out = capsys.readouterr().out
    rows = list(csv.DictReader(out.splitlines()))
    assert len(rows) == 4 and {r["n"] for r in rows} == {"50"}
    with Store("results/toy-exponential-mean.sqlite", study=TOY.name, create=False) as db:
        stored = {(r.params["scale"], r.rep): r.metrics["estimate"] for r in db.rows()}
    assert {(float(r["scale"]), int(r["rep"])): float(r["estimate"]) for r in rows} == stored
    assert not (tmp_path / "-").exists()


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
    assert "12 replications stored at 2 grid points (schema 1" in out
    # counted against the grid that was run, not the default grid (n=100,1000)
    assert "grid of the last run (n=200  scale=0.5,2.0  pause=0.0; 6 reps): 12/12 done" in out

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
