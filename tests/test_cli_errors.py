"""Bad command-line input is refused before any work: one line on stderr that names the
argument and the valid values (or the closest ones), a non-zero status, no traceback."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import laplace_lab.cli as cli
from laplace_lab.cli import main
from laplace_lab.papers import papers
from tests.studies.toy import TOY

ROOT = Path(__file__).resolve().parents[1]
TOY_RUN = ["study", "run", TOY.name, "--plugin", "tests.studies.toy", "--no-progress"]


def _refused(argv: list[str], capsys, *, seconds: float = 10.0) -> str:
    """The one error line of ``laplace-lab *argv``, checked to come fast and alone."""
    start = time.perf_counter()
    status = main(argv)
    took = time.perf_counter() - start
    out, err = capsys.readouterr()
    assert status != 0 and "Traceback" not in out + err, (argv, err)
    assert err.count("\n") == 1 and err.startswith("laplace-lab "), (argv, err)
    assert took < seconds, (argv, took)
    return err.strip()


def test_an_unknown_paper_lists_the_paper_names(capsys):
    line = _refused(["check", "--paper", "no-such-paper"], capsys)
    assert (
        line.startswith("laplace-lab check: error: paper must be one of")
        and "got --paper='no-such-paper'" in line
    )
    assert all(name in line for name in papers())


def test_a_paper_folder_name_is_an_alias_of_its_paper(monkeypatch, capsys):
    asked = []

    def catalog(paper, names):
        asked.append(paper)
        raise ValueError("stop before importing the claims")

    monkeypatch.setattr(cli, "_claims", catalog)
    for paper in papers():
        _refused(["check", "--paper", paper.replace("-", "_")], capsys)
    assert asked == list(papers())


def test_an_unknown_claim_names_the_closest_claims_only(capsys):
    line = _refused(["check", "--claim", "table-c2-valu"], capsys)
    assert "--claim must name a registered claim" in line and "got --claim='table-c2-valu'" in line
    assert "did you mean table-c2-values" in line and len(line) < 400


@pytest.mark.parametrize(
    ("option", "value", "text"),
    [
        ("--seeds", "0", "argument --seeds: must be a positive integer; got 0"),
        ("--seeds", "-2", "argument --seeds: must be a positive integer; got -2"),
        ("--seeds", "1.5", "argument --seeds: must be a positive integer; got '1.5'"),
        ("--jobs", "-1", "argument --jobs: must be a non-negative integer; got -1"),
    ],
)
def test_seeds_and_jobs_are_refused_while_parsing(option, value, text, capsys):
    assert text in _refused(["check", option, value], capsys, seconds=2.0)


def test_a_target_without_the_contracts_signature_is_refused_before_any_case(tmp_path, capsys):
    out = tmp_path / "v"
    line = _refused(["validate", "--target", "math:sqrt", "--out", str(out)], capsys)
    assert line.startswith("laplace-lab validate: error: --target 'math:sqrt' must be a callable")
    assert "predictive_variance(model, X_train, y_train, X_test, *, likelihood" in line
    assert "(x, /)" in line and not out.exists()


def test_an_unknown_case_names_the_closest_cases_and_the_listing(tmp_path, capsys):
    argv = ["validate", "--target", "laplace-lab", "--out", str(tmp_path / "v"), "--case"]
    line = _refused([*argv, "predictive/mlp-regresion"], capsys)
    assert "--case 'predictive/mlp-regresion' is no case" in line
    assert "did you mean predictive/mlp-regression," in line and line.count(",") <= 5
    assert "laplace-lab validate --list" in line
    line = _refused(["validate", "--scoreboard", "--case", "nosuchcase"], capsys)
    assert "--case 'nosuchcase'" in line and "did you mean" not in line and len(line) < 200


def test_a_corrupt_store_is_one_short_line_with_the_way_out(tmp_path, capsys):
    store = tmp_path / "toy.sqlite"
    assert main([*TOY_RUN, "--store", str(store), "--reps", "200"]) == 0
    capsys.readouterr()
    with sqlite3.connect(store) as db:  # one file, no write-ahead log beside it
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(store.read_bytes())
    half = len(data) // 2
    data[half : half + 8192] = np.random.default_rng(0).bytes(8192)
    store.write_bytes(bytes(data))
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(np.random.default_rng(1).bytes(4096))
    for path in (store, junk):
        argv = ["study", "status", TOY.name, "--plugin", "tests.studies.toy", "--store"]
        line = _refused([*argv, str(path)], capsys)
        assert f"store {path} is not usable" in line
        assert len(line.replace(str(path), "")) < 300, line
        assert f"move it aside (mv {path} {path}.corrupt)" in line


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_scheduler_is_refused_within_seconds(tmp_path, capsys):
    address = f"tcp://127.0.0.1:{_closed_port()}"
    store = tmp_path / "toy.sqlite"
    line = _refused([*TOY_RUN, "--store", str(store), "--scheduler", address], capsys, seconds=5)
    assert f"scheduler '{address}': no Dask scheduler answered" in line
    assert not store.exists()
    line = _refused([*TOY_RUN, "--store", str(store), "--scheduler", "nowhere"], capsys)
    assert "scheduler must be tcp://host:port; got scheduler='nowhere'" in line


def _rows(store: Path) -> int:
    """The replications in ``store`` so far (0 before its table exists)."""
    if not store.exists():
        return 0
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return db.execute("SELECT COUNT(*) FROM replications").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        db.close()


def test_ctrl_c_says_what_is_stored_and_how_to_resume(tmp_path):
    store = tmp_path / "toy.sqlite"
    argv = [*TOY_RUN, "--store", str(store), "--grid", "pause=0.02"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "laplace_lab.cli", *argv],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 60
    while _rows(store) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    err = proc.communicate(timeout=60)[1]
    assert proc.returncode == 130 and "Traceback" not in err and err.count("\n") == 1, err
    stored = int(err.split("interrupted: ", 1)[1].split()[0])
    assert stored == _rows(store) >= 3
    assert f"replications stored in {store}; resume with: laplace-lab study run" in err
    assert f"--store {store} --grid pause=0.02 --plugin tests.studies.toy" in err


def test_the_build_warns_about_no_package_and_ships_every_data_file(tmp_path):
    build = subprocess.run(
        [sys.executable, "setup.py", "-q", "build", "--build-base", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert build.returncode == 0, build.stderr
    assert "would be ignored" not in build.stdout + build.stderr
    shipped = tmp_path / "lib" / "laplace_lab" / "paper_checks"
    data = [*ROOT.glob("paper_checks/*/recorded/*.json"), *ROOT.glob("paper_checks/*/RESULTS.md")]
    assert data and all((shipped / p.relative_to(ROOT / "paper_checks")).is_file() for p in data)


def test_validate_help_names_every_library_the_scoreboard_scores(capsys):
    from laplace_lab.conformance.libraries import LIBRARIES

    assert main(["validate", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert all(name in text for name in LIBRARIES) and len(LIBRARIES) == 5


def test_record_without_full_is_refused_before_any_claim_runs(capsys):
    err = _refused(["check", "--record", "--claim", "ipv-decomposition"], capsys)
    assert "--record needs --full" in err
