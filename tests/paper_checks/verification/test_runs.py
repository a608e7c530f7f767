"""Claims run in worker processes, a unit of work each, earn what they earn here."""

from __future__ import annotations

import sys
import types
from collections.abc import Sequence

from laplace_lab.paper_checks.verification.registry import _REGISTRY, Claim, Context, Status
from laplace_lab.paper_checks.verification.runs import Plan, _units, run_claims

CLAIMS = """
import numpy as np
from laplace_lab.paper_checks.verification import Context, Mutant, Setting, Status, Verdict, claim

LIMIT = 3


def value(ctx):
    return float(ctx.rng("draw").integers(0, 3))


@claim(paper="par-a", name="below-limit", location="1", statement="s", kind="exact",
       setting=Setting.paper(),
       mutants=(Mutant("no-limit", "limit 0", {(__import__(__name__), "LIMIT"): 0}),))
def below(ctx: Context) -> Verdict:
    v = value(ctx)
    mod = __import__(__name__)
    return Verdict(Status.CONFIRMED if v < mod.LIMIT else Status.REFUTED, measured=v)


@claim(paper="par-b", name="always", location="2", statement="s", kind="exact",
       setting=Setting.paper(), expected=Status.REFUTED,
       mutants=(Mutant("flipped", "flip", {(__import__(__name__), "LIMIT"): -1},
                       expect=Status.CONFIRMED),))
def always(ctx: Context) -> Verdict:
    mod = __import__(__name__)
    return Verdict(Status.CONFIRMED if mod.LIMIT < 0 else Status.REFUTED, measured=1.0)
"""


def no_catalog(paper: str | None, names: Sequence[str]) -> None:
    """The plugin registers the claims in every worker."""


def _defined_in(module: str):
    def check(ctx):
        return None

    check.__module__ = module
    return check


def test_units_go_to_the_workers_costliest_first_and_whole(monkeypatch):
    # modules m1, m2 of paper a; m3 and m4 of paper b declare one unit (shared experiments)
    monkeypatch.setitem(sys.modules, "pkg.m3", types.SimpleNamespace(WORK_UNIT="shared"))
    monkeypatch.setitem(sys.modules, "pkg.m4", types.SimpleNamespace(WORK_UNIT="shared"))
    where = {"a1": ("a", "pkg.m1"), "a2": ("a", "pkg.m2"), "a3": ("a", "pkg.m1")}
    where |= {"b1": ("b", "pkg.m3"), "b2": ("b", "pkg.m4")}
    claims = [Claim(p, n, "", "", Status.CONFIRMED, _defined_in(m)) for n, (p, m) in where.items()]
    seconds = {"a1": 1.0, "a2": 5.0, "a3": 1.5, "b1": 2.0, "b2": 2.5}
    groups = _units(claims, lambda c: seconds[c.name])
    assert [[c.name for c in g] for g in groups] == [["a2"], ["b1", "b2"], ["a1", "a3"]]
    assert [g[0].unit for g in groups] == ["a/m2", "b/shared", "a/m1"]


def test_workers_give_the_verdicts_and_mutants_of_one_process(tmp_path, monkeypatch):
    path = tmp_path / "par_claims.py"
    path.write_text(CLAIMS)
    monkeypatch.syspath_prepend(str(tmp_path))
    import par_claims  # noqa: F401  (registers the two claims here)

    try:
        claims = [_REGISTRY["par-a/below-limit"], _REGISTRY["par-b/always"]]
        plan = Plan(Context(seed=3), "light", no_catalog, (str(path),))
        here = run_claims(claims, plan, jobs=1, echo=lambda line: None)
        there = run_claims(claims, plan, jobs=2)
        assert [o.claim.key for o in there] == [c.key for c in claims]
        for a, b in zip(here, there, strict=True):
            assert (a.verdict.status, a.verdict.measured) == (b.verdict.status, b.verdict.measured)
            assert [(m.mutant.name, m.status) for m in a.mutants] == [
                (m.mutant.name, m.status) for m in b.mutants
            ]
            assert all(m.caught for m in b.mutants)
    finally:
        for key in ("par-a/below-limit", "par-b/always"):
            _REGISTRY.pop(key, None)
        sys.modules.pop("par_claims", None)


SEEDED = """
from laplace_lab.paper_checks.verification import Context, Mutant, Setting, Status, Verdict, claim


@claim(paper="seeded", name="coin", location="1", statement="s", kind="exact",
       setting=Setting.paper(),
       mutants=(Mutant("m", "d", {(__import__(__name__), "X"): 1}, expect=Status.REFUTED),))
def coin(ctx: Context) -> Verdict:
    return Verdict(Status.CONFIRMED if ctx.seed % 2 == 0 else Status.REFUTED, measured=1.0)


X = 0


@claim(paper="seeded", name="steady", location="2", statement="s", kind="exact",
       setting=Setting.paper(),
       mutants=(Mutant("m", "d", {(__import__(__name__), "X"): 1}, expect=Status.REFUTED),))
def steady(ctx: Context) -> Verdict:
    return Verdict(Status.CONFIRMED if __import__(__name__).X == 0 else Status.REFUTED)
"""


def test_seeds_marks_a_claim_whose_verdict_changes_with_the_base_seed(tmp_path, capsys):
    import json

    import jsonschema

    from laplace_lab.cli import main
    from laplace_lab.paper_checks.verification.outcome import VERDICT_SCHEMA

    (tmp_path / "seeded_claims.py").write_text(SEEDED)
    out = tmp_path / "report"
    argv = ["check", "--plugin", str(tmp_path / "seeded_claims.py"), "--paper", "seeded"]
    try:
        assert main([*argv, "--seeds", "3", "--jobs", "1", "--out", str(out)]) == 0
        printed = capsys.readouterr().out
        assert "1/2 claims stable over 3 base seeds" in printed
        assert (
            "unstable (CONFIRMED <-> REFUTED): seeded/coin: UNSTABLE: seed 0 CONFIRMED, "
            "seed 1 REFUTED"
        ) in printed
        data = json.loads((out / "verdicts.json").read_text())
        jsonschema.validate(data, VERDICT_SCHEMA)
        seeds = {c["claim"]: c["seeds"] for c in data["claims"]}
        assert seeds == {
            "coin": {"0": "CONFIRMED", "1": "REFUTED", "2": "CONFIRMED"},
            "steady": {"0": "CONFIRMED", "1": "CONFIRMED", "2": "CONFIRMED"},
        }
        assert "UNSTABLE: seed 0 CONFIRMED" in (out / "index.html").read_text()
        assert main([*argv, "--seeds", "0", "--out", str(out)]) == 2
    finally:
        for key in ("seeded/coin", "seeded/steady"):
            _REGISTRY.pop(key, None)
        sys.modules.pop("seeded_claims", None)


SLOW_FIRST = CLAIMS.replace(
    "def below(ctx: Context) -> Verdict:\n",
    "def below(ctx: Context) -> Verdict:\n    import time\n    time.sleep(2.0)\n",
)


class _Bar:
    """A stand-in for the run's progress bar that records what it is told."""

    disable = True

    def __init__(self, **kwargs):
        self.total, self.updates = kwargs["total"], []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, n):
        self.updates.append(n)


def test_lines_come_in_the_runs_order_and_one_bar_counts_every_run(tmp_path, monkeypatch):
    from laplace_lab.paper_checks.verification import runs

    path = tmp_path / "slow_claims.py"
    path.write_text(SLOW_FIRST)
    monkeypatch.syspath_prepend(str(tmp_path))
    import slow_claims  # noqa: F401  (registers the two claims here)

    bars = []
    monkeypatch.setattr(runs, "progress_bar", lambda **kw: bars.append(_Bar(**kw)) or bars[-1])
    try:
        claims = [_REGISTRY["par-a/below-limit"], _REGISTRY["par-b/always"]]
        plan = Plan(Context(seed=3), "light", no_catalog, (str(path),))
        lines: list[str] = []
        # the first claim's unit sleeps 2 s, so the second unit finishes first
        run_claims(claims, plan, jobs=2, echo=lines.append, cost=lambda c: 1.0)
        assert [line.split(" ...")[0] for line in lines] == [
            "[1/2] par-a/below-limit (1)",
            "mutant par-a/below-limit:no-limit",
            "[2/2] par-b/always (2)",
            "mutant par-b/always:flipped",
        ]
        assert all(line.endswith("— caught") for line in lines if line.startswith("mutant"))
        [bar] = bars
        assert bar.total == 4 and bar.updates == [1, 1, 1, 1]  # per claim and per mutant
    finally:
        for key in ("par-a/below-limit", "par-b/always"):
            _REGISTRY.pop(key, None)
        sys.modules.pop("slow_claims", None)


def test_a_process_runs_one_unit_at_a_time(monkeypatch):
    """Two units on two threads of one process (a Dask worker with two threads) run one after
    the other: a mutant's replacements and the cached experiments are the process's."""
    import threading
    import time

    from laplace_lab.paper_checks.verification import runs

    inside, most = [0], [0]
    lock = threading.Lock()

    def run_group(claims, plan, echo, numbers, report, cluster):
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.2)
        with lock:
            inside[0] -= 1
        return []

    monkeypatch.setattr(runs, "_run_group", run_group)
    monkeypatch.setattr(runs, "all_claims", lambda: [])
    plan = Plan(Context(seed=0), "none", no_catalog, ())
    threads = [threading.Thread(target=runs._worker, args=([], [], plan)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1
