"""The runner: grid × replications → executor → store, with a progress bar and resume.

``run_study`` expands the grid, skips every (grid point, replication) already in the store,
hands the rest to an executor and commits each result the moment it arrives. Killing the
process at any time loses at most the replications in flight; running the same command
again finishes the job without duplicating a row (the store's primary key).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from laplace_lab._checks import positive_int
from laplace_lab.studies.executors import Task, execute, run_task
from laplace_lab.studies.seeding import params_key
from laplace_lab.studies.spec import Params, Study, expand_grid
from laplace_lab.studies.store import Store

__all__ = ["RunReport", "default_store_path", "plan", "replicate", "run_study"]


@dataclass(frozen=True)
class RunReport:
    """What a call of :func:`run_study` did."""

    study: str
    store: Path
    planned: int
    already_done: int
    ran: int
    seconds: float


def default_store_path(study: Study | str, *, full: bool = False) -> Path:
    """``results/<name>.sqlite`` (``results/<name>-full.sqlite`` for the full grid)."""
    name = study.name if isinstance(study, Study) else study
    return Path("results") / f"{name}{'-full' if full else ''}.sqlite"


def plan(
    study: Study,
    *,
    grid: Mapping[str, Sequence[Any]] | None = None,
    replications: int | None = None,
    full: bool = False,
) -> list[tuple[Params, int]]:
    """Every (grid point, replication index) of a run, in grid order."""
    points = expand_grid(grid if grid is not None else study.grid_for(full=full))
    reps = study.replications_for(full=full) if replications is None else replications
    reps = positive_int(reps, "replications")
    return [(params, rep) for params in points for rep in range(reps)]


def replicate(
    study: Study, params: Mapping[str, Any], replications: int, *, seed: int = 0
) -> list[dict[str, float]]:
    """The metrics of replications 0 … ``replications`` − 1 of one grid point, in memory.

    Exactly the rows ``run_study`` stores for that point and base ``seed`` (same seeding,
    same one-thread BLAS), without a store: for checks that read a study's replications.
    """
    reps = [
        rep
        for _, rep in plan(
            study, grid={k: [v] for k, v in params.items()}, replications=replications
        )
    ]
    tasks = _tasks(study, [(dict(params), rep) for rep in reps], seed)
    return [result.metrics for task in tasks for result in run_task(task)]


def _tasks(study: Study, todo: list[tuple[Params, int]], seed: int) -> list[Task]:
    """One task per replication, or per run of up to ``study.batch_size`` consecutive
    replications of one grid point when the study runs batches."""
    tasks: list[Task] = []
    for params, rep in todo:
        last = tasks[-1] if tasks else None
        if (
            last is not None
            and study.batch_size > 1
            and last.params == params
            and len(last.reps) < study.batch_size
        ):
            tasks[-1] = Task(study, params, (*last.reps, rep), seed)
        else:
            tasks.append(Task(study, params, (rep,) if study.batch_size > 1 else rep, seed))
    return tasks


def run_study(
    study: Study,
    *,
    store: str | Path | None = None,
    grid: Mapping[str, Sequence[Any]] | None = None,
    replications: int | None = None,
    full: bool = False,
    executor: str = "serial",
    workers: int | None = None,
    scheduler: str | None = None,
    seed: int = 0,
    progress: bool = True,
) -> RunReport:
    """Run (or resume) ``study`` and commit every replication to the store as it finishes.

    Parameters
    ----------
    study : Study
        The study.
    store : path, optional
        The SQLite store (default :func:`default_store_path`).
    grid : mapping, optional
        A grid replacing the study's default (or full) grid, e.g. from ``--grid``.
    replications : int, optional
        Replications per grid point (default: the study's, or its full count).
    full : bool
        Use the full grid and replication count.
    executor, workers, scheduler
        See :func:`laplace_lab.studies.executors.execute`.
    seed : int
        Base seed, recorded in the store (a store of another seed is refused).
    progress : bool
        Show a tqdm bar with rate and ETA on stderr.

    Returns
    -------
    RunReport
    """
    if not isinstance(study, Study):
        raise TypeError(f"study must be a Study; got {type(study).__name__}")
    path = Path(store) if store is not None else default_store_path(study, full=full)
    todo = plan(study, grid=grid, replications=replications, full=full)
    start = time.perf_counter()
    with Store(path, study=study.name, code_version=study.code_version, seed=seed) as db:
        done = db.done()
        tasks = _tasks(
            study, [(p, rep) for p, rep in todo if (params_key(p), rep) not in done], seed
        )
        pending = sum(len(t.reps) for t in tasks)
        bar = tqdm(
            total=len(todo),
            initial=len(todo) - pending,
            desc=study.name,
            unit="rep",
            disable=not progress,
            smoothing=0.05,
        )
        ran = 0
        try:
            for result in execute(tasks, executor=executor, workers=workers, scheduler=scheduler):
                ran += db.add(result.key, result.rep, result.metrics, result.seconds)
                bar.update(1)
        finally:
            bar.close()
    return RunReport(
        study=study.name,
        store=path,
        planned=len(todo),
        already_done=len(todo) - pending,
        ran=ran,
        seconds=time.perf_counter() - start,
    )
