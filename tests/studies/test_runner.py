"""The runner: identical rows across executors, resume without loss or duplicates."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from laplace_lab.studies.runner import plan, run_study
from laplace_lab.studies.seeding import params_key
from laplace_lab.studies.store import Store
from laplace_lab.studies.summary import summarise
from tests.studies.toy import TOY

ROOT = Path(__file__).resolve().parents[2]
GRID = {"n": (100, 1000), "scale": (0.5, 2.0), "pause": (0.0,)}


def _rows(path):
    """Stored rows as {(params key, rep): {metric: float.hex()}} — bitwise comparable."""
    with Store(path, study=TOY.name, create=False) as db:
        return {
            (params_key(r.params), r.rep): {k: v.hex() for k, v in r.metrics.items()}
            for r in db.rows()
        }


@pytest.fixture(scope="module")
def serial_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("serial") / "toy.sqlite"
    report = run_study(TOY, store=path, grid=GRID, replications=12, progress=False)
    assert (report.planned, report.ran, report.already_done) == (48, 48, 0)
    return path


def test_rerun_resumes_without_duplicates_and_more_reps_add_only_new_rows(serial_store, tmp_path):
    again = run_study(TOY, store=serial_store, grid=GRID, replications=12, progress=False)
    assert (again.ran, again.already_done) == (0, 48)
    path = tmp_path / "grow.sqlite"
    run_study(TOY, store=path, grid=GRID, replications=5, progress=False)
    grown = run_study(TOY, store=path, grid=GRID, replications=12, progress=False)
    assert (grown.ran, grown.already_done) == (28, 20)
    assert _rows(path) == _rows(serial_store)


def test_the_toy_summary_agrees_with_its_known_mean(serial_store):
    with Store(serial_store, study=TOY.name, create=False) as db:
        summary = summarise(TOY, db.rows())
    errors = [s for s in summary if s.metric == "error"]
    assert len(errors) == 4
    for s in errors:  # E[error] = 0 exactly; 4 s.e. is a 6e-5 false-alarm rate
        assert abs(s.mean) < 4 * s.se, s
        assert s.interval == "normal" and s.low < s.mean < s.high
    cover = [s for s in summary if s.metric == "covered"]
    for s in cover:  # Wilson interval of a 95%-nominal coverage
        assert s.interval == "wilson" and 0.0 <= s.low <= s.mean <= s.high <= 1.0
        assert s.low < 0.95 < s.high or s.mean == 1.0, s


def test_process_pool_gives_bitwise_identical_rows(serial_store, tmp_path):
    path = tmp_path / "process.sqlite"
    run_study(
        TOY, store=path, grid=GRID, replications=12, executor="process", workers=2, progress=False
    )
    assert _rows(path) == _rows(serial_store)


def test_dask_local_cluster_with_two_workers_gives_bitwise_identical_rows(serial_store, tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
    ) as cluster:
        assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
        with distributed.Client(cluster) as client:
            assert len(client.scheduler_info()["workers"]) == 2
        path = tmp_path / "dask.sqlite"
        report = run_study(
            TOY,
            store=path,
            grid=GRID,
            replications=12,
            executor="dask",
            scheduler=cluster.scheduler_address,
            progress=False,
        )
    assert report.ran == 48
    assert _rows(path) == _rows(serial_store)


def test_sigkill_then_resume_gives_the_uninterrupted_rows(tmp_path):
    grid = ["n=100,1000", "scale=0.5,2.0", "pause=0.01"]
    path = tmp_path / "killed.sqlite"
    cmd = [
        sys.executable,
        "-m",
        "laplace_lab.cli",
        "study",
        "run",
        TOY.name,
        "--plugin",
        "tests.studies.toy",
        "--store",
        str(path),
        "--reps",
        "30",
        "--no-progress",
        "--grid",
        *grid,
    ]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stored = 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if path.exists():
            try:
                con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
                stored = con.execute("SELECT COUNT(*) FROM replications").fetchone()[0]
                con.close()
            except sqlite3.OperationalError:
                stored = 0  # the tables are being created
        if stored >= 15:
            break
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    assert 15 <= stored < 120

    overrides = {"n": (100, 1000), "scale": (0.5, 2.0), "pause": (0.01,)}
    resumed = run_study(TOY, store=path, grid=overrides, replications=30, progress=False)
    assert resumed.already_done >= 15 and resumed.ran == 120 - resumed.already_done
    reference = tmp_path / "reference.sqlite"
    run_study(
        TOY,
        store=reference,
        grid=overrides,
        replications=30,
        executor="process",
        workers=2,
        progress=False,
    )
    rows = _rows(path)
    expected = {(params_key(p), r) for p, r in plan(TOY, grid=overrides, replications=30)}
    assert set(rows) == expected  # no gaps, and (primary key) no duplicates
    with Store(path, study=TOY.name, create=False) as db:
        assert len(db) == 120
    assert rows == _rows(reference)


def test_dask_without_a_scheduler_starts_its_own_loopback_cluster(serial_store, tmp_path):
    pytest.importorskip("distributed")
    path = tmp_path / "own.sqlite"
    run_study(
        TOY, store=path, grid=GRID, replications=12, executor="dask", workers=2, progress=False
    )
    assert _rows(path) == _rows(serial_store)


def _failing(params, rng):
    raise ZeroDivisionError("boom")


def test_runner_errors_name_the_problem(tmp_path):
    from laplace_lab.studies.executors import execute
    from laplace_lab.studies.spec import Study

    with pytest.raises(ValueError, match="executor must be one of"):
        run_study(TOY, store=tmp_path / "a.sqlite", grid=GRID, executor="threads", progress=False)
    with pytest.raises(ValueError, match="scheduler is only used with executor='dask'"):
        list(execute([object()], executor="serial", scheduler="tcp://127.0.0.1:1"))
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        list(execute([object()], executor="process", workers=0))
    with pytest.raises(ValueError, match="replications must be a positive integer"):
        run_study(TOY, store=tmp_path / "b.sqlite", replications=0, progress=False)
    bad = Study(
        name="failing",
        description="d",
        grid={"N": (10,)},
        full_grid={"N": (10,)},
        replications=2,
        full_replications=2,
        run_one=_failing,
    )
    path = tmp_path / "c.sqlite"
    with pytest.raises(RuntimeError, match=r"params=\{'N': 10\}, replication=0: ZeroDivision"):
        run_study(bad, store=path, progress=False)
    with Store(path, study="failing", create=False) as db:
        assert len(db) == 0


def test_batched_replications_store_the_rows_of_single_ones(tmp_path):
    import dataclasses

    from laplace_lab.studies.executors import Task, run_task
    from laplace_lab.studies.runner import replicate
    from tests.studies.toy import TOY_BATCHED

    def rows(path):
        with Store(path, study=TOY_BATCHED.name, create=False) as db:
            return {(params_key(r.params), r.rep): r.metrics for r in db.rows()}

    single = dataclasses.replace(TOY_BATCHED, run_batch=None, batch_size=1)
    a, b = tmp_path / "batched.sqlite", tmp_path / "single.sqlite"
    report = run_study(TOY_BATCHED, store=a, grid=GRID, progress=False)
    assert (report.planned, report.ran) == (48, 48)
    run_study(single, store=b, grid=GRID, progress=False)
    assert rows(a) == rows(b)
    # resume: 7 of 12 done per point → one batch of 5 per point
    c = tmp_path / "resumed.sqlite"
    run_study(TOY_BATCHED, store=c, grid=GRID, replications=7, progress=False)
    again = run_study(TOY_BATCHED, store=c, grid=GRID, replications=12, progress=False)
    assert (again.ran, again.already_done) == (20, 28) and rows(c) == rows(a)
    point = {"n": 100, "scale": 0.5, "pause": 0.0}
    assert replicate(TOY_BATCHED, point, 7) == replicate(single, point, 7)
    results = run_task(Task(TOY_BATCHED, point, (0, 1, 2), 0))
    assert [r.rep for r in results] == [0, 1, 2]
    with pytest.raises(ValueError, match="batch_size > 1 needs run_batch"):
        dataclasses.replace(TOY_BATCHED, run_batch=None)
