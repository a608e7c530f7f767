"""The ``laplace-lab`` command line.

``laplace-lab check [--paper NAME] [--quick | --full] [--out DIR] [--seed S]`` runs every
registered paper claim and writes the verification report (``index.html``, ``report.md``,
``verdicts.json``). It exits 1 if a claim check itself fails (an ERROR verdict).
``laplace-lab bench [--full] [--only TOPIC] [--threads N]`` runs ``benchmarks/bench_*.py``
and prints speed-up ratios.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from laplace_lab.paper_checks.registry import Context, Status, all_claims, papers, run_claim
from laplace_lab.paper_checks.report import Outcome, write_report

__all__ = ["main"]


def _check(args: argparse.Namespace) -> int:
    out_dir = Path(args.out)
    ctx = Context(full=args.full, seed=args.seed, figure_dir=out_dir / "figures")
    claims = all_claims(args.paper)
    outcomes = []
    for i, item in enumerate(claims, 1):
        print(f"[{i}/{len(claims)}] {item.key} ({item.location}) ...", end=" ", flush=True)
        start = time.perf_counter()
        verdict = run_claim(item, ctx)
        seconds = time.perf_counter() - start
        print(f"{verdict.status.value} in {seconds:.1f} s", flush=True)
        outcomes.append(Outcome(item, verdict, seconds))
    paths = write_report(outcomes, out_dir, full=args.full, seed=args.seed)
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    errors = [o for o in outcomes if o.verdict.status is Status.ERROR]
    for o in errors:
        print(f"ERROR in {o.claim.key}:\n{o.verdict.evidence}", file=sys.stderr)
    return 1 if errors else 0


def _bench(args: argparse.Namespace) -> int:
    from laplace_lab.paper_checks.bench import benchmark_dir, format_table, run_benchmarks

    threads = None if args.threads == 0 else args.threads
    print(f"BLAS threads: {threads or 'unlimited'}", flush=True)
    rows, errors = run_benchmarks(benchmark_dir(), full=args.full, only=args.only, threads=threads)
    if rows:
        print(format_table(rows))
        met = sum(bool(r["passed"]) for r in rows)
        print(f"{met}/{len(rows)} targets met (ratios measured side by side in this run)")
    for err in errors:
        print(f"ERROR in {err}", file=sys.stderr)
    return 1 if errors else 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="laplace-lab",
        description="Verify the theory of Laplace approximations for neural networks.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="run the paper claims and write the report")
    check.add_argument("--paper", choices=papers(), help="only the claims of this paper")
    mode = check.add_mutually_exclusive_group()
    mode.add_argument("--quick", dest="full", action="store_false", help="quick mode (default)")
    mode.add_argument("--full", dest="full", action="store_true", help="the papers' full sizes")
    check.add_argument("--out", default="report", help="report folder (default: report)")
    check.add_argument("--seed", type=int, default=0, help="base seed (default: 0)")
    check.set_defaults(handler=_check, full=False)
    bench = sub.add_parser("bench", help="run benchmarks/bench_*.py and print speed-up ratios")
    bench.add_argument("--full", action="store_true", help="the issues' full sizes (slow)")
    bench.add_argument("--only", metavar="TOPIC", help="only benchmarks/bench_TOPIC.py")
    bench.add_argument(
        "--threads",
        type=int,
        default=1,
        help="BLAS threads (default 1: stable ratios on a shared machine; 0: no limit)",
    )
    bench.set_defaults(handler=_bench)
    __import__("laplace_lab.studies.cli", fromlist=["add_study_parser"]).add_study_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``laplace-lab`` console script."""
    args = _parser().parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    raise SystemExit(main())
