"""The recorded seconds of the claims order the work of a check, and only the default run
records them."""

from __future__ import annotations

import json

from laplace_lab.paper_checks.verification.costs import (
    COSTS_FILE,
    estimated_cost,
    work_cost,
    write_costs,
)
from laplace_lab.paper_checks.verification.mutants import Mutant
from laplace_lab.paper_checks.verification.outcome import Outcome
from laplace_lab.paper_checks.verification.registry import (
    Claim,
    MutantOutcome,
    Status,
    Verdict,
)


def _claim(paper: str, name: str, mutants=()) -> Claim:
    return Claim(paper, name, "", "", Status.CONFIRMED, len, tuple(mutants))


def test_costs_are_recorded_for_the_default_run_and_read_back(tmp_path):
    light = Mutant("m", "a mutant", {len: abs}, expect=Status.REFUTED)
    heavy = Mutant("h", "a heavy mutant", {len: abs}, expect=Status.REFUTED, heavy=True)
    fast, slow = _claim("p", "fast", [light, heavy]), _claim("p", "slow")
    outcomes = [
        Outcome(
            fast, Verdict(Status.CONFIRMED), 1.25, (MutantOutcome(light, Status.REFUTED, 0.5),)
        ),
        Outcome(slow, Verdict(Status.CONFIRMED), 7.0),
    ]
    folder = {"p": tmp_path}.__getitem__
    assert write_costs(outcomes, {"mode": "full", "mutants": "light"}, folder_of=folder) == []
    assert write_costs(outcomes, {"mode": "quick", "mutants": "all"}, folder_of=folder) == []
    (path,) = write_costs(outcomes, {"mode": "quick", "mutants": "light"}, folder_of=folder)
    assert path == tmp_path / COSTS_FILE
    assert json.loads(path.read_text()) == {"fast": 1.75, "slow": 7.0}
    cost = work_cost(folder)
    assert (cost(fast), cost(slow)) == (1.75, 7.0)
    # an unrecorded claim gets twice the count of its run and light mutants
    assert estimated_cost(fast) == 2.0
    assert cost(_claim("p", "new", [light, heavy])) == 4.0


def test_a_missing_or_broken_record_falls_back_to_the_estimate(tmp_path):
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / COSTS_FILE).write_text("{not json")

    def folder(paper: str):
        if paper == "plugin":
            raise ValueError("no folder is known for the paper 'plugin'")
        return tmp_path / paper

    cost = work_cost(folder)
    for paper in ("missing", "broken", "plugin"):
        assert cost(_claim(paper, "c")) == 2.0
