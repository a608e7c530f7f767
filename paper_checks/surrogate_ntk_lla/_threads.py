"""One torch and one BLAS thread for the small networks of these checks.

On a shared machine, torch's default intra-op threads spin against each other on networks
this small (docs/performance.md, "One torch thread for small networks").
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

from laplace_lab.paper_checks.verification.timing import single_thread

F = TypeVar("F", bound=Callable)


def one_thread(fn: F) -> F:
    """``fn`` run with BLAS and torch limited to one thread (restored afterwards)."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        with single_thread():
            return fn(*args, **kwargs)

    return run  # type: ignore[return-value]
