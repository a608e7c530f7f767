"""The ``laplace-lab validate`` command: the conformance cases on one target, or on all.

    laplace-lab validate --target LIBRARY|MODULE:CALLABLE [--case NAME ...] [--out DIR]
                         [--seed S] [--plugin MODULE]
    laplace-lab validate --scoreboard [--library NAME ...] [--case NAME ...] [--out DIR] [--seed S]
    laplace-lab validate --versions [VERSION ...] [--out DIR] [--seed S] [--venvs DIR]
    laplace-lab validate --list

``--target`` names a library of :data:`~laplace_lab.conformance.libraries.LIBRARIES`
(``laplace-lab``, ``laplace-torch``, ``curvlinops``) or any ``MODULE:CALLABLE``; it runs the
registered conformance cases on it, writes ``index.html``, ``report.md`` and
``conformance.json`` and exits 1 if any case FAILs or ERRORs. A library that is not
installed is one line saying how to install it (exit 2). ``--scoreboard`` runs every
installed library (or the ``--library`` ones) and writes the scoreboard
(:mod:`laplace_lab.conformance.scoreboard`): it exits 0 once written, the libraries' failures
being its content. ``--versions`` builds one virtual environment per laplace-torch version, runs
the laplace-torch scoreboard in each and writes ``versions.md`` and ``versions.json``
(:mod:`laplace_lab.conformance.versions`; it needs the package registry). ``--list`` prints the
cases; ``--plugin`` imports a module that registers more. An unknown ``--case`` (with the
closest names) and a target that cannot take the contract's arguments are refused in one
line before any case runs. Building the parser imports nothing of the suite and no torch.
"""

from __future__ import annotations

import argparse
import difflib
import inspect
import sys
from typing import Any

__all__ = ["add_validate_parser"]


def _validate(args: argparse.Namespace) -> int:
    from laplace_lab._paths import writable_folder
    from laplace_lab._plugins import load_plugin
    from laplace_lab.conformance import cases, load_target, validate, write_validation_report
    from laplace_lab.conformance.libraries import target_spec

    for module in args.plugin or ():
        load_plugin(module, "conformance case plugin")
    if args.list:
        for name, case in cases().items():
            print(f"{name}: {case.capability} on {case.problem} — {case.description}")
        return 0
    if args.versions is not None:
        return _versions(args)
    if args.venvs:
        raise ValueError("--venvs goes with --versions")
    if args.library and not args.scoreboard:
        raise ValueError("--library goes with --scoreboard; --target names one library")
    if args.no_reproducers and not args.scoreboard:
        raise ValueError("--no-reproducers goes with --scoreboard")
    if args.scoreboard:
        return _scoreboard(args)
    if not args.target:
        raise ValueError("validate needs --target LIBRARY or MODULE:CALLABLE (or --scoreboard)")
    spec = target_spec(args.target)  # a library not installed is refused here
    _known_cases(args.case, list(cases()))
    out = writable_folder(args.out or "validation")  # refused now, not after every case
    target = load_target(spec)
    _contract_signature(target)

    def progress(result) -> None:
        print(
            f"{result.case.name}: {result.outcome.value} ({result.seconds:.1f} s) {result.summary}"
        )

    validation = validate(target, only=args.case, seed=args.seed, progress=progress)
    paths = write_validation_report(validation, out)
    print(validation.summary())
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    if not validation.passed:
        failed = [r.case.name for r in validation.results if r.reproducer]
        print(f"not conformant: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def _scoreboard(args: argparse.Namespace) -> int:
    from laplace_lab._paths import writable_folder
    from laplace_lab.conformance import cases
    from laplace_lab.conformance.scoreboard import run_scoreboard, write_scoreboard

    if args.target:
        raise ValueError("--scoreboard runs every installed library; drop --target")
    _known_cases(args.case, list(cases()))
    out = writable_folder(args.out or "scoreboard")
    if args.library:
        from laplace_lab.conformance.libraries import get_library

        for name in args.library:
            get_library(name)  # an unknown or missing library is refused here

    def progress(library: str, result) -> None:
        print(f"{library} {result.case.name}: {result.outcome.value} ({result.seconds:.1f} s)")

    board = run_scoreboard(args.library, seed=args.seed, only=args.case, progress=progress)
    paths = write_scoreboard(board, out, reproducers=not args.no_reproducers)
    for run in board.runs:
        print(f"{run.validation.summary()} ({run.seconds:.1f} s)")
    for library in board.not_installed:
        print(f"not installed: {library.name} ({library.install})")
    print(
        f"wrote {paths['html']}, {paths['markdown']}, {paths['json']} and "
        f"{len(paths['reproducers'])} reproducers"
    )
    return 0


def _versions(args: argparse.Namespace) -> int:
    from laplace_lab._paths import writable_folder
    from laplace_lab.conformance.versions import run_versions, write_versions

    if args.target or args.scoreboard or args.case or args.library:
        raise ValueError(
            "--versions runs every laplace-torch case in each environment; drop --target, "
            "--scoreboard, --case and --library"
        )
    out = writable_folder(args.out or "versions")
    board = run_versions(args.versions or None, seed=args.seed, venvs=args.venvs, log=print)
    paths = write_versions(board, out)
    print(f"wrote {paths['markdown']} and {paths['json']}")
    return 0


def _known_cases(names: list[str] | None, known: list[str]) -> None:
    """Refuse a ``--case`` that is neither a case nor a prefix of one, naming the closest."""
    for name in names or ():
        if any(case.startswith(name) for case in known):
            continue
        close = difflib.get_close_matches(name, known, n=5, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ValueError(
            f"--case {name!r} is no case and no prefix of one{hint} (all {len(known)} cases: "
            "laplace-lab validate --list)"
        )


#: The arguments every case passes to the target (the contract's required function).
_CONTRACT = (
    "predictive_variance(model, X_train, y_train, X_test, *, likelihood, "
    "prior_precision, noise_var, subset=None)"
)


def _contract_signature(target: Any) -> None:
    """Refuse a target whose function cannot take the arguments of the contract
    (:mod:`laplace_lab.conformance.contract`); one without a readable signature passes."""
    try:
        signature = inspect.signature(target.predictive_variance)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(
            None, None, None, None, likelihood=None, prior_precision=None, noise_var=None
        )
    except TypeError as err:
        raise TypeError(
            f"--target {target.name!r} must be a callable {_CONTRACT} (docs/validation.md); "
            f"its signature {signature} cannot take these arguments ({err})"
        ) from None


def add_validate_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``validate`` command to ``subparsers`` (the suite is imported when it runs)."""
    cmd = subparsers.add_parser(
        "validate", help="check a Laplace implementation against the conformance cases"
    )
    from laplace_lab.conformance.libraries import LIBRARIES  # names only: no library imported

    cmd.add_argument(
        "--target",
        metavar="LIBRARY|MODULE:CALLABLE",
        help=f"the implementation: {', '.join(LIBRARIES)} (the libraries the scoreboard "
        "scores) or MODULE:CALLABLE",
    )
    cmd.add_argument(
        "--scoreboard",
        action="store_true",
        help="run every installed library and write the scoreboard (default --out scoreboard)",
    )
    cmd.add_argument(
        "--no-reproducers",
        action="store_true",
        help="with --scoreboard: write the pages only, no reproducer files",
    )
    cmd.add_argument(
        "--library",
        action="append",
        metavar="NAME",
        help="with --scoreboard: only this library (repeatable; default: all installed)",
    )
    cmd.add_argument(
        "--versions",
        nargs="*",
        metavar="VERSION",
        default=None,
        help="build a virtual environment per laplace-torch version (default: all known) "
        "and write versions.md and versions.json (default --out versions; needs the registry)",
    )
    cmd.add_argument(
        "--venvs",
        default=None,
        metavar="DIR",
        help="with --versions: the folder of the cached environments (default: .venvs)",
    )
    cmd.add_argument(
        "--case",
        action="append",
        metavar="NAME",
        help="only this case or name prefix, e.g. predictive/ (repeatable)",
    )
    cmd.add_argument(
        "--out", default=None, help="report folder (default: validation, or scoreboard)"
    )
    cmd.add_argument("--seed", type=int, default=0, help="rebuilds every case (default: 0)")
    cmd.add_argument("--list", action="store_true", help="list the cases and exit")
    cmd.add_argument(
        "--plugin", action="append", metavar="MODULE", help="import a module of your own cases"
    )
    cmd.set_defaults(handler=_validate)
    return cmd
