"""``laplace-lab study list | run | status | plot | export``.

::

    laplace-lab study list
    laplace-lab study run NAME [--reps R] [--grid key=v1,v2 ...] [--full]
                               [--executor serial|process|dask] [--workers W]
                               [--scheduler tcp://host:port] [--store PATH] [--seed S]
    laplace-lab study status NAME [--store PATH] [--full]
    laplace-lab study plot NAME [--store PATH] [--out FILE.png]
    laplace-lab study export NAME [--store PATH] [--out FILE.csv] [--summary]

``run`` resumes: running the same command again after a crash completes the missing
replications only. ``--plugin MODULE`` imports a module that registers extra studies.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from laplace_lab.studies.executors import EXECUTORS
from laplace_lab.studies.registry import get_study, load_plugin, studies
from laplace_lab.studies.runner import default_store_path, plan, run_study
from laplace_lab.studies.seeding import params_key
from laplace_lab.studies.spec import Study, parse_grid_overrides
from laplace_lab.studies.store import Store, StoreError

__all__ = ["add_study_parser"]


def _study(args: argparse.Namespace) -> Study:
    for module in args.plugin or ():
        load_plugin(module)
    return get_study(args.name)


def _store_path(args: argparse.Namespace, study: Study) -> Path:
    return Path(args.store) if args.store else default_store_path(study, full=args.full)


def _existing(args: argparse.Namespace) -> tuple[Study, Path, Store]:
    """The study and its existing store (a missing store is a StoreError)."""
    study = _study(args)
    path = _store_path(args, study)
    return study, path, Store(path, study=study.name, create=False)


def _print_summary(study: Study, store: Store) -> None:
    from laplace_lab.studies.summary import summarise

    summary = summarise(study, store.rows())
    for s in summary:
        point = ", ".join(f"{k}={s.params[k]}" for k in study.grid if k in s.params)
        print(
            f"  {point} | {s.metric}: {s.mean:.6g} "
            f"[{s.low:.4g}, {s.high:.4g}] ({s.interval}, n={s.n})"
        )
    if study.report is not None and summary:
        print(study.report(summary))


def _list(args: argparse.Namespace) -> int:
    for module in args.plugin or ():
        load_plugin(module)
    for name, study in studies().items():
        points = len(plan(study, replications=1))
        full_points = len(plan(study, replications=1, full=True))
        print(
            f"{name}: {points} grid points x {study.replications} reps "
            f"(--full: {full_points} x {study.full_replications})"
        )
        print(f"    {study.description.strip().splitlines()[0]}")
    return 0


def _run(args: argparse.Namespace) -> int:
    study = _study(args)
    grid = parse_grid_overrides(study.grid_for(full=args.full), args.grid or [])
    executor = args.executor or ("dask" if args.scheduler else "serial")
    report = run_study(
        study,
        store=_store_path(args, study),
        grid=grid,
        replications=args.reps,
        full=args.full,
        executor=executor,
        workers=args.workers,
        scheduler=args.scheduler,
        seed=args.seed,
        progress=not args.no_progress,
    )
    print(
        f"{study.name}: {report.ran} replications run, {report.already_done} already in "
        f"{report.store} ({report.planned} planned) in {report.seconds:.1f} s"
    )
    with Store(report.store, study=study.name, create=False) as db:
        _print_summary(study, db)
    return 0


def _status(args: argparse.Namespace) -> int:
    study, path, store = _existing(args)
    with store as db:
        meta = db.meta
        done = db.done()
        todo = plan(study, full=args.full)
        missing = [(p, r) for p, r in todo if (params_key(p), r) not in done]
        print(
            f"{study.name} store {path}: {len(done)} replications stored "
            f"(schema {meta['schema_version']}, code {meta['code_version']}, "
            f"seed {meta['seed']}, created {meta['created']})"
        )
        grid_name = "full" if args.full else "default"
        print(f"  {grid_name} grid: {len(todo) - len(missing)}/{len(todo)} done")
        if meta["code_version"] != study.code_version:
            print(f"  note: the current code version is {study.code_version}")
        _print_summary(study, db)
    return 0


def _plot(args: argparse.Namespace) -> int:
    from laplace_lab.studies.output import plot_summary
    from laplace_lab.studies.summary import summarise

    study, path, store = _existing(args)
    with store as db:
        summary = summarise(study, db.rows())
    out = Path(args.out) if args.out else path.with_suffix(".png")
    plot_summary(study, summary, out)
    print(f"wrote {out}")
    return 0


def _export(args: argparse.Namespace) -> int:
    from laplace_lab.studies.output import export_rows_csv, export_summary_csv
    from laplace_lab.studies.summary import summarise

    study, path, store = _existing(args)
    with store as db:
        if args.summary:
            out = Path(args.out) if args.out else path.with_name(path.stem + "-summary.csv")
            export_summary_csv(study, summarise(study, db.rows()), out)
        else:
            out = Path(args.out) if args.out else path.with_suffix(".csv")
            export_rows_csv(study, db.rows(), out)
    print(f"wrote {out}")
    return 0


def _guard(handler):
    """Turn the expected user errors into one clear line on stderr and exit status 2."""

    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except (StoreError, ValueError, TypeError) as exc:
            print(f"laplace-lab study: error: {exc}", file=sys.stderr)
            return 2

    return run


def add_study_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``study`` command (list, run, status, plot, export) to ``subparsers``."""
    study = subparsers.add_parser("study", help="run Monte Carlo studies (list, run, ...)")
    sub = study.add_subparsers(dest="study_command", required=True)

    def common(p: argparse.ArgumentParser, *, name: bool = True) -> None:
        if name:
            p.add_argument("name", help="the study's name (see `laplace-lab study list`)")
            p.add_argument("--store", help="SQLite store (default: results/NAME.sqlite)")
            p.add_argument("--full", action="store_true", help="the full grid and store")
        p.add_argument(
            "--plugin", action="append", metavar="MODULE", help="import a module of studies"
        )

    p = sub.add_parser("list", help="list the registered studies")
    common(p, name=False)
    p.set_defaults(handler=_guard(_list))

    p = sub.add_parser("run", help="run or resume a study")
    common(p)
    p.add_argument("--reps", type=int, help="replications per grid point")
    p.add_argument(
        "--grid", nargs="+", metavar="KEY=V1,V2", help="replace grid values, e.g. N=10,100"
    )
    p.add_argument("--executor", choices=EXECUTORS, help="default: serial (dask if --scheduler)")
    p.add_argument("--workers", type=int, help="worker processes (default: CPU count)")
    p.add_argument("--scheduler", metavar="ADDR", help="Dask scheduler, e.g. tcp://host:8786")
    p.add_argument("--seed", type=int, default=0, help="base seed (default: 0)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(handler=_guard(_run))

    p = sub.add_parser("status", help="replications stored and the summary")
    common(p)
    p.set_defaults(handler=_guard(_status))

    p = sub.add_parser("plot", help="plot the summary to PNG")
    common(p)
    p.add_argument("--out", help="PNG file (default: next to the store)")
    p.set_defaults(handler=_guard(_plot))

    p = sub.add_parser("export", help="export replications (or --summary) to CSV")
    common(p)
    p.add_argument("--out", help="CSV file (default: next to the store)")
    p.add_argument("--summary", action="store_true", help="one line per grid point and metric")
    p.set_defaults(handler=_guard(_export))
    return study
