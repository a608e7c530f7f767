"""Progress inside the claims of ``laplace-lab check``: the loops' steps and the run's one bar.

A claim's loop over replicates, seeds or folds says how far it is with :func:`step`::

    from laplace_lab.paper_checks.verification.progress import step

    for i in range(n):
        step(i, n, "seeds")
        ...
    step(n, n, "seeds")

Outside ``check`` (tests, library use) :func:`step` only checks its arguments. Under ``check``
each claim and mutant runs with a receiver of its steps (in a worker process, they travel to
the parent on a queue), and :class:`Board` keeps, in the parent, what the run's one bar
shows: the claims and mutants that have run (the bar's count, with tqdm's rate and ETA) and
the ones running now with their loops, e.g. ``digits-scalla-predictive replicates 3/5``. The
framework's own replicate loops (:func:`.replicates.sequential`) and every silenced bar of a
study or experiment (:func:`laplace_lab._progress.progress_bar`) report their steps without
a call in the claim.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from laplace_lab._progress import step

__all__ = ["Board", "step"]

#: A claim (mutant ``None``) or one of its mutants: (claim key, mutant name or ``None``).
Item = tuple[str, str | None]


class Board:
    """What the run's bar shows, fed by the events of the claims and mutants.

    Parameters
    ----------
    bar : tqdm-like
        The run's bar, over every claim and mutant (``update``, ``set_postfix_str``,
        ``refresh``).
    every : float
        Seconds between two redraws of what runs (:meth:`ticking`).

    Notes
    -----
    An event is ``("start", key, mutant)``, ``("step", key, mutant, done, total, what)`` or
    ``("end", key, mutant)``. Events may come late (a worker's queue is not ordered with its
    results): an item counted already, by its end or by :meth:`ended`, is never counted
    twice nor shown running again, so the bar ends at claims plus mutants. This module
    imports nothing of the framework, so that every part of it may call :func:`step`.
    """

    def __init__(self, bar: Any, *, every: float = 0.2) -> None:
        self.bar, self.every = bar, every
        self.running: dict[Item, dict[str, tuple[int, int]]] = {}
        self.counted: set[Item] = set()
        self._lock = threading.Lock()
        self._changed = False
        self._drawn = -math.inf

    def event(self, said: tuple) -> None:
        """One event (class notes)."""
        kind, item = said[0], (said[1], said[2])
        with self._lock:
            if item in self.counted:
                return
            if kind == "start":
                self.running[item] = {}
            elif kind == "step":
                done, total, what = said[3:]
                loops = self.running.setdefault(item, {})
                if done >= total:
                    loops.pop(what, None)
                else:
                    loops[what] = (done, total)
            else:
                self._count(item)
            self._changed = True

    def ended(self, key: str, mutants: Sequence[str]) -> None:
        """The claim ``key`` and its ``mutants`` (their names) have run."""
        with self._lock:
            for item in [(key, None), *((key, m) for m in mutants)]:
                if item not in self.counted:
                    self._count(item)
                    self._changed = True

    def _count(self, item: Item) -> None:
        self.counted.add(item)
        self.running.pop(item, None)
        self.bar.update(1)

    def text(self) -> str:
        """The items running now, each with its loops: ``name what done/total``."""
        parts = []
        for (key, mutant), loops in self.running.items():
            name = key.rsplit("/", 1)[-1] + (f":{mutant}" if mutant else "")
            inner = ", ".join(f"{what} {d}/{t}".lstrip() for what, (d, t) in loops.items())
            parts.append(f"{name} {inner}".rstrip())
        return "; ".join(parts)

    def show(self) -> None:
        """Redraw the bar with what runs now, if it changed (or a second passed, so that the
        elapsed time and the ETA move)."""
        with self._lock:
            now = time.monotonic()
            if not self._changed and now - self._drawn < 1.0:
                return
            self.bar.set_postfix_str(self.text(), refresh=False)
            self.bar.refresh()
            self._changed, self._drawn = False, now

    @contextmanager
    def ticking(self) -> Iterator[Board]:
        """Redraw every ``every`` seconds (:meth:`show`) in a thread while the block runs, and
        once more at its end."""
        stop = threading.Event()

        def tick() -> None:
            while not stop.wait(self.every):
                self.show()

        thread = threading.Thread(target=tick, name="check-progress", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            stop.set()
            thread.join()
            self.show()
