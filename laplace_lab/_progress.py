"""Progress bars of the long-running entry points, with one switch to silence them all.

Every entry point that can run for minutes (``run_study``, ``replicate``, ``run_experiment``)
takes ``progress: bool = True`` and draws a tqdm bar (rate and ETA) on stderr.
:func:`quiet_progress` silences every bar inside it, whatever the keyword says: the command
line uses it where it prints its own progress (``laplace-lab check`` prints one line per
claim and draws one bar for the whole run, which a nested bar would overwrite).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = ["progress_bar", "quiet_progress"]

_QUIET: ContextVar[bool] = ContextVar("laplace_lab_quiet_progress", default=False)


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
    nested in it); use it as a context manager and call ``update(n)``."""
    from tqdm.auto import tqdm

    return tqdm(
        total=total,
        initial=initial,
        desc=desc,
        unit=unit,
        disable=not enabled or (_QUIET.get() and not outermost),
        smoothing=0.05,
        dynamic_ncols=True,
    )


@contextmanager
def quiet_progress() -> Iterator[None]:
    """Silence every progress bar of laplace-lab inside the ``with`` block."""
    token = _QUIET.set(True)
    try:
        yield
    finally:
        _QUIET.reset(token)
