"""Executors: where replications run — in this process, in a process pool, or on Dask.

Every executor runs the same pure task, :func:`run_task`, and yields results as they
finish (in any order); the runner writes each one to the store on arrival. The task seeds
its generator from (study, parameters, replication) and pins the BLAS thread pools to one
thread, so a replication's float64 metrics are bitwise identical whichever executor,
worker or machine state computed them (multi-threaded BLAS may sum in a different order).
"""

from __future__ import annotations

import math
import multiprocessing
import os
import socket
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from threadpoolctl import ThreadpoolController

from laplace_lab._checks import one_of, positive_int
from laplace_lab.studies.seeding import params_key, replication_rng
from laplace_lab.studies.spec import Params, Study

__all__ = [
    "EXECUTORS",
    "ReplicationError",
    "Result",
    "Task",
    "check_executor",
    "dask_client",
    "execute",
    "reachable_scheduler",
    "run_replication",
    "run_task",
    "ship_modules",
]

#: The executor names the runner and the CLI accept.
EXECUTORS = ("serial", "process", "dask")


class ReplicationError(RuntimeError):
    """``run_one`` raised, or returned something other than finite metrics, for one
    replication (the message names the study, the grid point and the replication)."""


@dataclass(frozen=True)
class Task:
    """Replications to run: the study, its grid point, the replication index (or indices,
    run together by the study's ``run_batch``) and the base seed."""

    study: Study
    params: Params
    rep: int | tuple[int, ...]
    seed: int

    @property
    def reps(self) -> tuple[int, ...]:
        """The replication indices."""
        return self.rep if isinstance(self.rep, tuple) else (self.rep,)


@dataclass(frozen=True)
class Result:
    """One finished replication, as written to the store."""

    key: str
    rep: int
    metrics: dict[str, float]
    seconds: float


def _metrics(task: Task, out: Any) -> dict[str, float]:
    if not hasattr(out, "items"):
        raise TypeError(
            f"study {task.study.name!r}: run_one must return a dict of metrics; "
            f"got {type(out).__name__}"
        )
    metrics = {}
    for name, value in out.items():
        value = float(value)
        if math.isnan(value):
            raise ValueError(
                f"study {task.study.name!r}: metric {name!r} is NaN at params={task.params}, "
                f"replication={task.rep}"
            )
        metrics[str(name)] = value
    return metrics


_POOLS: list[tuple[int, ThreadpoolController]] = []


def _one_blas_thread() -> Any:
    """A context limiting every loaded BLAS/OpenMP pool to one thread. The pools are found
    once (a scan costs about a millisecond, as much as a small replication) and again only
    when modules were imported since, which is how a new pool gets loaded."""
    loaded = len(sys.modules)
    if not _POOLS or _POOLS[-1][0] != loaded:
        _POOLS[:] = [(loaded, ThreadpoolController())]
    return _POOLS[-1][1].limit(limits=1)


def run_task(task: Task) -> list[Result]:
    """Run the task's replications (by ``run_batch`` when it has several and the study has
    one, else one ``run_one`` each), every one on its own seeded generator, BLAS limited to
    one thread. A batch's wall time is shared equally by its replications."""
    study = task.study
    rngs = [replication_rng(study.name, task.params, r, seed=task.seed) for r in task.reps]
    start = time.perf_counter()
    try:
        with _one_blas_thread():
            if study.run_batch is not None and len(rngs) > 1:
                outs = list(study.run_batch(dict(task.params), rngs=rngs))
            else:
                outs = [study.run_one(dict(task.params), rng=rng) for rng in rngs]
    except Exception as exc:
        raise ReplicationError(
            f"study {study.name!r}: run_one failed at params={task.params}, "
            f"replication={task.rep}: {type(exc).__name__}: {exc}"
        ) from exc
    if len(outs) != len(rngs):
        raise ValueError(
            f"study {study.name!r}: run_batch returned {len(outs)} results for {len(rngs)} "
            f"replications at params={task.params}"
        )
    seconds = (time.perf_counter() - start) / len(rngs)
    key = params_key(task.params)
    return [
        Result(key, rep, _metrics(task, out), seconds)
        for rep, out in zip(task.reps, outs, strict=True)
    ]


def run_replication(task: Task) -> Result:
    """Run ``task.study.run_one`` on its own seeded generator (BLAS limited to one thread)."""
    if len(task.reps) != 1:
        raise ValueError(f"run_replication runs one replication; got reps={task.reps}")
    return run_task(task)[0]


def _serial(tasks: Sequence[Task]) -> Iterator[Result]:
    for task in tasks:
        yield from run_task(task)


#: Seconds between two checks of a pool worker that its runner is still alive.
WATCH_INTERVAL = 0.5


def _watch_parent(parent: int) -> None:
    """Exit this worker as soon as the process that started it is gone.

    A pool worker waits on a queue whose write end it holds itself, so it never sees the
    runner die: after a ``kill -9`` of the runner it would live on as an orphan. The
    watchdog notices the re-parenting (``os.getppid()`` changes) and ends the worker.
    """

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(WATCH_INTERVAL)
        os._exit(1)

    threading.Thread(target=watch, name="laplace-lab-parent-watch", daemon=True).start()


def _process(tasks: Sequence[Task], workers: int) -> Iterator[Result]:
    # "spawn": workers import the study by reference, exactly as Dask workers do, and no
    # parent thread state (BLAS pools, tqdm) is forked.
    ctx = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(
        max_workers=workers, mp_context=ctx, initializer=_watch_parent, initargs=(os.getpid(),)
    )
    try:
        # Keep a bounded window of work in flight so a huge grid does not queue at once.
        pending: set[Any] = set()
        queue = iter(tasks)
        window = 8 * workers
        for task in queue:
            pending.add(pool.submit(run_task, task))
            if len(pending) >= window:
                break
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                yield from future.result()
                nxt = next(queue, None)
                if nxt is not None:
                    pending.add(pool.submit(run_task, nxt))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


#: Seconds to wait for a Dask scheduler to answer before the run is refused.
SCHEDULER_TIMEOUT = 3


def reachable_scheduler(scheduler: str) -> None:
    """Refuse, in one line, a ``tcp://host:port`` (or ``host:port``) scheduler that accepts
    no connection within :data:`SCHEDULER_TIMEOUT` seconds (other protocols are left to
    Dask)."""
    address = urllib.parse.urlsplit(scheduler if "://" in scheduler else f"tcp://{scheduler}")
    if address.scheme != "tcp":
        return
    try:
        port = address.port
    except ValueError:
        port = None
    if not address.hostname or port is None:
        raise ValueError(f"scheduler must be tcp://host:port; got scheduler={scheduler!r}")
    try:
        socket.create_connection((address.hostname, port), timeout=SCHEDULER_TIMEOUT).close()
    except OSError as exc:
        raise OSError(
            f"scheduler {scheduler!r}: no Dask scheduler answered within {SCHEDULER_TIMEOUT} s "
            f"({exc.strerror or exc}; is `dask scheduler` running there?)"
        ) from None


@contextmanager
def dask_client(scheduler: str | None, workers: int) -> Iterator[Any]:
    """A Dask client of the cluster at ``scheduler``, or of a LocalCluster of ``workers``
    processes with one thread each on 127.0.0.1 (``scheduler`` None), closed on exit."""
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:  # pragma: no cover - dask is a declared extra
        raise ImportError(
            "the dask executor needs dask[distributed]: pip install 'laplace-lab[dask]'"
        ) from exc
    cluster = None
    if scheduler is None:
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        )
        client = Client(cluster)
    else:
        client = Client(scheduler, timeout=SCHEDULER_TIMEOUT)
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _dask(tasks: Sequence[Task], workers: int, scheduler: str | None) -> Iterator[Result]:
    from distributed import as_completed

    with dask_client(scheduler, workers) as client:
        ship_modules(client, {t.study.run_one.__module__ for t in tasks})
        futures = client.map(run_task, list(tasks), pure=False)
        for future in as_completed(futures):
            yield from future.result()


def _importable(module: str) -> bool:
    """Whether ``module`` can be imported here (run on each Dask worker)."""
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def ship_modules(client: Any, modules: set[str]) -> None:
    """Make every module in ``modules`` importable on every worker of ``client``.

    A study registered by ``--plugin`` lives in a module the workers of a cluster of one's
    own may not have: a module of a single file is sent to them (``Client.upload_file``); one
    they still cannot import (a package, or a dependency missing there) is refused in one
    line that names it and the workers, instead of Dask's "Error during deserialization"."""
    import sys

    for module in sorted(modules):
        missing = [w for w, ok in client.run(_importable, module).items() if not ok]
        source = getattr(sys.modules.get(module), "__file__", None)
        if missing and source and Path(source).name != "__init__.py":
            client.upload_file(source)
            missing = [w for w, ok in client.run(_importable, module).items() if not ok]
        if missing:
            raise ImportError(
                f"module {module!r} (the studies' code) cannot be imported on the Dask "
                f"worker(s) {', '.join(sorted(missing))}: install it there (the same "
                "environment as here) or start the workers where it is on the path"
            )


def check_executor(executor: str, workers: int | None, scheduler: str | None) -> int:
    """Validate the executor arguments of :func:`execute`; the number of workers to use."""
    one_of(executor, "executor", EXECUTORS)
    if scheduler is not None and executor != "dask":
        raise ValueError(f"scheduler is only used with executor='dask'; got {executor!r}")
    if scheduler is not None:
        reachable_scheduler(scheduler)
    if workers is None:
        return max(1, multiprocessing.cpu_count())
    return positive_int(workers, "workers")


def execute(
    tasks: Sequence[Task],
    *,
    executor: str = "serial",
    workers: int | None = None,
    scheduler: str | None = None,
) -> Iterator[Result]:
    """Run ``tasks``; yield each :class:`Result` as it finishes (any order).

    Parameters
    ----------
    tasks : sequence of Task
        The replications to run.
    executor : {"serial", "process", "dask"}
        In this process; in a ``spawn`` process pool of ``workers``; on Dask — the
        scheduler at ``scheduler`` (``"tcp://host:port"``) or, without one, a
        ``LocalCluster`` of ``workers`` single-threaded worker processes on 127.0.0.1.
    workers : int, optional
        Worker processes (default: the number of CPUs, at least 1).
    scheduler : str, optional
        Address of a running Dask scheduler; only with ``executor="dask"``.
    """
    workers = check_executor(executor, workers, scheduler)
    if not tasks:
        return iter(())
    if executor == "serial":
        return _serial(tasks)
    if executor == "process":
        return _process(tasks, workers)
    return _dask(tasks, workers, scheduler)
