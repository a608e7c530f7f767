"""The ``laplace-lab`` console script: a thin parser that collects each layer's subcommands.

``check`` (:mod:`laplace_lab.paper_checks.cli`), ``study`` (:mod:`laplace_lab.studies.cli`),
``bench`` (:mod:`laplace_lab.benchmarks.cli`) and ``validate``
(:mod:`laplace_lab.conformance.cli`). Building the parser imports no claim, study, benchmark
or conformance case; a mistake in the arguments is one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from laplace_lab.benchmarks.cli import add_bench_parser
from laplace_lab.conformance.cli import add_validate_parser
from laplace_lab.paper_checks.cli import add_check_parser
from laplace_lab.studies.cli import add_study_parser

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="laplace-lab",
        description="Verify the theory of Laplace approximations for neural networks.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    add_check_parser(sub)
    add_study_parser(sub)
    add_bench_parser(sub)
    add_validate_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``laplace-lab`` console script."""
    args = _parser().parse_args(argv)
    try:
        return args.handler(args)
    except (ValueError, TypeError) as exc:
        print(f"laplace-lab {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
