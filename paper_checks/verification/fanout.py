"""A claim's replicates as tasks of the Dask cluster the claim runs on.

``laplace-lab check --scheduler`` runs each unit of work (:mod:`.runs`) as one Dask task.
Inside it, a claim decided over replicates (:func:`.replicates.sequential`) hands the
replicates of each look to the cluster as tasks of their own (``worker_client``: the claim's
task waits outside the worker's thread pool meanwhile), so that a paper-scale claim uses
every worker, not one; :func:`each` does the same for a claim's other independent pieces of
work (the agents of a Wheel Bandit table). Each finished replicate is stored on disk under a
key of the unit (code digest, mode, seed, mutants, plugins, claims:
:meth:`.unit_store.UnitStore.key`), the claim, the ordinal of its replicated design within the
claim's run and the replicate's index, so that a killed run resumes without recomputing it.

The verdict is the same as on one process: a replicate is deterministic in its index
(``draw(i)``, :func:`.replicates.sequential`) and runs on one thread, as the claim would
(:func:`.timing.single_thread`); the values come back in index order. Replicate i goes to
the same worker in every design of a claim (where it can), so that the statistics a claim
draws from one replicate's fit (:mod:`.cache`) find it there. Only the true run of
a claim spreads its replicates: a mutant replaces functions in its own process, which a
task on another worker would not see, so its replicates run where it runs. A replicate task
that lands on a worker whose thread runs a mutant waits for it (:data:`PATCHING`).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from laplace_lab.paper_checks.verification.progress import step
from laplace_lab.paper_checks.verification.timing import single_thread
from laplace_lab.paper_checks.verification.unit_store import UnitStore

__all__ = ["PATCHING", "UNIT", "Design", "each", "on_cluster"]

#: Held by the unit of work a process computes: a mutant's replacements patch the process's
#: modules and the cached experiments are the process's, so two units on two threads of one
#: Dask worker (``--nthreads 2``) run one after the other. A claim waiting for its replicates
#: lets it go (a unit holds it only while it computes, so no thread waits on a waiting unit).
UNIT = threading.Lock()
#: Held while a mutant's replacements patch this process's modules, and by every replicate
#: task while it runs: a replicate never sees a mutant's code.
PATCHING = threading.Lock()


@dataclass
class _Cluster:
    prefix: str
    store: UnitStore | None
    designs: int = 0


_HERE: ContextVar[_Cluster | None] = ContextVar("laplace_lab_replicates_cluster", default=None)


@contextmanager
def on_cluster(prefix: str, folder: str | None) -> Iterator[None]:
    """Within the block (a claim's true run in a Dask task), replicated designs send their
    replicates to the cluster; ``prefix`` names the unit and the claim, ``folder`` (None:
    nowhere) keeps the finished replicates."""
    store = UnitStore(Path(folder) / "replicates") if folder is not None else None
    token = _HERE.set(_Cluster(prefix, store))
    try:
        yield
    finally:
        _HERE.reset(token)


def _draw(draw: Callable[[int], float], i: int) -> float:
    with PATCHING, single_thread():
        return draw(i)


class Design:
    """The replicates of one replicated design of a claim (one :func:`.replicates.sequential`
    call): on the cluster inside :func:`on_cluster`, else here, one after the other."""

    def __init__(self) -> None:
        self.cluster = _HERE.get()
        if self.cluster is not None:
            self.cluster.designs += 1
            self.prefix = f"{self.cluster.prefix}/design-{self.cluster.designs}"

    def values(
        self,
        draw: Callable[[int], Any],
        indices: Iterable[int],
        total: int,
        what: str = "replicates",
    ) -> list:
        """``[draw(i) for i in indices]``, reporting progress (``what``) out of ``total``."""
        indices = list(indices)
        if self.cluster is None or len(indices) < 2:
            out = []
            for i in indices:
                step(i, total, what)
                out.append(draw(i))
            return out
        return self._spread(draw, indices, total, what)

    def _key(self, i: int) -> str:
        return hashlib.sha256(f"{self.prefix}/{i}".encode()).hexdigest()[:24]

    def _spread(
        self, draw: Callable[[int], Any], indices: list[int], total: int, what: str
    ) -> list:
        from distributed import worker_client

        store = self.cluster.store
        got: dict[int, Any] = {}
        for i in indices:
            kept = store.get(self._key(i)) if store is not None else None
            if kept is not None:
                got[i] = kept[0]
        todo = [i for i in indices if i not in got]
        if todo:
            step(indices[0] + len(got), total, what)
            UNIT.release()  # while this unit waits, another may compute on this worker
            try:
                with worker_client() as client:
                    # replicate i prefers the same worker in every design of the claim, whose
                    # cached fits of replicate i its other statistics reuse
                    workers = sorted(client.scheduler_info()["workers"])
                    futures = [
                        client.submit(
                            _draw,
                            draw,
                            i,
                            key=f"replicate-{self._key(i)}",
                            pure=False,
                            workers=[workers[i % len(workers)]],
                            allow_other_workers=True,
                        )
                        for i in todo
                    ]
                    for i, future in zip(todo, futures, strict=True):
                        got[i] = future.result()
                        if store is not None:
                            store.put(self._key(i), (got[i],))
                        if len(got) < len(indices):  # the caller reports the last
                            step(indices[0] + len(got), total, what)
            finally:
                UNIT.acquire()
        return [got[i] for i in indices]


def each(fn: Callable[[Any], Any], items: Sequence[Any], what: str) -> list:
    """``[fn(x) for x in items]``: under :func:`on_cluster` each item is a task (stored as it
    finishes, as a replicate is), else here in order. For a claim's independent pieces of
    work — the agents of a bandit table — each deterministic in its item."""
    items = list(items)
    out = Design().values(lambda i: fn(items[i]), range(len(items)), len(items), what)
    step(len(items), len(items), what)
    return out
