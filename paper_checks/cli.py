"""``laplace-lab check [--paper NAME] [--quick | --full] [--out DIR] [--seed S] [--plugin M]``.

Runs every registered paper claim and writes the verification report (``index.html``,
``report.md``, ``verdicts.json``). Exits 1 if a claim check itself fails (an ERROR verdict).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

__all__ = ["add_check_parser"]


def _check(args: argparse.Namespace) -> int:
    from laplace_lab._plugins import load_plugin
    from laplace_lab.paper_checks.registry import (
        Context,
        Status,
        all_claims,
        run_claim,
        run_mutant,
    )
    from laplace_lab.paper_checks.report import Outcome, write_report

    for module in args.plugin or ():
        load_plugin(module, "claim plugin")
    claims = all_claims(args.paper)
    out_dir = Path(args.out)
    ctx = Context(full=args.full, seed=args.seed, figure_dir=out_dir / "figures")
    outcomes = []
    for i, item in enumerate(claims, 1):
        print(f"[{i}/{len(claims)}] {item.key} ({item.location}) ...", end=" ", flush=True)
        start = time.perf_counter()
        verdict = run_claim(item, ctx)
        seconds = time.perf_counter() - start
        chosen = [m for m in item.mutants if args.mutants == "all" or not m.heavy]
        mutants = () if args.mutants == "none" else tuple(run_mutant(item, m, ctx) for m in chosen)
        power = (
            f"; mutants caught {sum(m.caught for m in mutants)}/{len(mutants)}" if mutants else ""
        )
        print(f"{verdict.status.value} in {seconds:.1f} s{power}", flush=True)
        outcomes.append(Outcome(item, verdict, seconds, mutants))
    paths = write_report(outcomes, out_dir, full=args.full, seed=args.seed)
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    errors = [o for o in outcomes if o.verdict.status is Status.ERROR]
    for o in errors:  # one line each; the traceback is in the report
        last = (o.verdict.evidence.strip().splitlines() or ["no evidence"])[-1]
        print(
            f"laplace-lab check: error: {o.claim.key}: {last} (see {paths['markdown']})",
            file=sys.stderr,
        )
    return 1 if errors else 0


def add_check_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``check`` command to ``subparsers`` (claims are imported only when it runs)."""
    check = subparsers.add_parser("check", help="run the paper claims and write the report")
    check.add_argument("--paper", help="only the claims of this paper (e.g. fsp-laplace)")
    mode = check.add_mutually_exclusive_group()
    mode.add_argument("--quick", dest="full", action="store_false", help="quick mode (default)")
    mode.add_argument("--full", dest="full", action="store_true", help="the papers' full sizes")
    check.add_argument("--out", default="report", help="report folder (default: report)")
    check.add_argument("--seed", type=int, default=0, help="base seed (default: 0)")
    check.add_argument(
        "--plugin", action="append", metavar="MODULE", help="import a module of your own claims"
    )
    check.add_argument(
        "--mutants",
        choices=("none", "light", "all"),
        default="light",
        help="run each claim under its mutants to measure its power (default: light ones)",
    )
    check.set_defaults(handler=_check, full=False)
    return check
