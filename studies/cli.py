"""``laplace-lab study list | run | status | plot | export``.

::

    laplace-lab study list
    laplace-lab study run NAME [--reps R] [--grid key=v1,v2 ...] [--full]
                               [--executor serial|process|dask] [--workers W]
                               [--scheduler tcp://host:port] [--store PATH] [--seed S]
    laplace-lab study status NAME [--store PATH] [--full]
    laplace-lab study plot NAME [--store PATH] [--out FILE.png]
    laplace-lab study export NAME [--store PATH] [--out FILE.csv | --out -] [--summary]

``run`` resumes: running the same command again after a crash completes the missing
replications only (on Ctrl-C, ``run`` says how many replications are stored and prints that
command). ``--plugin MODULE`` imports a module that registers extra studies. The
command line that adds this command passes ``catalog``, which registers the shipped studies
(the papers'; this engine imports none).
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable
from pathlib import Path

from laplace_lab.studies.executors import EXECUTORS
from laplace_lab.studies.registry import get_study, load_plugin, studies
from laplace_lab.studies.results import StudyResults, load_results
from laplace_lab.studies.runner import run_study
from laplace_lab.studies.seeding import params_key
from laplace_lab.studies.spec import Study, expand_grid, parse_grid_overrides
from laplace_lab.studies.store import Store, default_store_path

__all__ = ["add_study_parser"]


def _study(args: argparse.Namespace) -> Study:
    args.catalog()
    for module in args.plugin or ():
        load_plugin(module)
    return get_study(args.name)


def _store_path(args: argparse.Namespace, study: Study) -> Path:
    return Path(args.store) if args.store else default_store_path(study, full=args.full)


def _results(args: argparse.Namespace) -> StudyResults:
    """The study's existing store (a missing store is a StoreError)."""
    study = _study(args)
    return load_results(study, store=_store_path(args, study))


def _values(grid: dict) -> str:
    return "  ".join(f"{k}={','.join(str(v) for v in vals)}" for k, vals in grid.items())


def _list(args: argparse.Namespace) -> int:
    args.catalog()
    for module in args.plugin or ():
        load_plugin(module)
    for name, study in studies().items():
        points = len(expand_grid(study.grid))
        full_points = len(expand_grid(study.full_grid))
        print(
            f"{name}: {points} grid points x {study.replications} reps "
            f"(--full: {full_points} x {study.full_replications})"
        )
        print(f"    {study.description.strip().splitlines()[0]}")
        print(f"    grid:   {_values(study.grid_for())}")
        print(f"    --full: {_values(study.grid_for(full=True))}")
    return 0


def _run(args: argparse.Namespace) -> int:
    study = _study(args)
    grid = parse_grid_overrides(study.grid_for(full=args.full), args.grid or [])
    executor = args.executor or ("dask" if args.scheduler else "serial")
    store = _store_path(args, study)
    try:
        report = run_study(
            study,
            store=store,
            grid=grid,
            replications=args.reps,
            full=args.full,
            executor=executor,
            workers=args.workers,
            scheduler=args.scheduler,
            seed=args.seed,
            progress=not args.no_progress,
        )
    except KeyboardInterrupt:
        raise KeyboardInterrupt(
            f"{_stored(study, store)} replications stored in {store}; resume with: "
            f"{_resume_command(args, store)}"
        ) from None
    print(
        f"{study.name}: {report.ran} replications run, {report.already_done} already in "
        f"{report.store} ({report.planned} planned) in {report.seconds:.1f} s"
    )
    print(report.table())
    return 0


def _stored(study: Study, store: Path) -> int:
    """The number of replications in ``store`` (none when the run left no store)."""
    if not store.is_file():
        return 0
    with Store(store, study=study.name, create=False) as db:
        return len(db)


def _resume_command(args: argparse.Namespace, store: Path) -> str:
    """The ``study run`` command line that resumes this run (its store given explicitly)."""
    parts = ["laplace-lab", "study", "run", args.name, "--store", str(store)]
    parts += ["--full"] if args.full else []
    parts += ["--reps", str(args.reps)] if args.reps is not None else []
    parts += ["--grid", *args.grid] if args.grid else []
    for option in ("executor", "workers", "scheduler"):
        value = getattr(args, option)
        parts += [f"--{option}", str(value)] if value is not None else []
    parts += ["--seed", str(args.seed)] if args.seed else []
    for module in args.plugin or ():
        parts += ["--plugin", module]
    parts += ["--no-progress"] if args.no_progress else []
    return shlex.join(parts)


def _status(args: argparse.Namespace) -> int:
    res = _results(args)
    study = res.study
    with Store(res.store, study=study.name, create=False) as db:
        meta = db.meta
        done = db.done()
        last = db.last_run()
    print(
        f"{study.name} store {res.store}: {len(done)} replications stored at "
        f"{len({key for key, _ in done})} grid points (schema {meta['schema_version']}, "
        f"code {meta['code_version']}, seed {meta['seed']}, created {meta['created']})"
    )
    if last is not None:
        grid, reps = last
        what = f"grid of the last run ({_values(grid)}; {reps} reps)"
    else:  # a store written before runs recorded their grid
        grid, reps = study.grid_for(full=args.full), study.replications_for(full=args.full)
        what = f"{'full' if args.full else 'default'} grid"
    points = expand_grid(grid)
    complete = sum((params_key(p), r) in done for p in points for r in range(reps))
    print(f"  {what}: {complete}/{len(points) * reps} done")
    if meta["code_version"] != study.code_version:
        print(f"  note: the current code version is {study.code_version}")
    print(res.table())
    return 0


def _plot(args: argparse.Namespace) -> int:
    out = _results(args).plot(args.out)
    print(f"wrote {out}")
    return 0


def _export(args: argparse.Namespace) -> int:
    out = _results(args).to_csv(args.out, summary=args.summary)
    if args.out != "-":
        print(f"wrote {out}")
    return 0


def _nothing() -> None:
    return None


def add_study_parser(
    subparsers: argparse._SubParsersAction, *, catalog: Callable[[], None] = _nothing
) -> argparse.ArgumentParser:
    """Add the ``study`` command (list, run, status, plot, export) to ``subparsers``;
    ``catalog()`` registers the shipped studies before a study is looked up."""
    study = subparsers.add_parser("study", help="run Monte Carlo studies (list, run, ...)")
    study.set_defaults(catalog=catalog)
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
    p.set_defaults(handler=_list)

    p = sub.add_parser("run", help="run or resume a study")
    common(p)
    p.add_argument("--reps", type=int, help="replications per grid point")
    p.add_argument(
        "--grid",
        nargs="+",
        action="extend",
        metavar="KEY=V1,V2",
        help="replace grid values, e.g. N=10,100",
    )
    p.add_argument("--executor", choices=EXECUTORS, help="default: serial (dask if --scheduler)")
    p.add_argument("--workers", type=int, help="worker processes (default: CPU count)")
    p.add_argument("--scheduler", metavar="ADDR", help="Dask scheduler, e.g. tcp://host:8786")
    p.add_argument("--seed", type=int, default=0, help="base seed (default: 0)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(handler=_run)

    p = sub.add_parser("status", help="replications stored and the summary")
    common(p)
    p.set_defaults(handler=_status)

    p = sub.add_parser("plot", help="plot the summary to PNG")
    common(p)
    p.add_argument("--out", help="PNG file (default: next to the store)")
    p.set_defaults(handler=_plot)

    p = sub.add_parser("export", help="export replications (or --summary) to CSV")
    common(p)
    p.add_argument("--out", help="CSV file, or - for standard output (default: next to the store)")
    p.add_argument("--summary", action="store_true", help="one line per grid point and metric")
    p.set_defaults(handler=_export)
    return study
