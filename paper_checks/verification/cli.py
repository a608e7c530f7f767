"""The ``laplace-lab check`` command, which runs the paper claims and writes the report.

``laplace-lab check [--paper NAME] [--quick | --full] [--out DIR] [--seed S] [--plugin M]
[--mutants none|light|all] [--no-progress]``.

Runs every registered paper claim, then each claim under its mutants (light ones by
default), and writes the verification report (``index.html``, ``report.md``,
``verdicts.json`` with the run's metadata). Exits 1 if a claim check itself fails (an ERROR
verdict). On a terminal, one bar on stderr counts the claims and mutants run and names
the ones running with the steps of their loops (``--no-progress``: no bar).
"""

from __future__ import annotations

import argparse
import difflib
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

__all__ = ["add_check_parser"]


def _check(args: argparse.Namespace) -> int:
    import datetime
    from collections import Counter

    from laplace_lab._paths import writable_folder
    from laplace_lab._plugins import load_plugin
    from laplace_lab.paper_checks.verification.costs import work_cost, write_costs
    from laplace_lab.paper_checks.verification.registry import Context, Status, all_claims
    from laplace_lab.paper_checks.verification.registry import papers as registered_papers
    from laplace_lab.paper_checks.verification.report import write_report
    from laplace_lab.paper_checks.verification.run_info import run_metadata, usable_cpus
    from laplace_lab.paper_checks.verification.runs import Plan, run_claims

    started = datetime.datetime.now(datetime.UTC)
    clock = time.perf_counter()
    shipped = list(args.papers())
    args.paper = _paper(args.paper, shipped)
    args.catalog(args.paper, tuple(args.claim or ()))
    for module in args.plugin or ():
        load_plugin(module, "claim plugin")
    known = sorted({*shipped, *registered_papers()})
    args.paper = _paper(args.paper, known)
    if args.paper is not None and args.paper not in known:
        raise ValueError(
            f"paper must be one of {', '.join(known)} (or the folder name, e.g. "
            f"{known[0].replace('-', '_')}); got --paper={args.paper!r}"
        )
    if args.record and not args.full:
        raise ValueError("--record needs --full: only a full-mode run is a paper-scale record")
    claims = _selected(all_claims(args.paper), args.claim, args.claim_keys)
    out_dir = writable_folder(args.out)  # refused now, not after the claims have run
    store = None
    if args.scheduler is not None:
        from laplace_lab.paper_checks.verification.unit_store import UnitStore
        from laplace_lab.studies.executors import reachable_scheduler

        if args.scheduler != "local":
            reachable_scheduler(args.scheduler)  # refused within seconds, before any work
        store = UnitStore(out_dir / ".units")
    ctx = Context(full=args.full, seed=args.seed, figure_dir=out_dir / "figures")
    jobs = args.jobs or usable_cpus()
    plan = Plan(ctx, args.mutants, args.catalog, tuple(args.plugin or ()))
    outcomes = run_claims(
        claims,
        plan,
        jobs=jobs,
        cost=work_cost(args.results_folder),
        scheduler=args.scheduler,
        store=store,
        progress=not args.no_progress,
    )
    if args.seeds > 1:
        outcomes = _at_other_seeds(
            outcomes, plan, args.seeds, jobs, args.scheduler, store, not args.no_progress
        )
    meta = run_metadata(
        full=args.full,
        seed=args.seed,
        mutants=args.mutants,
        seconds=time.perf_counter() - clock,
        started=started,
        command=_command(args),
    )
    paths = write_report(outcomes, out_dir, meta=meta)
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    if args.record:
        from laplace_lab.paper_checks.verification.full_record import write_records

        written = write_records(
            outcomes,
            command=meta["command"],
            commit=meta["commit"] + ("-dirty" if meta.get("commit_dirty") else ""),
            date=started.date().isoformat(),
        )
        print(f"recorded {len(written)} claims' full-mode results (recorded/full_*.json)")
    if args.write_results:
        from laplace_lab.paper_checks.verification.results_md import write_results

        for path in write_results(
            outcomes, meta, report_dir=out_dir, folder_of=args.results_folder
        ) + write_costs(outcomes, meta, folder_of=args.results_folder):
            print(f"wrote {path}")
    caught = sum(m.caught for o in outcomes for m in o.mutants)
    run = sum(len(o.mutants) for o in outcomes)
    counts = Counter(o.status.value for o in outcomes)
    said = ", ".join(f"{counts[s.value]} {s.value}" for s in Status if counts[s.value])
    print(
        f"{len(outcomes)} claims in {meta['seconds']:.0f} s ({said}; the best evidence: a "
        f"counting paper-scale record first); mutants caught {caught}/{run}"
    )
    differ = _differing(outcomes)
    for line in differ:
        print(line)
    errors = [o for o in outcomes if o.verdict.status is Status.ERROR]
    for o in errors:  # one line each; the traceback is in the report
        last = (o.verdict.evidence_text.strip().splitlines() or ["no evidence"])[-1]
        print(
            f"laplace-lab check: error: {o.claim.key}: {last} (see {paths['markdown']})",
            file=sys.stderr,
        )
    if errors:
        return 1
    return 1 if args.strict and differ else 0


def _differing(outcomes: list) -> list[str]:
    """One line per claim whose quick verdict differs from its recorded ``expected`` one and
    per mutant not caught, sorted by claim key (a heading first); none when all
    agree."""
    lines = []
    for o in sorted(outcomes, key=lambda o: o.claim.key):
        if o.verdict.status is not o.claim.expected:
            lines.append(
                f"  {o.claim.key}: {o.verdict.status.value}, expected "
                f"{o.claim.expected.value} ({o.verdict.reason})"
            )
        lines += [
            f"  {o.claim.key}:{m.mutant.name}: mutant NOT CAUGHT ({m.status.value}, must be "
            f"{m.mutant.expect})"
            for m in o.mutants
            if not m.caught
        ]
    if not lines:
        return []
    return [f"{len(lines)} verdict(s) differ from the expected ones:", *lines]


def _at_other_seeds(
    outcomes: list,
    plan: Any,
    seeds: int,
    jobs: int,
    scheduler: str | None,
    store: Any,
    progress: bool = True,
) -> list:
    """``outcomes`` with each claim's verdicts at base seeds seed, seed + 1, …, seed + seeds − 1
    (the claims alone at the other seeds, no mutants, no figures; on ``scheduler`` with
    ``store`` as the base seed's run; ``progress``: the bar of each run)."""
    from laplace_lab.paper_checks.verification.registry import Status
    from laplace_lab.paper_checks.verification.runs import run_claims

    base = plan.ctx.seed
    found = {o.claim.key: [(base, o.verdict.status)] for o in outcomes}
    claims = [o.claim for o in outcomes]
    for seed in range(base + 1, base + seeds):
        print(f"-- base seed {seed} --", flush=True)
        other = replace(plan, ctx=replace(plan.ctx, seed=seed, figure_dir=None), mutants="none")
        again = run_claims(
            claims, other, jobs=jobs, scheduler=scheduler, store=store, progress=progress
        )
        for o in again:
            found[o.claim.key].append((seed, o.verdict.status))
    done = [replace(o, seeds=tuple(found[o.claim.key])) for o in outcomes]
    unstable = [o for o in done if not o.stable]
    print(f"{len(done) - len(unstable)}/{len(done)} claims stable over {seeds} base seeds")
    for o in unstable:
        said = {s for _, s in o.seeds}
        kind = (
            "CONFIRMED <-> REFUTED"
            if {Status.CONFIRMED, Status.REFUTED} <= said
            else "between INCONCLUSIVE and a decision"
            if Status.INCONCLUSIVE in said
            else "unstable"
        )
        print(f"unstable ({kind}): {o.claim.key}: {o.stability}")
    return done


def _paper(name: str | None, known: Sequence[str]) -> str | None:
    """The paper ``name``: a folder name (``fsp_laplace``) is an alias of its paper
    (``fsp-laplace``); any other name as given."""
    if name is None or name in known:
        return name
    alias = name.replace("_", "-")
    return alias if alias in known else name


def _selected(claims: list, names: list[str] | None, shipped: Callable[[], Sequence[str]]) -> list:
    """The claims named by ``--claim`` (a name or a ``paper/name`` key), in registry order;
    an unknown name is refused with the closest of the registered and ``shipped()`` keys."""
    if not names:
        return claims
    unknown = [n for n in names if not any(n in (c.name, c.key) for c in claims)]
    if unknown:
        keys = {*shipped(), *(c.key for c in claims)}
        choices = keys | {k.split("/", 1)[-1] for k in keys}
        close = difflib.get_close_matches(unknown[0], sorted(choices), n=5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ValueError(
            f"--claim must name a registered claim (a name or a paper/name key, "
            f"{len(keys)} known); got --claim={unknown[0]!r}{hint}"
        )
    return [c for c in claims if c.name in names or c.key in names]


def _command(args: argparse.Namespace) -> str:
    """The command line that reproduces this run."""
    parts = ["laplace-lab", "check", "--full" if args.full else "--quick"]
    parts += ["--seed", str(args.seed), "--mutants", args.mutants, "--out", str(args.out)]
    parts += ["--seeds", str(args.seeds)] if args.seeds != 1 else []
    parts += ["--scheduler", args.scheduler] if args.scheduler else []
    parts += ["--record"] if getattr(args, "record", False) else []
    parts += ["--paper", args.paper] if args.paper else []
    for name in args.claim or ():
        parts += ["--claim", name]
    for module in args.plugin or ():
        parts += ["--plugin", module]
    return " ".join(parts)


def _nothing(paper: str | None, names: Sequence[str]) -> None:
    return None


def _none() -> tuple[str, ...]:
    return ()


def _count(low: int) -> Callable[[str], int]:
    """An argparse ``type``: the integer of the text, at least ``low`` (0 or 1)."""
    what = "a positive integer" if low == 1 else "a non-negative integer"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {what}; got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be {what}; got {value}")
        return value

    return parse


def _no_folder(paper: str) -> Path:
    raise ValueError(f"--write-results: no folder is known for the paper {paper!r}")


def add_check_parser(
    subparsers: argparse._SubParsersAction,
    *,
    catalog: Callable[[str | None, Sequence[str]], None] = _nothing,
    results_folder: Callable[[str], Path] = _no_folder,
    papers: Callable[[], Sequence[str]] = _none,
    claim_keys: Callable[[], Sequence[str]] = _none,
) -> argparse.ArgumentParser:
    """Add the ``check`` command to ``subparsers``.

    ``catalog(paper, names)`` registers the claims (of ``paper``, or all; ``names`` are the
    ``--claim`` values, so that it may import less) when the command runs,
    ``results_folder(paper)`` is where ``--write-results`` writes a paper's RESULTS.md, and
    ``papers()`` and ``claim_keys()`` are the names of the shipped papers and the
    ``paper/name`` keys of their claims, which an unknown ``--paper`` or ``--claim`` is
    refused with; this package imports no paper.
    """
    check = subparsers.add_parser("check", help="run the paper claims and write the report")
    check.set_defaults(
        catalog=catalog, results_folder=results_folder, papers=papers, claim_keys=claim_keys
    )
    check.add_argument(
        "--paper", help="only the claims of this paper (e.g. fsp-laplace, or fsp_laplace)"
    )
    check.add_argument(
        "--claim",
        action="append",
        metavar="NAME",
        help="only this claim (its name or paper/name key; repeatable)",
    )
    mode = check.add_mutually_exclusive_group()
    mode.add_argument("--quick", dest="full", action="store_false", help="quick mode (default)")
    mode.add_argument("--full", dest="full", action="store_true", help="the papers' full sizes")
    check.add_argument("--out", default="report", help="report folder (default: report)")
    check.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run the units of work as tasks of a Dask cluster (tcp://HOST:PORT, or 'local' "
        "for a LocalCluster of --jobs workers); finished units are kept in OUT/.units and a "
        "rerun of the same check reads them instead of recomputing",
    )
    check.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when a verdict differs from its expected one or a mutant is not caught",
    )
    check.add_argument("--seed", type=int, default=0, help="base seed (default: 0)")
    check.add_argument(
        "--seeds",
        type=_count(1),
        default=1,
        help="also run every claim at the next N-1 base seeds and mark the claims whose "
        "verdict changes (default: 1)",
    )
    check.add_argument(
        "--jobs",
        type=_count(0),
        default=0,
        help="worker processes, each running units of work (default 0: one per usable CPU; "
        "1: this process)",
    )
    check.add_argument(
        "--plugin", action="append", metavar="MODULE", help="import a module of your own claims"
    )
    check.add_argument(
        "--mutants",
        choices=("none", "light", "all"),
        default="light",
        help="run each claim under its mutants to measure its power (default: light ones)",
    )
    check.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar on a terminal (the lines of the claims and mutants are printed "
        "all the same)",
    )
    check.add_argument(
        "--write-results",
        action="store_true",
        help="also rewrite each paper's RESULTS.md verdicts and figures (source checkout)",
    )
    check.add_argument(
        "--record",
        action="store_true",
        help="with --full: write each decided claim's result to recorded/full_<claim>.json "
        "beside its paper's claims, the paper-scale evidence of every later check",
    )
    check.set_defaults(handler=_check, full=False)
    return check
