"""The runner: grid × replications → executor → store, with a progress bar and resume.

``run_study`` expands the grid, skips every (grid point, replication) already in the store,
hands the rest to an executor and commits each result the moment it arrives. Killing the
process at any time loses at most the replications in flight; running the same command
again finishes the job without duplicating a row (the store's primary key).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from laplace_lab._checks import integer, positive_int
from laplace_lab._progress import progress_bar
from laplace_lab.studies.executors import Task, check_executor, execute, run_task
from laplace_lab.studies.results import StudyResults
from laplace_lab.studies.seeding import params_key
from laplace_lab.studies.spec import Params, Study, expand_grid
from laplace_lab.studies.store import Store, default_store_path

__all__ = ["RunReport", "default_store_path", "plan", "replicate", "run_study"]


@dataclass(frozen=True)
class RunReport:
    """What a call of :func:`run_study` did, and the way to its results.

    ``summary()``, ``table()``, ``plot()`` and ``to_csv()`` read the store the run wrote
    (all of it, earlier runs included): see :class:`laplace_lab.studies.results.StudyResults`.
    """

    study: str
    store: Path
    planned: int
    already_done: int
    ran: int
    seconds: float
    results: StudyResults = field(repr=False, compare=False)

    def summary(self, *, confidence: float = 0.95) -> list[Any]:
        """Mean, s.e. and interval of every metric at every stored grid point."""
        return self.results.summary(confidence=confidence)

    def table(self) -> str:
        """The summary as text, one line per grid point and metric, and the study's report."""
        return self.results.table()

    def plot(self, path: str | Path | None = None) -> Path:
        """The study's figure as PNG (default: next to the store); returns its path."""
        return self.results.plot(path)

    def to_csv(self, path: Any = None, *, summary: bool = False) -> Any:
        """The replications (or the summary) as CSV; see ``StudyResults.to_csv``."""
        return self.results.to_csv(path, summary=summary)


def plan(
    study: Study,
    *,
    grid: Mapping[str, Sequence[Any]] | None = None,
    replications: int | None = None,
    full: bool = False,
) -> list[tuple[Params, int]]:
    """Every (grid point, replication index) of a run, in grid order.

    ``grid`` overrides values of the default (or full) grid key by key
    (:meth:`Study.grid_with`); every point is checked by the study's ``check_params``.
    """
    points = expand_grid(study.grid_with(grid, full=full))
    reps = study.replications_for(full=full) if replications is None else replications
    reps = positive_int(reps, "replications")
    return [(params, rep) for params in points for rep in range(reps)]


def replicate(
    study: Study,
    params: Mapping[str, Any],
    replications: int,
    *,
    seed: int = 0,
    progress: bool = True,
) -> list[dict[str, float]]:
    """The metrics of replications 0 … ``replications`` − 1 of one grid point, in memory.

    Exactly the rows ``run_study`` stores for that point and base ``seed`` (same seeding,
    same one-thread BLAS), without a store: for checks that read a study's replications.
    ``params`` must give every grid key one value; ``progress`` shows a bar.

    Examples
    --------
    The mean of n standard normals, three replications at n = 1000: each replication draws
    from its own generator (seeded from the study, the grid point and the replication), so
    the means differ, each within a few 1/√n ≈ 0.03 of 0, and a second call repeats them
    exactly.

    >>> from laplace_lab.studies import Study, replicate
    >>> def run_one(params, rng):
    ...     return {"mean": float(rng.normal(size=params["n"]).mean())}
    >>> study = Study(
    ...     name="normal-mean",
    ...     description="The mean of n standard normals.",
    ...     grid={"n": (100,)},
    ...     full_grid={"n": (100, 1000)},
    ...     replications=3,
    ...     full_replications=10,
    ...     run_one=run_one,
    ... )
    >>> rows = replicate(study, {"n": 1000}, 3, progress=False)
    >>> [round(row["mean"], 3) for row in rows]
    [0.054, 0.004, -0.04]
    >>> rows == replicate(study, {"n": 1000}, 3, progress=False)
    True
    """
    if not isinstance(study, Study):
        raise TypeError(f"study must be a Study; got {type(study).__name__}")
    missing = sorted(set(study.grid) - set(params))
    if missing:
        raise ValueError(f"params must give every grid parameter; missing {missing}")
    todo = plan(study, grid={k: [v] for k, v in params.items()}, replications=replications)
    seed = integer(seed, "seed", low=0)
    out = []
    with progress_bar(total=len(todo), desc=study.name, unit="rep", enabled=progress) as bar:
        for task in _tasks(study, todo, seed):
            for result in run_task(task):
                out.append(result.metrics)
                bar.update(1)
    return out


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
        Values that replace those of the study's default (or full) grid, key by key, as
        ``--grid`` does: ``{"N": [30, 100]}`` varies N over 30 and 100 and keeps every
        other parameter's default values. Unknown keys and values the study cannot run
        (its ``check_params``) are refused before the store is created.
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
        Counts and timing; ``report.summary()``, ``report.table()``, ``report.plot()`` and
        ``report.to_csv()`` read the results.

    Notes
    -----
    Every argument is validated before the store is opened. If the run fails before its
    first replication is stored, a store this call created is deleted again.
    """
    if not isinstance(study, Study):
        raise TypeError(f"study must be a Study; got {type(study).__name__}")
    path = Path(store) if store is not None else default_store_path(study, full=full)
    merged = study.grid_with(grid, full=full)
    todo = plan(study, grid=merged, replications=replications, full=full)
    reps = len(todo) // len(expand_grid(merged))
    seed = integer(seed, "seed", low=0)
    workers = check_executor(executor, workers, scheduler)
    start = time.perf_counter()
    db = Store(path, study=study.name, code_version=study.code_version, seed=seed)
    try:
        db.record_run(merged, reps)
        done = db.done()
        tasks = _tasks(
            study, [(p, rep) for p, rep in todo if (params_key(p), rep) not in done], seed
        )
        pending = sum(len(t.reps) for t in tasks)
        ran = 0
        with progress_bar(
            total=len(todo),
            initial=len(todo) - pending,
            desc=study.name,
            unit="rep",
            enabled=progress,
        ) as bar:
            for result in execute(tasks, executor=executor, workers=workers, scheduler=scheduler):
                ran += db.add(result.key, result.rep, result.metrics, result.seconds)
                bar.update(1)
    except BaseException:
        db.discard_if_empty()
        raise
    db.close()
    return RunReport(
        study=study.name,
        store=path,
        planned=len(todo),
        already_done=len(todo) - pending,
        ran=ran,
        seconds=time.perf_counter() - start,
        results=StudyResults(study, path),
    )
