"""The ``laplace-lab`` console script: a thin parser that collects each layer's subcommands.

``check`` (:mod:`laplace_lab.paper_checks.verification.cli`), ``study``
(:mod:`laplace_lab.studies.cli`), ``bench`` (:mod:`laplace_lab.benchmarks.cli`) and
``validate`` (:mod:`laplace_lab.conformance.cli`). This top layer wires the papers in: it hands
each engine the loader of :mod:`laplace_lab.papers` that registers the papers' claims, studies
or benchmarks, which the engines never import. Building the parser imports no claim, study,
benchmark or conformance case.

One convention for every subcommand: a handler returns an exit status or raises, and
:func:`main` turns what it raises into one line on stderr, ``laplace-lab <command>: error:
<message>``, with no traceback (``--traceback`` shows it):

- a mistake in the arguments or the inputs (argparse, ``ValueError``, ``TypeError``, a
  refused store, a plugin that does not import) exits with 2;
- a file that cannot be written or read (``OSError``) and any other failure exit with 1;
- Ctrl-C exits with 130 (``study run`` adds the replications stored and the command that
  resumes); a closed output pipe (``laplace-lab study status … | head``) ends
  quietly with 141, as a command killed by SIGPIPE does.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import NoReturn

from laplace_lab._progress import quiet_progress
from laplace_lab.benchmarks.cli import add_bench_parser
from laplace_lab.conformance.cli import add_validate_parser
from laplace_lab.paper_checks.verification.cli import add_check_parser
from laplace_lab.studies.cli import add_study_parser
from laplace_lab.studies.executors import ReplicationError
from laplace_lab.studies.store import StoreError

__all__ = ["main"]

#: Exit statuses of :func:`main`.
USAGE, FAILURE, INTERRUPTED, BROKEN_PIPE = 2, 1, 130, 141
#: Exceptions that mean "the arguments or inputs are wrong" (exit status 2).
_USER_ERRORS = (ValueError, TypeError, StoreError)


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error: the message and where to find the usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _claims(paper: str | None, names: Sequence[str]) -> None:
    from laplace_lab.papers import load_claims

    load_claims(paper, names)


def _paper_folder(paper: str) -> Path:
    from laplace_lab.papers import paper_folder

    return paper_folder(paper)


def _paper_names() -> list[str]:
    from laplace_lab.papers import papers

    return list(papers())


def _claim_keys() -> list[str]:
    from laplace_lab.papers import claim_index

    return list(claim_index())


def _studies() -> None:
    from laplace_lab.papers import load_studies

    load_studies()


def _benchmarks() -> None:
    from laplace_lab.papers import load_benchmarks

    load_benchmarks()


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="laplace-lab",
        description="Verify the theory of Laplace approximations for neural networks.",
    )
    parser.add_argument(
        "--traceback", action="store_true", help="on an error, show the full Python traceback"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    add_check_parser(
        sub,
        catalog=_claims,
        results_folder=_paper_folder,
        papers=_paper_names,
        claim_keys=_claim_keys,
    )
    add_study_parser(sub, catalog=_studies)
    add_bench_parser(sub, catalog=_benchmarks)
    add_validate_parser(sub)
    return parser


def _one_line(exc: BaseException) -> str:
    text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    return text or type(exc).__name__


def _status(exc: BaseException) -> tuple[int, str]:
    """The exit status and the message of an exception a handler raised."""
    if isinstance(exc, _USER_ERRORS):
        return USAGE, _one_line(exc)
    if isinstance(exc, ReplicationError):  # names the study, grid point and the cause
        return FAILURE, f"{_one_line(exc)} (rerun with --traceback for details)"
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        return FAILURE, f"{where}{exc.strerror or _one_line(exc)}"
    return FAILURE, f"{type(exc).__name__}: {_one_line(exc)} (rerun with --traceback for details)"


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``laplace-lab`` console script; returns the exit status."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # --help, or the one line of a mistake in the arguments
        return exc.code
    name = " ".join(
        p for p in ("laplace-lab", args.command, getattr(args, "study_command", None)) if p
    )
    # `check` prints one line per claim; nested progress bars would overwrite it.
    quiet = quiet_progress() if args.command == "check" else nullcontext()
    try:
        with quiet:
            status = args.handler(args)
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        _silence_stdout()
        return BROKEN_PIPE
    except KeyboardInterrupt as exc:  # a handler may say what was kept and how to go on
        said = f": {_one_line(exc)}" if str(exc) else ""
        print(f"{name}: interrupted{said}", file=sys.stderr)
        return INTERRUPTED
    except Exception as exc:
        if args.traceback:
            raise
        status, message = _status(exc)
        print(f"{name}: error: {message}", file=sys.stderr)
        return status


if __name__ == "__main__":
    raise SystemExit(main())
