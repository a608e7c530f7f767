"""`laplace-lab check --scheduler` on a real Dask cluster (a scheduler and two workers on
127.0.0.1): a worker killed midway and a whole run killed and restarted give the verdicts of
a plain run; finished units are read from the store, not recomputed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.dask_cluster import BIN, dask_cluster, free_port

pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parents[3]
#: One claim per module (one unit of work each): it marks each run of itself in a folder, then
#: takes long enough to be killed midway.
CLAIM = """
import os, time
from pathlib import Path

from laplace_lab.paper_checks.verification import Setting, Status, Verdict, claim


@claim(paper="dask-test", name="{name}", location="here", statement="{name} holds.",
       kind="exact", setting=Setting.paper())
def check(ctx):
    folder = Path(os.environ["DASK_TEST_MARKS"])
    (folder / f"{name}.{{os.getpid()}}.{{time.monotonic_ns()}}").touch()
    time.sleep(float(os.environ.get("DASK_TEST_SLEEP", "2")))
    return Verdict(Status.CONFIRMED, measured=len("{name}"), expected=len("{name}"))
"""
NAMES = ("unit-a", "unit-b", "unit-c")


def _wait(predicate, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


@pytest.fixture
def cluster(tmp_path):
    """A scheduler and two workers that import the plugin claims."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    for name in NAMES:
        (plugins / f"dask_{name.replace('-', '_')}.py").write_text(CLAIM.format(name=name))
    marks = tmp_path / "marks"
    marks.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(plugins), str(ROOT)]),
        "DASK_TEST_MARKS": str(marks),
    }
    with dask_cluster(env, tmp_path, 2) as (address, procs):
        yield address, env, marks, procs


def _check(env: dict, out: Path, *extra: str) -> subprocess.Popen:
    argv = [BIN / "laplace-lab", "check", "--paper", "dask-test", "--mutants", "none"]
    for name in NAMES:
        argv += ["--plugin", f"dask_{name.replace('-', '_')}"]
    return subprocess.Popen(
        [*argv, "--out", str(out), *extra],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _verdicts(out: Path) -> list[dict]:
    claims = json.loads((out / "verdicts.json").read_text())["claims"]
    return [{k: v for k, v in c.items() if "second" not in k} for c in claims]


def _runs(marks: Path, name: str) -> int:
    return len(list(marks.glob(f"{name}.*")))


def test_a_killed_worker_and_a_killed_run_give_the_verdicts_of_a_plain_run(cluster, tmp_path):
    address, env, marks, procs = cluster
    plain = _check({**env, "DASK_TEST_SLEEP": "0"}, tmp_path / "plain", "--jobs", "1")
    assert plain.wait(timeout=120) == 0, plain.stdout.read()
    reference = _verdicts(tmp_path / "plain")
    assert [c["status"] for c in reference] == ["CONFIRMED"] * 3
    for p in marks.iterdir():
        p.unlink()

    # (a) one of the two workers killed while it runs a unit: Dask reruns it on the other
    run = _check(env, tmp_path / "a", "--scheduler", address)
    _wait(lambda: len(list(marks.iterdir())) >= 2, 60, "both workers to start a unit")
    procs[1].send_signal(signal.SIGKILL)
    assert run.wait(timeout=120) == 0, run.stdout.read()
    assert _verdicts(tmp_path / "a") == reference
    assert sum(_runs(marks, n) for n in NAMES) >= 4  # the killed worker's unit ran twice

    # (b) the whole run killed after its first finished unit, then restarted: the finished
    # units are read from the store
    for p in marks.iterdir():
        p.unlink()
    env_slow = {**env, "DASK_TEST_SLEEP": "3"}
    run = _check(env_slow, tmp_path / "b", "--scheduler", address)
    units = tmp_path / "b" / ".units"
    _wait(lambda: units.is_dir() and any(units.glob("*.pickle")), 90, "a stored unit")
    run.send_signal(signal.SIGKILL)
    run.wait(timeout=30)
    stored = {n for n in NAMES if _runs(marks, n)}
    finished = len(list(units.glob("*.pickle")))
    before = {n: _runs(marks, n) for n in NAMES}
    again = _check(env_slow, tmp_path / "b", "--scheduler", address)
    output, _ = again.communicate(timeout=120)
    assert again.returncode == 0, output
    assert output.count("(read, not recomputed)") == finished >= 1
    assert _verdicts(tmp_path / "b") == reference
    recomputed = {n for n in NAMES if _runs(marks, n) > before[n]}
    assert len(recomputed) == len(NAMES) - finished and stored  # the rest, and only it
    shutil.rmtree(tmp_path / "b" / ".units")


def test_an_unreachable_scheduler_is_refused_before_any_claim_runs(tmp_path):
    port = free_port()
    start = time.monotonic()
    run = subprocess.run(
        [
            BIN / "laplace-lab",
            "check",
            "--claim",
            "probit-preserves-map-decisions",
            "--scheduler",
            f"tcp://127.0.0.1:{port}",
            "--out",
            str(tmp_path / "r"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 1 and time.monotonic() - start < 10  # OSError: exit 1
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "no Dask scheduler answered" in lines[0], run.stderr
