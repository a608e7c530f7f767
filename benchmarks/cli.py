"""``laplace-lab bench [--full] [--only NAME ...] [--threads N] [--plugin MODULE]``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

__all__ = ["add_bench_parser"]


def _bench(args: argparse.Namespace) -> int:
    from laplace_lab._checks import integer
    from laplace_lab.benchmarks._harness import (
        benchmarks,
        format_table,
        load_plugin,
        run_benchmarks,
    )

    args.catalog()
    for module in args.plugin or ():
        load_plugin(module)
    known = benchmarks()
    for name in args.only or ():
        if name not in known:
            raise ValueError(f"unknown benchmark {name!r}; known: {', '.join(known)}")
    threads = integer(args.threads, "--threads", low=0) or None
    print(f"BLAS threads: {threads or 'unlimited'}", flush=True)
    rows, errors = run_benchmarks(args.only, full=args.full, threads=threads)
    if rows:
        print(format_table(rows))
        met = sum(r.passed for r in rows)
        print(f"{met}/{len(rows)} targets met (ratio = baseline / ours, measured in this run)")
    for err in errors:  # "name:\n<traceback>": the last line is the exception
        name, _, trace = err.partition(":\n")
        detail = trace if args.traceback else trace.strip().splitlines()[-1]
        print(f"laplace-lab bench: error: benchmark {name} failed: {detail}", file=sys.stderr)
    return 1 if errors else 0


def _nothing() -> None:
    return None


def add_bench_parser(
    subparsers: argparse._SubParsersAction, *, catalog: Callable[[], None] = _nothing
) -> argparse.ArgumentParser:
    """Add the ``bench`` command to ``subparsers``; ``catalog()`` registers the benchmarks
    that live outside this package (the papers') before they are listed."""
    bench = subparsers.add_parser(
        "bench", help="run the benchmarks and print baseline/ours ratios"
    )
    bench.set_defaults(catalog=catalog)
    bench.add_argument("--full", action="store_true", help="the large sizes (slow)")
    bench.add_argument(
        "--only",
        nargs="+",
        action="extend",
        metavar="NAME",
        help="only these benchmarks (e.g. greedy lanczos)",
    )
    bench.add_argument(
        "--threads",
        type=int,
        default=1,
        help="BLAS threads (default 1: stable ratios on a shared machine; 0: no limit)",
    )
    bench.add_argument(
        "--plugin", action="append", metavar="MODULE", help="import a module of benchmarks"
    )
    bench.set_defaults(handler=_bench)
    return bench
