"""Every registered paper claim runs in quick mode and earns the verdict recorded beside it."""

from __future__ import annotations

import jsonschema
import pytest

from laplace_lab.paper_checks.verification.registry import (
    Context,
    Status,
    run_claim,
    run_mutant,
)
from laplace_lab.paper_checks.verification.report import VERDICT_SCHEMA, Outcome
from laplace_lab.papers import claims

CLAIMS = claims()


def _grouped(item, *marks):
    """One xdist group per unit of work (``--dist loadgroup``): a unit's claims run before
    its mutants on one worker, so a mutant reuses the true results it names, as in the
    check."""
    return pytest.param(item, marks=[pytest.mark.xdist_group(item.unit), *marks])


@pytest.mark.parametrize("item", [_grouped(c) for c in CLAIMS], ids=[c.key for c in CLAIMS])
def test_claim_earns_its_recorded_verdict(item, tmp_path):
    verdict = run_claim(item, Context(full=False, seed=0, figure_dir=tmp_path / "figures"))
    assert verdict.status is not Status.ERROR, verdict.evidence
    if item.timed and verdict.status is Status.NOT_REPRODUCIBLE_HERE:
        # a clock decides: on a busy machine it may be too noisy to, and must say so
        assert "clock" in verdict.reason, verdict.reason
        pytest.skip(f"{item.key}: the clock was too noisy here ({verdict.reason})")
    assert verdict.status is item.expected, (
        f"{item.key} ({item.location}) earned {verdict.status.value}, recorded "
        f"{item.expected.value}: {verdict.evidence}"
    )
    jsonschema.validate(
        Outcome(item, verdict, 0.0).as_json(), VERDICT_SCHEMA["properties"]["claims"]["items"]
    )
    # measured power of every statistical decision, the run's and each recorded run's (whose
    # headline no mutant of the quick run reaches): moved to the claim's boundary, its data
    # must no longer decide
    for d in (verdict.decision, *(r.decision for r in verdict.recorded)):
        if d is not None and d.kind.statistical and d.tests:
            at = d.at_the_boundary()
            assert at.status is Status.INCONCLUSIVE, (
                f"{item.key}: its {d.kind.value} rule still says {at.status.value} with the "
                f"effect at the boundary: {at.points}"
            )
    for fig in verdict.figures:
        assert (tmp_path / fig).is_file(), f"figure {fig} of {item.key} was not written"


MUTANTS = [(c, m) for c in CLAIMS for m in c.mutants]


@pytest.mark.parametrize(
    ("item", "mutant"),
    [
        pytest.param(
            c,
            m,
            marks=[pytest.mark.xdist_group(c.unit), *([pytest.mark.slow] if m.heavy else [])],
        )
        for c, m in MUTANTS
    ],
    ids=[f"{c.key}:{m.name}" for c, m in MUTANTS],
)
def test_every_mutant_changes_the_verdict(item, mutant):
    """Measured power: run under a deliberately wrong variant, the claim must say so."""
    outcome = run_mutant(item, mutant, Context(full=False, seed=0))
    assert outcome.caught, (
        f"{item.key} under mutant {mutant.name!r} ({mutant.description}) earned "
        f"{outcome.status.value}; it must earn {mutant.expect}"
    )


def test_every_claim_carries_a_light_mutant_that_changes_its_verdict():
    """No claim without measured power: each has at least one mutant that the default run
    (and this suite) executes, and every mutant expects a verdict other than the claim's."""
    unarmed = [c.key for c in CLAIMS if not any(not m.heavy for m in c.mutants)]
    assert not unarmed, f"claims without a light mutant: {unarmed}"
    same = [f"{c.key}:{m.name}" for c, m in MUTANTS if m.expect == c.expected.value]
    assert not same, f"mutants that expect the claim's own verdict: {same}"


def test_every_claim_declares_its_kind_and_setting():
    """The registry walk: a kind and a setting on every claim (the registry refuses a claim
    without them), a margin and its source on every equivalence claim."""
    from laplace_lab.paper_checks.verification.kinds import Kind, Setting

    for c in CLAIMS:
        assert isinstance(c.kind, Kind) and isinstance(c.setting, Setting), c.key
        if c.kind is Kind.EQUIVALENCE:
            assert len(c.margin) > 10, f"{c.key}: an equivalence claim names its margin"
        if c.setting.label == "substitute":
            assert c.setting.differs, c.key


def test_no_table_number_is_refuted_on_a_substitute():
    """A specific number of a table or figure can be REFUTED only in the paper's setting."""
    wrong = [
        c.key
        for c in CLAIMS
        if c.setting.specific and c.setting.label == "substitute" and c.expected is Status.REFUTED
    ]
    assert not wrong, wrong


def test_the_rules_of_each_statistical_claim_have_measured_power():
    """A superiority claim carries a light null mutant (no effect) that must give
    INCONCLUSIVE; an equivalence claim a light mutant at its margin that must not confirm. A
    claim that cannot run here (NOT_REPRODUCIBLE_HERE: no data, no statistic to null) or is
    itself INCONCLUSIVE (a mutant must expect another verdict) is exempt."""
    from laplace_lab.paper_checks.verification.kinds import Kind

    missing = []
    for c in CLAIMS:
        expects = {m.expect for m in c.mutants if not m.heavy}  # the ones every run executes
        runs = c.expected not in (Status.INCONCLUSIVE, Status.NOT_REPRODUCIBLE_HERE)
        if c.kind is Kind.SUPERIORITY and runs:
            if "INCONCLUSIVE" not in expects:
                missing.append(f"{c.key}: no null mutant")
        if c.kind is Kind.EQUIVALENCE and c.expected is Status.CONFIRMED:
            if not expects & {"INCONCLUSIVE", "REFUTED"}:
                missing.append(f"{c.key}: no mutant at the margin")
    assert not missing, missing
