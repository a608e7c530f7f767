"""A claim's replicates as tasks of the Dask cluster the claim runs on.

``laplace-lab check --scheduler`` runs each unit of work (:mod:`.runs`) as one Dask task.
Inside it, a claim decided over replicates (:func:`.replicates.sequential`) hands the
replicates of each look to the cluster as tasks of their own (``worker_client``: the claim's
task waits outside the worker's thread pool meanwhile), so that a paper-scale claim uses
every worker, not one; :func:`each` does the same for a claim's other independent pieces of
work (the agents of a Wheel Bandit table). Each finished replicate is stored on disk under a
key of the unit (code digest, mode, seed, mutants, plugins, claims:
:meth:`.unit_store.UnitStore.key`), the claim, the ordinal of its replicated design within the
claim's run and the replicate's index, as each finishes, so that a killed run resumes
without recomputing it.

The verdict is the same as on one process: a replicate is deterministic in its index
(``draw(i)``, :func:`.replicates.sequential`) and runs on one thread, as the claim would
(:func:`.timing.single_thread`); the values come back in index order. Replicate i goes to
the same worker in every design of a claim (where it can), so that the statistics a claim
draws from one replicate's fit (:mod:`.cache`) find it there. Only the true run of
a claim spreads its replicates: a mutant replaces functions in its own process, which a
task on another worker would not see, so its replicates run where it runs. A replicate task
is unpickled and run only while its process computes nothing else (:data:`UNIT`), so it
never sees another unit's mutant. The cost: a mutant that reuses the true run's cached fits
(:class:`.mutants.Mutant` ``reuses``) finds those of spread replicates on other workers, not
in its own process, and computes them again, one after the other. Resuming from the stored
replicates needs the run's output folder on a file system the workers share; a worker that
cannot write there only loses the resume.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from laplace_lab._progress import quiet_progress
from laplace_lab.paper_checks.verification.progress import step
from laplace_lab.paper_checks.verification.timing import single_thread
from laplace_lab.paper_checks.verification.unit_store import UnitStore

__all__ = ["UNIT", "Design", "each", "on_cluster"]

#: Held by whatever computes in this process — a unit of work, or a replicate task: a
#: mutant's replacements patch the process's modules, the cached experiments and the thread
#: limits are the process's, so two units (or a unit and a replicate) on two threads of one
#: Dask worker (``--nthreads 2``) run one after the other. A claim waiting for its replicates
#: lets it go: it is held only by a thread that computes, so no thread waits on a waiting one.
UNIT = threading.Lock()


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


def _draw(blob: bytes, i: int) -> Any:
    """Replicate i of the pickled ``draw``, unpickled and run while this process computes
    nothing else (:data:`UNIT`): a mutant of another unit is never applied while its
    functions are looked up or run, and no other computation changes the thread limits."""
    import cloudpickle

    with UNIT:
        draw = cloudpickle.loads(blob)
        with single_thread(), quiet_progress():
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

    def _keep(self, i: int, value: Any) -> None:
        """Store replicate i; a store this worker cannot write to only loses the resume."""
        if self.cluster.store is not None:
            with suppress(OSError):
                self.cluster.store.put(self._key(i), (value,))

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
            import cloudpickle
            from distributed import as_completed

            step(indices[0] + len(got), total, what)
            blob = cloudpickle.dumps(draw)  # unpickled under UNIT where it runs (_draw)
            UNIT.release()  # while this unit waits, another may compute on this worker
            try:
                with worker_client() as client:
                    # replicate i prefers the same worker in every design of the claim, whose
                    # cached fits of replicate i its other statistics reuse
                    workers = sorted(client.scheduler_info()["workers"])
                    futures = {
                        client.submit(
                            _draw,
                            blob,
                            i,
                            key=f"replicate-{self._key(i)}",
                            pure=False,
                            workers=[workers[i % len(workers)]],
                            allow_other_workers=True,
                        ): i
                        for i in todo
                    }
                    for future, value in as_completed(futures, with_results=True):
                        i = futures[future]
                        got[i] = value
                        self._keep(i, value)
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
