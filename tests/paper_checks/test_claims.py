"""Every registered paper claim runs in quick mode and earns the verdict recorded beside it."""

from __future__ import annotations

import jsonschema
import pytest

from laplace_lab.paper_checks.registry import Context, Status, all_claims, run_claim
from laplace_lab.paper_checks.report import VERDICT_SCHEMA, Outcome

CLAIMS = all_claims()


@pytest.mark.parametrize("item", CLAIMS, ids=[c.key for c in CLAIMS])
def test_claim_earns_its_recorded_verdict(item, tmp_path):
    verdict = run_claim(item, Context(full=False, seed=0, figure_dir=tmp_path / "figures"))
    assert verdict.status is not Status.ERROR, verdict.evidence
    assert verdict.status is item.expected, (
        f"{item.key} ({item.location}) earned {verdict.status.value}, recorded "
        f"{item.expected.value}: {verdict.evidence}"
    )
    jsonschema.validate([Outcome(item, verdict, 0.0).as_json()], VERDICT_SCHEMA)
    for fig in verdict.figures:
        assert (tmp_path / fig).is_file(), f"figure {fig} of {item.key} was not written"
