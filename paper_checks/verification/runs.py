"""Running claims and their mutants: in this process, or units of work in worker processes.

Claims share their cached experiments (:mod:`.cache`) within a process, so the unit of work is
a :attr:`~.registry.Claim.unit`: the claims of one module, or of the modules that declare one
``WORK_UNIT`` because they share experiments. The units, costliest first (recorded seconds,
:mod:`.costs`), go to a pool of workers, each taking the next unit when it is free; every
claim's streams are keyed by its name (:meth:`.registry.Context.rng`), so a claim earns the
same verdict in any worker and any unit.
Within a unit the true runs come first and the mutants after them: a mutant may reuse the
true results of the cached helpers it names (the ones the true runs lack are computed by the
true code, with the mutant suspended, and kept for the next mutant). Every run limits BLAS and
torch to one thread (in a worker, and in this process with ``--jobs 1``): the workers do not
oversubscribe the cores, and a claim's arithmetic is the same for any number of them. A worker
draws no bar.
The parent prints each claim's line and its mutants' lines in the run's order, whatever order
the units finish in (a claim's lines as soon as every earlier claim's are out), and, on a
terminal, draws one bar over the claims and mutants with an ETA. While the bar is drawn, every
claim and mutant reports its start, its end and the steps of its loops
(:mod:`.progress`): a worker's go to the parent on a queue, a Dask task's through the
scheduler, and the bar names what runs. On Dask, a claim's replicates run as tasks of their
own (:mod:`.fanout`).
"""

from __future__ import annotations

import multiprocessing
import queue
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from laplace_lab._plugins import load_plugin
from laplace_lab._progress import progress_bar, quiet_progress, steps_to
from laplace_lab.paper_checks.verification import fanout
from laplace_lab.paper_checks.verification.costs import estimated_cost
from laplace_lab.paper_checks.verification.outcome import Outcome
from laplace_lab.paper_checks.verification.progress import Board
from laplace_lab.paper_checks.verification.registry import (
    Claim,
    Context,
    MutantOutcome,
    Status,
    Verdict,
    all_claims,
    run_claim,
    run_mutant,
)
from laplace_lab.paper_checks.verification.timing import single_thread
from laplace_lab.paper_checks.verification.unit_store import UnitStore
from laplace_lab.studies.executors import dask_client, ship_modules

__all__ = ["Plan", "run_claims"]

Echo = Callable[[str], None]
#: Hears the events of the claims and mutants (:class:`.progress.Board`); ``None``: nobody.
Report = Callable[[tuple], None] | None


@dataclass(frozen=True)
class Plan:
    """What a run does: the context, which mutants (``"none"``, ``"light"``, ``"all"``), and
    how a worker process registers the claims (``catalog(None, keys)``, then ``plugins``)."""

    ctx: Context
    mutants: str
    catalog: Callable[[str | None, Sequence[str]], None]
    plugins: tuple[str, ...] = ()


def _chosen(item: Claim, mode: str) -> list[Any]:
    if mode == "none":
        return []
    return [m for m in item.mutants if mode == "all" or not m.heavy]


def _claim_line(item: Claim, number: str, verdict: Verdict, seconds: float) -> str:
    return f"[{number}] {item.key} ({item.location}) ... {verdict.status.value} in {seconds:.1f} s"


def _mutant_line(item: Claim, got: MutantOutcome) -> str:
    return f"mutant {item.key}:{got.mutant.name} ... {got.status.value} in {got.seconds:.1f} s" + (
        " — caught" if got.caught else f" — NOT CAUGHT (must be {got.mutant.expect})"
    )


def _lines(outcome: Outcome, number: str) -> list[str]:
    """A claim's line and its mutants' lines, as the run prints them."""
    item = outcome.claim
    return [
        _claim_line(item, number, outcome.verdict, outcome.seconds),
        *(_mutant_line(item, m) for m in outcome.mutants),
    ]


class _InOrder:
    """Prints the lines of finished claims in the run's order (whatever order the units of
    work finish in), each as soon as every earlier claim's lines are out, and counts the
    claims and their mutants on the run's board."""

    def __init__(self, claims: Sequence[Claim], echo: Echo, board: Board) -> None:
        self.order = [c.key for c in claims]
        self.number = {c.key: f"{i}/{len(claims)}" for i, c in enumerate(claims, 1)}
        self.done: dict[str, Outcome] = {}
        self.next = 0
        self.echo, self.board = echo, board

    def add(self, outcomes: Sequence[Outcome]) -> None:
        for o in outcomes:
            self.done[o.claim.key] = o
            self.board.ended(o.claim.key, [m.mutant.name for m in o.mutants])
        while self.next < len(self.order) and self.order[self.next] in self.done:
            key = self.order[self.next]
            for line in _lines(self.done[key], self.number[key]):
                self.echo(line)
            self.next += 1


def _total(claims: Sequence[Claim], plan: Plan) -> int:
    return sum(1 + len(_chosen(c, plan.mutants)) for c in claims)


@contextmanager
def _running(report: Report, key: str, mutant: str | None = None) -> Iterator[None]:
    """Tell ``report`` that the claim ``key`` (or its ``mutant``) starts, each step of its
    loops (:func:`laplace_lab._progress.step`) and its end."""
    if report is None:
        yield
        return
    report(("start", key, mutant))

    def steps(done: int, total: int, what: str) -> None:
        report(("step", key, mutant, done, total, what))

    with steps_to(steps):
        yield
    report(("end", key, mutant))


def _run_group(
    claims: Sequence[Claim],
    plan: Plan,
    echo: Echo,
    numbers: Sequence[str],
    report: Report = None,
    cluster: tuple[str, str | None] | None = None,
) -> list[Outcome]:
    """The claims in order, then their mutants (module docstring); ``numbers`` are the
    claims' "i/N" in the whole run, for the progress lines; ``report`` hears their events.
    ``cluster`` (a Dask task's unit key and store folder) sends the true runs' replicates
    to the cluster (:mod:`.fanout`)."""
    verdicts: list[tuple[Verdict, float]] = []
    for item, number in zip(claims, numbers, strict=True):
        start = time.perf_counter()
        spread = (
            fanout.on_cluster(f"{cluster[0]}/{item.key}", cluster[1]) if cluster else nullcontext()
        )
        with _running(report, item.key), spread:
            verdict = run_claim(item, plan.ctx)
        verdicts.append((verdict, time.perf_counter() - start))
        echo(_claim_line(item, number, verdict, verdicts[-1][1]))
    outcomes = []
    for item, (verdict, seconds) in zip(claims, verdicts, strict=True):
        mutants = []
        for m in _chosen(item, plan.mutants):
            with _running(report, item.key, m.name):
                got = run_mutant(item, m, plan.ctx)
            mutants.append(got)
            echo(_mutant_line(item, got))
        outcomes.append(Outcome(item, verdict, seconds, tuple(mutants)))
    return outcomes


def _print(line: str) -> None:
    print(line, flush=True)


def _quiet(line: str) -> None:
    """A worker's lines are printed by the parent, in order (:class:`_InOrder`)."""


_EVENTS: Any = None  # in a worker of the pool, while the parent draws its bar: its queue


def _listen(events: Any) -> None:
    """The pool's initializer: the worker puts its events on ``events`` (``None``: none). A
    worker that exits does not wait for its last events to reach the parent, which has
    every unit's results anyway."""
    global _EVENTS
    _EVENTS = events
    if events is not None:
        events.cancel_join_thread()


def _to_parent(said: tuple) -> None:
    _EVENTS.put(said)


def _to_topic(topic: str) -> Report:
    """A Dask task's events, sent to the clients subscribed to ``topic`` through the
    scheduler (in the order the task says them)."""
    from distributed import get_worker

    worker = get_worker()
    return lambda said: worker.log_event(topic, list(said))


def _worker(
    keys: Sequence[str],
    numbers: Sequence[str],
    plan: Plan,
    topic: str | None = None,
    cluster: tuple[str, str | None] | None = None,
) -> list[tuple[str, Verdict, float, list]]:
    """Run the claims ``keys`` in a fresh process; plain data back (mutants by name: their
    replacements need not pickle). In a worker of the pool, its events go to the parent
    while it runs; a Dask task's go to the clients subscribed to ``topic`` (None: nowhere),
    and its claims' replicates to the cluster (``cluster``: the unit's key and store folder,
    :mod:`.fanout`). One unit at a time per process (:data:`.fanout.UNIT`)."""
    with fanout.UNIT:
        plan.catalog(None, tuple(keys))
        for module in plan.plugins:
            load_plugin(module, "claim plugin")
        known = {c.key: c for c in all_claims()}
        report = _to_parent if _EVENTS is not None else _to_topic(topic) if topic else None
        with single_thread(), quiet_progress():
            outcomes = _run_group([known[k] for k in keys], plan, _quiet, numbers, report, cluster)
    return [
        (
            o.claim.key,
            o.verdict,
            o.seconds,
            [(m.mutant.name, m.status.value, m.seconds, m.reason) for m in o.mutants],
        )
        for o in outcomes
    ]


def _units(claims: Sequence[Claim], cost: Callable[[Claim], float]) -> list[list[Claim]]:
    """The claims by unit of work, the costliest unit first; claims keep their order."""
    units: dict[str, list[Claim]] = {}
    for c in claims:
        units.setdefault(c.unit, []).append(c)
    return sorted(units.values(), key=lambda group: -sum(cost(c) for c in group))


def _outcomes(results: list, by_key: dict[str, Claim]) -> dict[str, Outcome]:
    """A worker's plain results as :class:`Outcome` objects, by claim key."""
    done = {}
    for key, verdict, seconds, mutants in results:
        item = by_key[key]
        named = {m.name: m for m in item.mutants}
        done[key] = Outcome(
            item,
            verdict,
            seconds,
            tuple(MutantOutcome(named[n], Status(s), t, r) for n, s, t, r in mutants),
        )
    return done


def run_claims(
    claims: Sequence[Claim],
    plan: Plan,
    *,
    jobs: int = 1,
    echo: Echo = _print,
    cost: Callable[[Claim], float] = estimated_cost,
    scheduler: str | None = None,
    store: UnitStore | None = None,
    progress: bool = True,
) -> list[Outcome]:
    """Every claim and its chosen mutants; ``jobs`` > 1 runs the units of work in that many
    worker processes (spawned: no state but the arguments crosses), the costliest units
    first by ``cost`` (:func:`.costs.work_cost`). ``scheduler`` runs the units as tasks of a
    Dask cluster instead (an address, or ``"local"`` for a LocalCluster of ``jobs``
    workers); ``store`` keeps every finished unit on disk and reads the ones a previous run
    of the same check finished. ``progress`` draws the run's bar when stderr is a terminal
    (the lines are printed all the same). Outcomes in ``claims``' order."""
    number = {c.key: f"{i}/{len(claims)}" for i, c in enumerate(claims, 1)}
    groups = _units(claims, cost)
    by_key = {c.key: c for c in claims}
    shown = progress and sys.stderr.isatty()
    with progress_bar(
        total=_total(claims, plan),
        desc="claims and mutants",
        unit="run",
        enabled=shown,
        outermost=True,
    ) as bar:
        board = Board(bar)
        live = not bar.disable

        say = bar.write if live else echo
        with board.ticking() if live else nullcontext():
            if scheduler is None and (jobs <= 1 or len(groups) <= 1):
                report = board.event if live else None
                # one thread, as in a worker: the same arithmetic (and verdicts) for any --jobs
                with single_thread(), quiet_progress() if live else nullcontext():
                    here = _run_group(claims, plan, say, [number[c.key] for c in claims], report)
                for o in here:
                    board.ended(o.claim.key, [m.mutant.name for m in o.mutants])
                return here
            lines = _InOrder(claims, say, board)
            if scheduler is not None:
                done = _on_dask(groups, plan, number, scheduler, jobs, store, lines, by_key, live)
                return [_outcomes(done[c.key], by_key)[c.key] for c in claims]
            outcomes = _in_pool(groups, plan, number, jobs, lines, by_key, live)
    return [outcomes[c.key] for c in claims]


def _in_pool(
    groups: list[list[Claim]],
    plan: Plan,
    number: dict[str, str],
    jobs: int,
    lines: _InOrder,
    by_key: dict[str, Claim],
    live: bool,
) -> dict[str, Outcome]:
    """The units on a pool of ``jobs`` spawned workers; with a ``live`` bar, their events
    come back on a queue while they run (:class:`.progress.Board`). Outcomes by claim key."""
    context = multiprocessing.get_context("spawn")
    events = context.Queue() if live else None
    outcomes: dict[str, Outcome] = {}
    with ProcessPoolExecutor(
        max_workers=min(jobs, len(groups)),
        mp_context=context,
        initializer=_listen,
        initargs=(events,),
    ) as pool:
        pending = {
            pool.submit(_worker, [c.key for c in g], [number[c.key] for c in g], plan)
            for g in groups
        }
        while pending:
            finished, pending = wait(
                pending, timeout=0.1 if live else None, return_when=FIRST_COMPLETED
            )
            while events is not None:
                try:
                    lines.board.event(events.get_nowait())
                except queue.Empty:
                    break
            for future in finished:
                got = _outcomes(future.result(), by_key)
                outcomes.update(got)
                lines.add(list(got.values()))
    return outcomes


def _on_dask(
    groups: list[list[Claim]],
    plan: Plan,
    number: dict[str, str],
    scheduler: str,
    jobs: int,
    store: UnitStore | None,
    lines: _InOrder,
    by_key: dict[str, Claim],
    live: bool = False,
) -> dict[str, list]:
    """Each unit as one Dask task (a lost worker's tasks are rerun by Dask); the units
    ``store`` holds are read, not run; with a ``live`` bar, the tasks' events come back
    through the scheduler (a topic of this run). Plain results by claim key."""
    from distributed import as_completed as finished

    def key_of(group: list[Claim]) -> str:
        return UnitStore.key(
            [c.key for c in group],
            full=plan.ctx.full,
            seed=plan.ctx.seed,
            mutants=plan.mutants,
            plugins=plan.plugins,
        )

    done: dict[str, list] = {}
    todo = []
    for group in groups:
        stored = store.get(key_of(group)) if store is not None else None
        if stored is None:
            todo.append(group)
            continue
        for result in stored:
            done[result[0]] = [result]
        lines.echo(f"stored: {', '.join(c.key for c in group)} (read, not recomputed)")
        lines.add(list(_outcomes(stored, by_key).values()))
    if not todo:
        return done
    address = None if scheduler == "local" else scheduler
    with dask_client(address, max(1, jobs)) as client:
        # a claim plugin, to a cluster of one's own: a file is sent, and imported there by
        # its module name (its path need not exist on a worker's machine)
        plugins = tuple(Path(p).stem if p.endswith(".py") else p for p in plan.plugins)
        ship_modules(client, set(plugins))
        sent = replace(plan, plugins=plugins)
        topic = f"laplace-lab-check-{uuid.uuid4().hex}" if live else None
        if topic is not None:
            client.subscribe_topic(topic, lambda event: lines.board.event(tuple(event[1])))
        try:
            futures = {
                client.submit(
                    _worker,
                    [c.key for c in g],
                    [number[c.key] for c in g],
                    sent,
                    topic,
                    (key_of(g), str(store.folder.resolve()) if store is not None else None),
                    pure=False,
                    key=f"unit-{key_of(g)}",
                ): g
                for g in todo
            }
            for future in finished(futures):
                results = future.result()
                if store is not None:
                    store.put(key_of(futures[future]), results)
                for result in results:
                    done[result[0]] = [result]
                lines.add(list(_outcomes(results, by_key).values()))
        finally:
            if topic is not None:  # an external cluster outlives the run: no handler left on it
                # a client that lost its scheduler cannot unsubscribe: the run's own error counts
                with suppress(Exception):
                    client.unsubscribe_topic(topic)
    return done
