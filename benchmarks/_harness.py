"""The benchmark registry and harness: rows, timing, the table and the runner."""

from __future__ import annotations

import importlib
import math
import pkgutil
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from laplace_lab._plugins import load_plugin as _load_plugin

__all__ = [
    "BenchmarkSkipped",
    "Row",
    "benchmark",
    "benchmarks",
    "format_table",
    "load_plugin",
    "main_for",
    "run_benchmarks",
    "timed",
]


@dataclass(frozen=True)
class Row:
    """One side-by-side measurement.

    Parameters
    ----------
    name : str
        What is compared, with the sizes.
    ours, baseline_value : float
        The measured cost of ours and of the baseline, in ``unit`` (seconds, bytes, …).
    baseline : str
        What the baseline is.
    min_ratio : float
        The target: ``ratio = baseline_value / ours`` must be at least this. A target of
        "within 3× of the baseline" is ``min_ratio = 1/3``.
    correct : bool
        Whether ours returned the right answer (identical S, equal J, …); a row whose
        answer is wrong fails whatever its speed.
    unit : str
        ``"s"`` (default) or ``"B"``.
    note : str
        Context: accuracy, operation counts, a time breakdown.

    Examples
    --------
    Ours in 0.5 s against a baseline in 2 s: the ratio is 2 / 0.5 = 4, which meets a target of
    3×.

    >>> from laplace_lab.benchmarks import Row
    >>> row = Row("solve, p = 1000", 0.5, "numpy.linalg.solve", 2.0, min_ratio=3.0)
    >>> row.ratio, row.passed
    (4.0, True)
    """

    name: str
    ours: float
    baseline: str
    baseline_value: float
    min_ratio: float
    correct: bool = True
    unit: str = "s"
    note: str = ""

    @property
    def ratio(self) -> float:
        """baseline / ours: above 1 means ours is better."""
        if not self.ours > 0:
            return math.nan
        return self.baseline_value / self.ours

    @property
    def passed(self) -> bool:
        """The answer is right and the ratio meets the target."""
        return bool(self.correct and self.ratio >= self.min_ratio)


class BenchmarkSkipped(Exception):
    """Raised by a benchmark that cannot run here (e.g. no CUDA device); the message says why."""


_REGISTRY: dict[str, Callable[[bool], list[Row]]] = {}


def benchmark(name: str) -> Callable[[Callable[..., list[Row]]], Callable[..., list[Row]]]:
    """Register ``run(full: bool = False) -> list[Row]`` under ``name``."""

    def register(run: Callable[..., list[Row]]) -> Callable[..., list[Row]]:
        old = _REGISTRY.get(name)
        if old is not None and old.__qualname__ != run.__qualname__:
            raise ValueError(f"a different benchmark named {name!r} is already registered")
        _REGISTRY[name] = run
        return run

    return register


def _load_package() -> None:
    package = importlib.import_module("laplace_lab.benchmarks")
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("bench_"):
            importlib.import_module(f"{package.__name__}.{info.name}")


def load_plugin(module: str) -> None:
    """Import a user module that registers benchmarks (``--plugin MODULE``)."""
    _load_plugin(module, "benchmark plugin")


def benchmarks() -> dict[str, Callable[..., list[Row]]]:
    """Every registered benchmark by name (the shipped ones are loaded first)."""
    _load_package()
    return dict(sorted(_REGISTRY.items()))


def timed(
    fn: Callable[[], Any], *, repeat: int = 1, clock: Callable[[], float] = time.perf_counter
) -> tuple[Any, float]:
    """(result of the last call, the best time in seconds over ``repeat`` calls): wall time,
    or the process's CPU time with ``clock=time.process_time`` (every thread's)."""
    best, out = math.inf, None
    for _ in range(repeat):
        start = clock()
        out = fn()
        best = min(best, clock() - start)
    return out, best


def _fmt(value: Any, unit: str = "") -> str:
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        if unit == "B":
            return f"{value / 2**20:.3g} MiB"
        return f"{value:.3g}"
    return str(value)


def format_table(rows: Sequence[Row]) -> str:
    """A plain-text table; the ratio column is always baseline / ours (> 1: ours better)."""
    head = ["name", "ours", "baseline", "baseline value", "ratio", "target", "passed", "note"]
    cells = [
        [
            r.name,
            _fmt(r.ours, r.unit) + (" s" if r.unit == "s" else ""),
            r.baseline,
            _fmt(r.baseline_value, r.unit) + (" s" if r.unit == "s" else ""),
            f"{_fmt(r.ratio)}x",
            f">= {r.min_ratio:.3g}x" + ("" if r.correct else ", wrong answer"),
            _fmt(r.passed),
            r.note,
        ]
        for r in rows
    ]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(head)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(head, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(lines)


def run_benchmarks(
    names: Sequence[str] | None = None, *, full: bool = False, threads: int | None = 1
) -> tuple[list[Row], list[str]]:
    """Run the named benchmarks (all when None); return (rows, errors).

    ``threads`` limits the BLAS thread pool (threadpoolctl) for the whole run: on a shared
    machine a contended multi-threaded OpenBLAS is erratic, which would make ratios noise.
    ``None``: no limit.
    """
    from threadpoolctl import threadpool_limits

    known = benchmarks()
    names = list(known) if names is None else list(names)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown benchmark {unknown[0]!r}; known: {', '.join(known)}")
    rows: list[Row] = []
    errors: list[str] = []
    with threadpool_limits(limits=threads, user_api="blas"):
        for name in names:
            print(f"running {name} ({'full' if full else 'small'} sizes) ...", flush=True)
            try:
                out = list(known[name](full=full))
                bad = [type(r).__name__ for r in out if not isinstance(r, Row)]
                if bad:
                    raise TypeError(f"benchmark {name} returned {bad[0]}, not Row")
                rows.extend(out)
            except BenchmarkSkipped as skip:
                print(f"skipped {name}: {skip}", flush=True)
            except Exception:
                errors.append(f"{name}:\n{traceback.format_exc()}")
    return rows, errors


def main_for(run: Callable[..., list[Row]], argv: Sequence[str] | None = None) -> int:
    """Entry point for ``python -m laplace_lab.benchmarks.bench_<topic> [--full]``."""
    import sys

    from threadpoolctl import threadpool_limits

    args = sys.argv[1:] if argv is None else list(argv)
    with threadpool_limits(limits=1, user_api="blas"):
        rows = run(full="--full" in args)
    print(format_table(rows))
    return 0
