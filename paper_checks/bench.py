"""``laplace-lab bench``: discover ``benchmarks/bench_<topic>.py``, run them, print ratios.

Convention: each benchmark module defines ``run(full: bool = False) -> list[dict]``; every
row has at least ``name``, ``ours_s``, ``baseline``, ``baseline_s``, ``ratio``, ``target``
(e.g. ">= 50x"), ``passed`` (bool) and optionally ``note``. Default sizes are small (the
whole default bench takes ≤ 2 min); ``--full`` uses the sizes of the issues.
"""

from __future__ import annotations

import importlib.util
import math
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["benchmark_dir", "discover", "format_table", "main_for", "run_benchmarks", "timed"]

REQUIRED = ("name", "ours_s", "baseline", "baseline_s", "ratio", "target", "passed")


def benchmark_dir(start: Path | None = None) -> Path:
    """``benchmarks/`` under the current directory, else under the repository root."""
    here = Path.cwd() if start is None else start
    if (here / "benchmarks").is_dir():
        return here / "benchmarks"
    root = Path(__file__).resolve().parents[1] / "benchmarks"
    if root.is_dir():
        return root
    raise FileNotFoundError(f"no benchmarks/ folder under {here} or {root.parent}")


def discover(folder: Path, only: str | None = None) -> list[Path]:
    """The ``bench_*.py`` files of ``folder`` (``only``: just ``bench_<only>.py``)."""
    files = sorted(folder.glob("bench_*.py"))
    if only is not None:
        files = [f for f in files if f.stem == f"bench_{only}"]
        if not files:
            raise ValueError(f"no benchmark bench_{only}.py in {folder}")
    return files


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"benchmarks.{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(fn: Callable[[], Any], *, repeat: int = 1) -> tuple[Any, float]:
    """(result of the last call, the best wall time in seconds over ``repeat`` calls)."""
    best, out = math.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return out, best


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, float):
        return "-" if math.isnan(value) else f"{value:.3g}"
    return str(value)


def format_table(rows: Sequence[dict]) -> str:
    """A plain-text table of benchmark rows (ratio = baseline / ours unless noted)."""
    cols = ["name", "ours_s", "baseline", "baseline_s", "ratio", "target", "passed", "note"]
    cells = [[_fmt(r.get(c, "")) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(lines)


def run_benchmarks(
    folder: Path, *, full: bool = False, only: str | None = None, threads: int | None = 1
) -> tuple[list[dict], list[str]]:
    """Run every discovered benchmark; return (rows, errors).

    ``threads`` limits the BLAS thread pool (threadpoolctl) for the whole run: on a shared
    machine a contended multi-threaded OpenBLAS is erratic (a 300×300 Cholesky measured
    0.4 s on 2 threads vs 0.3 ms on 1), which would make ratios noise. ``None``: no limit.
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=threads, user_api="blas"):
        return _run_all(folder, full=full, only=only)


def _run_all(folder: Path, *, full: bool, only: str | None) -> tuple[list[dict], list[str]]:
    rows: list[dict] = []
    errors: list[str] = []
    for path in discover(folder, only):
        print(f"running {path.name} ({'full' if full else 'small'} sizes) ...", flush=True)
        try:
            out = _load(path).run(full=full)
            for row in out:
                missing = [k for k in REQUIRED if k not in row]
                if missing:
                    raise ValueError(f"{path.name}: row {row.get('name')} lacks {missing}")
            rows.extend(out)
        except Exception:
            errors.append(f"{path.name}:\n{traceback.format_exc()}")
    return rows, errors


def main_for(run: Callable[..., list[dict]], argv: Sequence[str] | None = None) -> int:
    """Entry point for ``python benchmarks/bench_<topic>.py [--full]``."""
    from threadpoolctl import threadpool_limits

    args = sys.argv[1:] if argv is None else list(argv)
    with threadpool_limits(limits=1, user_api="blas"):
        rows = run(full="--full" in args)
    print(format_table(rows))
    return 0
