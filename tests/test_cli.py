"""The whole ``laplace-lab`` command line: every error is one line, a non-zero status, no
traceback, and leaves nothing behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from laplace_lab.cli import main
from tests.studies.toy import TOY

ROOT = Path(__file__).resolve().parents[1]
TOY_PLUGIN = ["--plugin", "tests.studies.toy"]
T2 = "theorem2-consistency"


def _cli(argv: list[str], capsys) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``laplace-lab *argv`` run in this process."""
    try:
        status = main(argv)
    except SystemExit as exc:  # argparse
        status = exc.code
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture(scope="module")
def toy_store(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("toy") / "toy.sqlite"
    argv = ["study", "run", TOY.name, *TOY_PLUGIN, "--store", str(path), "--reps", "2"]
    assert main([*argv, "--grid", "n=50", "--no-progress"]) == 0
    return path


def _bad_command_lines(tmp: Path, store: Path) -> list[tuple[list[str], int, str]]:
    """(argv, exit status, text the one error line must contain)."""
    blocked = tmp / "a-file"  # a regular file: nothing can be written below it
    blocked.write_text("")
    new = str(tmp / "new-results" / "x.sqlite")
    run = ["study", "run", T2, "--store", new, "--no-progress"]
    toy = [TOY.name, *TOY_PLUGIN, "--store", str(store)]
    return [
        (["study", "run", "no-such-study"], 2, "unknown study 'no-such-study'"),
        ([*run, "--grid", "N=-5"], 2, "N must be a positive integer; got N=-5"),
        ([*run, "--grid", "N=100,abc"], 2, "--grid N: 'abc' is not an integer"),
        ([*run, "--grid", "k=25"], 2, "k must be in [1, 19]; got k=25"),
        ([*run, "--grid", "scenario=flat"], 2, "scenario must be separated, ties or near-ties"),
        ([*run, "--grid", "q=1"], 2, "unknown parameter 'q'"),
        ([*run, "--grid", "N"], 2, "--grid expects key=v1,v2"),
        ([*run, "--grid", "N=10", "N=100"], 2, "parameter 'N' given twice"),
        ([*run, "--grid", "N=10", "--grid", "N=100"], 2, "parameter 'N' given twice"),
        ([*run, "--executor", "process", "--workers", "0"], 2, "workers must be a positive"),
        ([*run, "--reps", "0"], 2, "replications must be a positive integer"),
        ([*run, "--reps", "abc"], 2, "argument --reps: invalid int value: 'abc'"),
        ([*run, "--seed", "-1"], 2, "seed must be a non-negative integer"),
        ([*run, "--scheduler", "tcp://127.0.0.1:1", "--executor", "serial"], 2, "scheduler"),
        ([*run, "--plugin", "no.such.module"], 2, "cannot import study plugin module"),
        (["study", "run", *toy, "--grid", "n=-5", "--no-progress"], 1, "run_one failed"),
        (["study", "status", T2, "--store", new], 2, "no store for study"),
        (["study", "export", *toy, "--out", str(blocked / "x.csv")], 1, "cannot write"),
        (["study", "plot", *toy, "--out", str(blocked / "x.png")], 1, "cannot write"),
        (["study", "list", "--plugin", "no.such.module"], 2, "cannot import study plugin"),
        (["study"], 2, "required: study_command"),
        (["study", "run"], 2, "required: name"),
        (["bench", "--only", "nope"], 2, "unknown benchmark 'nope'"),
        (["bench", "--threads", "-1"], 2, "--threads must be a non-negative integer"),
        (["bench", "--plugin", "no.such.module"], 2, "cannot import benchmark plugin"),
        (["check", "--paper", "nope"], 2, "paper must be one of"),
        (["check", "--claim", "no-such-claim"], 2, "claim must name a registered claim"),
        (["check", "--seed", "-1"], 2, "seed must be a non-negative integer; got seed=-1"),
        (["check", "--plugin", "no.such.module"], 2, "cannot import claim plugin module"),
        (["check", "--mutants", "some"], 2, "argument --mutants: invalid choice"),
        (["check", "--out", str(blocked / "report")], 1, "a-file/report: Not a directory"),
        (["validate", "--target", "m:f", "--out", str(blocked / "v")], 1, "Not a directory"),
        (["frobnicate"], 2, "invalid choice: 'frobnicate'"),
    ]


def test_every_error_is_one_line_with_a_nonzero_status_and_leaves_nothing(
    tmp_path, toy_store, capsys
):
    before = sorted(p.name for p in toy_store.parent.iterdir())
    for argv, status, text in _bad_command_lines(tmp_path, toy_store):
        got, out, err = _cli(argv, capsys)
        assert got == status, (argv, got, err)
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("laplace-lab"), (argv, err)
        assert text in lines[0], (argv, lines[0])
        assert "Traceback" not in out + err
        assert not (tmp_path / "new-results").exists(), argv
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]
    assert sorted(p.name for p in toy_store.parent.iterdir()) == before


def test_traceback_flag_shows_the_python_traceback(tmp_path, toy_store, capsys):
    argv = ["study", "run", TOY.name, *TOY_PLUGIN, "--store", str(toy_store), "--no-progress"]
    with pytest.raises(RuntimeError, match="run_one failed"):
        main(["--traceback", *argv, "--grid", "n=-5"])


def _laplace_lab(*argv: str, cwd: Path, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "laplace_lab.cli", *argv]
    return subprocess.Popen(cmd, cwd=cwd, env=env, stderr=subprocess.PIPE, text=True, **kwargs)


def test_a_closed_output_pipe_ends_quietly(toy_store, tmp_path):
    # `laplace-lab study status … | head -0`: the reader is gone before anything is written.
    argv = ["study", "status", TOY.name, *TOY_PLUGIN, "--store", str(toy_store)]
    proc = _laplace_lab(*argv, cwd=tmp_path, stdout=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 141
    assert "BrokenPipeError" not in err and "Traceback" not in err and err == ""


def test_an_unwritable_report_folder_is_one_line_before_any_claim_runs(tmp_path):
    (tmp_path / "my_claims.py").write_text(
        "from laplace_lab.paper_checks.verification import Setting, Status, Verdict, claim\n"
        "@claim(paper='my-lab', name='one', location='-', statement='1 = 1', kind='exact',\n"
        "       setting=Setting.paper())\n"
        "def one(ctx):\n"
        "    return Verdict(Status.CONFIRMED, measured=1, expected=1)\n"
    )
    (tmp_path / "a-file").write_text("")
    argv = ["check", "--plugin", "my_claims", "--paper", "my-lab", "--mutants", "none"]
    proc = _laplace_lab(*argv, "--out", "a-file/report", cwd=tmp_path, stdout=subprocess.PIPE)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err
    assert out == ""  # refused before the first claim, not after the last one
    assert err.startswith("laplace-lab check: error: ") and err.count("\n") == 1, err


def test_check_silences_the_progress_bars_of_what_its_claims_run(monkeypatch, capfd):
    import laplace_lab.paper_checks.verification.cli as check_cli
    from laplace_lab.studies.runner import replicate

    def claims_reading_a_study(args):
        print("[1/1] a claim ... CONFIRMED")
        return len(replicate(TOY, {"n": 50, "scale": 0.5, "pause": 0.0}, 3))

    monkeypatch.setattr(check_cli, "_check", claims_reading_a_study)
    assert main(["check"]) == 3
    out, err = capfd.readouterr()
    assert out == "[1/1] a claim ... CONFIRMED\n" and err == ""
    replicate(TOY, {"n": 50, "scale": 0.5, "pause": 0.0}, 3)  # outside `check`: a bar
    assert f"{TOY.name}: 100%|" in capfd.readouterr().err


def test_a_claim_that_fails_is_one_line_pointing_to_the_report(tmp_path):
    (tmp_path / "broken_claims.py").write_text(
        "from laplace_lab.paper_checks.verification import Setting, claim\n"
        "@claim(paper='my-lab', name='broken', location='-', statement='-', kind='exact',\n"
        "       setting=Setting.paper())\n"
        "def broken(ctx):\n"
        "    return 1 / 0\n"
    )
    argv = ["check", "--plugin", "broken_claims.py", "--paper", "my-lab", "--mutants", "none"]
    proc = _laplace_lab(*argv, cwd=tmp_path, stdout=subprocess.PIPE)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1 and "[1/1] my-lab/broken (-) ... ERROR" in out
    assert err == (
        "laplace-lab check: error: my-lab/broken: ZeroDivisionError: division by zero "
        f"(see {Path('report') / 'report.md'})\n"
    )
    assert "Traceback" in (tmp_path / "report" / "report.md").read_text()


def test_the_output_folder_check_leaves_nothing_behind(tmp_path):
    """--out is proven writable before any work, and the folders made for the proof are
    removed again (a run refused later, e.g. for an unknown --target, leaves no folder)."""
    from laplace_lab._paths import writable_folder

    new = tmp_path / "a" / "b"
    assert writable_folder(new) == new and not (tmp_path / "a").exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    writable_folder(kept)
    assert kept.is_dir() and list(kept.iterdir()) == []
    (tmp_path / "file").write_text("")
    with pytest.raises(OSError) as err:
        writable_folder(tmp_path / "file" / "x")
    assert err.value.filename == str(tmp_path / "file" / "x")


def test_a_plugin_file_named_as_an_importable_module_is_refused(tmp_path):
    """``numpy.py`` would shadow numpy here and be shadowed by it on a Dask worker (a file is
    sent and imported there by its module name): refused, naming both."""
    from laplace_lab._plugins import load_plugin

    (tmp_path / "numpy.py").write_text("X = 1\n")
    with pytest.raises(ValueError) as err:
        load_plugin(str(tmp_path / "numpy.py"), "claim plugin")
    assert str(err.value).startswith(f"cannot import claim plugin module '{tmp_path}/numpy.py'")
    assert "its module name 'numpy' is that of another importable module" in str(err.value)
    import numpy

    assert hasattr(numpy, "ndarray")  # not replaced
    (tmp_path / "laplace_lab_plugin_zz.py").write_text("X = 2\n")
    assert load_plugin(str(tmp_path / "laplace_lab_plugin_zz.py")).X == 2


def test_a_plugin_file_reached_through_a_link_on_the_path_is_not_a_clash(tmp_path, monkeypatch):
    from laplace_lab._plugins import load_plugin

    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "lab_linked_zz_claims.py").write_text("X = 3\n")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    monkeypatch.syspath_prepend(str(tmp_path / "link"))
    monkeypatch.delitem(sys.modules, "lab_linked_zz_claims", raising=False)
    assert load_plugin(str(tmp_path / "link" / "lab_linked_zz_claims.py")).X == 3
