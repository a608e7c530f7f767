"""Progress bars of the long-running entry points, with one switch to silence them all.

Every entry point that can run for minutes (``run_study``, ``replicate``, ``run_experiment``)
takes ``progress: bool = True`` and draws a tqdm bar (rate and ETA) on stderr.
:func:`quiet_progress` silences every bar inside it, whatever the keyword says: the command
line uses it where it prints its own progress (``laplace-lab check`` prints one line per
claim and draws one bar for the whole run, which a nested bar would overwrite).

A loop can also say how far it is with :func:`step`. Nothing hears it unless the caller set
a receiver with :func:`steps_to` (``laplace-lab check`` does, to name the claims running and
their inner progress on its one bar); inside :func:`steps_to`, every bar drawn with
``progress=True`` and not ``outermost`` reports its count there as well, so a study's
replications show on the check's bar even though their own bar is silenced.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from numbers import Integral
from typing import Any

__all__ = ["Steps", "progress_bar", "quiet_progress", "step", "steps_to"]

#: A receiver of steps: ``steps(done, total, what)``.
Steps = Callable[[int, int, str], None]

_QUIET: ContextVar[bool] = ContextVar("laplace_lab_quiet_progress", default=False)
_STEPS: ContextVar[Steps | None] = ContextVar("laplace_lab_progress_steps", default=None)


def progress_bar(
    *,
    total: int,
    desc: str,
    unit: str,
    enabled: bool = True,
    initial: int = 0,
    outermost: bool = False,
) -> Any:
    """A tqdm bar on stderr, or a disabled one (``enabled=False`` or inside
    :func:`quiet_progress`, unless ``outermost``: the one bar of a run that silences the bars
    nested in it); use it as a context manager and call ``update(n)``. Inside
    :func:`steps_to`, an enabled bar that is not ``outermost`` also reports its count there
    (``what`` is ``desc``), and its end as ``total`` of ``total``."""
    from tqdm.auto import tqdm

    bar = tqdm(
        total=total,
        initial=initial,
        desc=desc,
        unit=unit,
        disable=not enabled or (_QUIET.get() and not outermost),
        smoothing=0.05,
        dynamic_ncols=True,
    )
    steps = _STEPS.get()
    if steps is None or outermost or not enabled:
        return bar
    return _Reporting(bar, steps, total, initial, desc)


class _Reporting:
    """A tqdm bar whose count also goes to a receiver of steps (:func:`steps_to`)."""

    def __init__(self, bar: Any, steps: Steps, total: int, initial: int, what: str) -> None:
        self._bar, self._steps = bar, steps
        self._done, self._total, self._what = initial, total, what
        steps(initial, total, what)

    def update(self, n: int = 1) -> None:
        self._bar.update(n)
        self._done += n
        self._steps(self._done, self._total, self._what)

    def close(self) -> None:
        if self._done != self._total:
            self._done = self._total
            self._steps(self._total, self._total, self._what)
        self._bar.close()

    def __enter__(self) -> _Reporting:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._bar, name)


def _count(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an integer; got {type(value).__name__} {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be a non-negative integer; got {name}={value}")
    return int(value)


def step(done: int, total: int, what: str = "") -> None:
    """Say that a loop has done ``done`` of its ``total`` iterations (``what`` names them).

    Without a receiver (:func:`steps_to`) it does nothing but check its arguments; a loop
    says ``step(0, total, what)`` before its first iteration and ``step(total, total,
    what)`` after its last, which ends it for the receiver.
    """
    done, total = _count(done, "done"), _count(total, "total")
    if done > total:
        raise ValueError(f"done must be at most total={total}; got done={done}")
    if not isinstance(what, str):
        raise TypeError(f"what must be a str; got {type(what).__name__} {what!r}")
    steps = _STEPS.get()
    if steps is not None:
        steps(done, total, what)


@contextmanager
def steps_to(steps: Steps) -> Iterator[None]:
    """Send every :func:`step` inside the ``with`` block to ``steps(done, total, what)``."""
    token = _STEPS.set(steps)
    try:
        yield
    finally:
        _STEPS.reset(token)


@contextmanager
def quiet_progress() -> Iterator[None]:
    """Silence every progress bar of laplace-lab inside the ``with`` block."""
    token = _QUIET.set(True)
    try:
        yield
    finally:
        _QUIET.reset(token)
