"""The runner: identical rows across executors, resume without loss or duplicates."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
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
    path = tmp_path / "new" / "dir" / "c.sqlite"
    with pytest.raises(RuntimeError, match=r"params=\{'N': 10\}, replication=0: ZeroDivision"):
        run_study(bad, store=path, progress=False)
    # The store it created (and its folders) are gone again: nothing was stored.
    assert not (tmp_path / "new").exists()


def _check_positive_n(params):
    if params["n"] < 1:
        raise ValueError(f"n must be a positive integer; got n={params['n']}")


def test_bad_arguments_are_refused_before_a_store_is_created(tmp_path):
    from dataclasses import replace

    checked = replace(TOY, check_params=_check_positive_n)
    path = tmp_path / "results" / "toy.sqlite"
    bad = [
        ({"grid": {"n": [100, -5]}}, ValueError, r"n must be a positive integer; got n=-5"),
        ({"grid": {"m": [3]}}, ValueError, r"grid has unknown parameter 'm'.*\['n', 'pause'"),
        ({"grid": {"n": []}}, ValueError, r"grid\['n'\] must list at least one value"),
        ({"workers": 0, "executor": "process"}, ValueError, "workers must be a positive"),
        ({"executor": "threads"}, ValueError, "executor must be one of"),
        ({"seed": -1}, ValueError, "seed must be a non-negative integer"),
        ({"replications": 0}, ValueError, "replications must be a positive integer"),
    ]
    for kwargs, error, match in bad:
        with pytest.raises(error, match=match):
            run_study(checked, store=path, progress=False, **kwargs)
        assert not (tmp_path / "results").exists(), kwargs
    # An existing store is never deleted, even when nothing of this run was stored.
    run_study(TOY, store=path, grid={"n": [100]}, replications=2, progress=False)
    with pytest.raises(RuntimeError, match="run_one failed"):
        run_study(TOY, store=path, grid={"n": [-5]}, replications=2, progress=False)
    with Store(path, study=TOY.name, create=False) as db:
        assert len(db) == 4


def test_grid_overrides_merge_into_the_default_grid_as_the_cli_does(tmp_path):
    # {"n": [30, 100]} changes n only; scale and pause keep their default values.
    report = run_study(
        TOY, store=tmp_path / "toy.sqlite", grid={"n": [30, 100]}, replications=3, progress=False
    )
    assert (report.planned, report.ran) == (2 * 2 * 3, 12)
    points = {(r.params["n"], r.params["scale"], r.params["pause"]) for r in report.results.rows()}
    assert points == {(n, s, 0.0) for n in (30, 100) for s in (0.5, 2.0)}
    assert {p["scale"] for p, _ in plan(TOY, grid={"n": [30]})} == {0.5, 2.0}
    from laplace_lab.studies.spec import parse_grid_overrides

    cli_grid = parse_grid_overrides(TOY.grid_for(), ["n=30,100"])
    assert plan(TOY, grid=cli_grid, replications=3) == plan(
        TOY, grid={"n": [30, 100]}, replications=3
    )


def test_a_full_run_plans_the_full_replication_count(tmp_path):
    from dataclasses import replace

    study = replace(TOY, replications=2, full_replications=3)
    one = {"n": [100], "scale": [0.5]}
    report = run_study(study, store=tmp_path / "f.sqlite", grid=one, full=True, progress=False)
    assert (report.planned, report.ran) == (3, 3)


def test_a_run_report_gives_its_summary_table_plot_and_csv(tmp_path, capsys):
    report = run_study(
        TOY, store=tmp_path / "toy.sqlite", grid={"n": [400]}, replications=8, progress=False
    )
    summary = report.summary()
    assert len(summary) == 2 * 3  # 2 grid points x 3 metrics
    errors = [s for s in summary if s.metric == "error"]
    for s in errors:  # mean ± 1.96 s.e. over the 8 stored errors, recomputed here
        values = [r.metrics["error"] for r in report.results.rows() if r.params == s.params]
        assert s.n == 8 and s.mean == pytest.approx(float(np.mean(values)), rel=1e-12)
        half = 1.959963984540054 * np.std(values, ddof=1) / np.sqrt(8)
        assert (s.low, s.high) == pytest.approx((s.mean - half, s.mean + half), rel=1e-9)
    assert "n=400, scale=2.0, pause=0.0 | error:" in report.table()
    png = report.plot()
    assert png == tmp_path / "toy.png" and png.read_bytes()[:4] == b"\x89PNG"
    assert report.to_csv() == tmp_path / "toy.csv"
    assert len((tmp_path / "toy.csv").read_text().splitlines()) == 1 + 16
    report.to_csv("-", summary=True)
    assert capsys.readouterr().out.splitlines()[0].startswith("n,scale,pause,metric,n,mean")
    from laplace_lab.studies import load_results

    again = load_results(TOY, store=tmp_path / "toy.sqlite")
    assert again.summary() == summary


def test_replicate_is_the_stored_rows_shows_progress_and_can_be_silenced(tmp_path, capfd):
    from laplace_lab._progress import quiet_progress
    from laplace_lab.studies.runner import replicate

    params = {"n": 100, "scale": 0.5, "pause": 0.0}
    rows = replicate(TOY, params, 4, seed=2)
    assert f"{TOY.name}: 100%" in capfd.readouterr().err
    report = run_study(
        TOY,
        store=tmp_path / "r.sqlite",
        grid={k: [v] for k, v in params.items()},
        replications=4,
        seed=2,
        progress=False,
    )
    assert rows == [r.metrics for r in report.results.rows()]
    assert replicate(TOY, params, 4, seed=2, progress=False) == rows
    with quiet_progress():
        assert replicate(TOY, params, 4, seed=2) == rows
    assert capfd.readouterr().err == ""
    with pytest.raises(
        ValueError, match=r"params must give every grid parameter; missing \['pause'\]"
    ):
        replicate(TOY, {"n": 100, "scale": 0.5}, 2)


def _children(pid: int) -> set[int]:
    """Live (non-zombie) processes whose parent is ``pid``, from /proc."""
    out = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            out.add(int(stat.parent.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_process_pool_workers_exit_when_their_runner_is_killed(tmp_path):
    path = tmp_path / "orphans.sqlite"
    cmd = [sys.executable, "-m", "laplace_lab.cli", "study", "run", TOY.name]
    cmd += ["--plugin", "tests.studies.toy", "--store", str(path), "--executor", "process"]
    cmd += ["--workers", "2", "--reps", "400", "--grid", "pause=0.05", "--no-progress"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    workers: set[int] = set()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None and len(workers) < 2:
        workers = {c for c in _children(proc.pid) if "spawn_main" in _cmdline(c)}
        time.sleep(0.05)
    assert len(workers) == 2, proc.stderr.read() if proc.poll() is not None else workers
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10  # the watchdog polls every 0.5 s
    while time.monotonic() < deadline and any(_alive(w) for w in workers):
        time.sleep(0.1)
    left = [w for w in workers if _alive(w)]
    for w in left:  # do not leave them behind if the test fails
        os.kill(w, signal.SIGKILL)
    assert not left, f"pool workers {left} outlived their runner"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


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
