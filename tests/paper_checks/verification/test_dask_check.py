"""`laplace-lab check --scheduler` on a real Dask cluster (a scheduler and two workers on
127.0.0.1): a worker killed midway and a whole run killed and restarted give the verdicts of
a plain run; finished units are read from the store, not recomputed; a replicated claim's
replicates run as tasks on both workers and are read back from the store on a rerun."""

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
    time.sleep(float(os.environ.get("DASK_TEST_SLEEP", "1.5")))
    return Verdict(Status.CONFIRMED, measured=len("{name}"), expected=len("{name}"))
"""
NAMES = ("unit-a", "unit-b", "unit-c")
#: A claim decided over replicates (one sequential design, looks at 4 and 8): each replicate
#: marks the process that draws it.
REPLICATED = """
import os, time
from pathlib import Path

from laplace_lab.paper_checks.verification import Setting, Verdict, claim
from laplace_lab.paper_checks.verification.replicates import Check, decide


def draw(i):
    (Path(os.environ["DASK_TEST_MARKS"]) / f"rep.{i}.{os.getpid()}.{time.monotonic_ns()}").touch()
    time.sleep(0.3)
    return 1.0 + 0.1 * ((7 * i) % 5)


@claim(paper="dask-rep", name="replicated", location="here", statement="Its mean exceeds 0.",
       kind="superiority", setting=Setting.paper())
def check(ctx):
    decision, results = decide([Check("the mean", draw, 0.0, +1)], looks=(4, 8))
    return Verdict(decision.status, measured=results[0].estimate.mean, expected=0.0,
                   decision=decision)
"""


def _wait(predicate, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


@pytest.fixture
def plugins(tmp_path):
    """(environment, marks folder): the plugin claims importable, their marks' folder."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    for name in NAMES:
        (folder / f"dask_{name.replace('-', '_')}.py").write_text(CLAIM.format(name=name))
    (folder / "dask_replicated.py").write_text(REPLICATED)
    (folder / "dask_replicated_too.py").write_text(REPLICATED.replace('"replicated"', '"too"'))
    marks = tmp_path / "marks"
    marks.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(folder), str(ROOT)]),
        "DASK_TEST_MARKS": str(marks),
    }
    return env, marks


@pytest.fixture
def cluster(plugins, tmp_path):
    """A scheduler and two workers that import the plugin claims."""
    env, marks = plugins
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
    env_slow = {**env, "DASK_TEST_SLEEP": "2"}
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


def test_a_claims_replicates_run_as_tasks_and_resume_from_the_store(cluster, tmp_path):
    address, env, marks, _ = cluster

    def check(out: Path, *extra: str) -> str:
        argv = [BIN / "laplace-lab", "check", "--paper", "dask-rep", "--plugin", "dask_replicated"]
        run = subprocess.run(
            [*argv, "--mutants", "none", "--out", str(out), *extra],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert run.returncode == 0, run.stdout + run.stderr
        return run.stdout

    def drawn() -> list[tuple[int, int]]:
        return sorted(
            (int(p.name.split(".")[1]), int(p.name.split(".")[2])) for p in marks.iterdir()
        )

    check(tmp_path / "plain", "--jobs", "1")
    reference = _verdicts(tmp_path / "plain")
    assert [c["status"] for c in reference] == ["CONFIRMED"]
    assert [i for i, _ in drawn()] == [0, 1, 2, 3]  # decided at the first look
    for p in marks.iterdir():
        p.unlink()

    check(tmp_path / "dask", "--scheduler", address)
    assert _verdicts(tmp_path / "dask") == reference
    assert [i for i, _ in drawn()] == [0, 1, 2, 3]
    assert len({pid for _, pid in drawn()}) == 2  # spread over both workers
    stored = list((tmp_path / "dask" / ".units" / "replicates").glob("*.pickle"))
    assert len(stored) == 4

    # a run killed after its replicates finished but before its unit did: the rerun runs the
    # claim again and reads its replicates from the store
    for unit in (tmp_path / "dask" / ".units").glob("*.pickle"):
        unit.unlink()
    before = drawn()
    output = check(tmp_path / "dask", "--scheduler", address)
    assert "(read, not recomputed)" not in output
    assert drawn() == before
    assert _verdicts(tmp_path / "dask") == reference


def test_two_units_waiting_for_their_replicates_share_a_one_thread_worker(plugins, tmp_path):
    # a LocalCluster of one worker with one thread: the first unit lets its thread go while
    # its replicates run, the second unit starts and does the same; neither waits for ever
    env, marks = plugins
    argv = [BIN / "laplace-lab", "check", "--paper", "dask-rep", "--mutants", "none"]
    argv += ["--plugin", "dask_replicated", "--plugin", "dask_replicated_too"]
    run = subprocess.run(
        [*argv, "--scheduler", "local", "--jobs", "1", "--out", str(tmp_path / "r")],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert [c["status"] for c in _verdicts(tmp_path / "r")] == ["CONFIRMED"] * 2
    assert len(list(marks.iterdir())) == 8  # 4 replicates of each claim, once


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
