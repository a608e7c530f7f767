"""The ``laplace-lab validate`` command: the conformance cases on one target.

    laplace-lab validate --target MODULE:CALLABLE [--case NAME ...] [--out DIR] [--seed S]
                         [--plugin MODULE] [--list]

Runs the registered conformance cases on the target and writes ``index.html``,
``report.md`` and ``conformance.json``; exits 1 if any case FAILs or ERRORs. ``--list``
prints the cases; ``--plugin`` imports a module that registers more. Building the parser
imports nothing of the suite and no torch.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["add_validate_parser"]


def _validate(args: argparse.Namespace) -> int:
    from laplace_lab._paths import writable_folder
    from laplace_lab._plugins import load_plugin
    from laplace_lab.conformance import cases, validate, write_validation_report

    for module in args.plugin or ():
        load_plugin(module, "conformance case plugin")
    if args.list:
        for name, case in cases().items():
            print(f"{name}: {case.capability} on {case.problem} — {case.description}")
        return 0
    if not args.target:
        raise ValueError("validate needs --target MODULE:CALLABLE (or --list)")
    writable_folder(args.out)  # refused now, not after every case has run

    def progress(result) -> None:
        print(
            f"{result.case.name}: {result.outcome.value} ({result.seconds:.1f} s) {result.summary}"
        )

    validation = validate(args.target, only=args.case, seed=args.seed, progress=progress)
    paths = write_validation_report(validation, args.out)
    print(validation.summary())
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    if not validation.passed:
        failed = [r.case.name for r in validation.results if r.reproducer]
        print(f"not conformant: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def add_validate_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``validate`` command to ``subparsers`` (the suite is imported when it runs)."""
    cmd = subparsers.add_parser(
        "validate", help="check a Laplace implementation against the conformance cases"
    )
    cmd.add_argument("--target", metavar="MODULE:CALLABLE", help="the implementation to check")
    cmd.add_argument(
        "--case",
        action="append",
        metavar="NAME",
        help="only this case or name prefix, e.g. predictive/ (repeatable)",
    )
    cmd.add_argument("--out", default="validation", help="report folder (default: validation)")
    cmd.add_argument("--seed", type=int, default=0, help="rebuilds every case (default: 0)")
    cmd.add_argument("--list", action="store_true", help="list the cases and exit")
    cmd.add_argument(
        "--plugin", action="append", metavar="MODULE", help="import a module of your own cases"
    )
    cmd.set_defaults(handler=_validate)
    return cmd
