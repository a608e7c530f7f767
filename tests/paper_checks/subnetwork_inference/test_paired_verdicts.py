"""The paired one-sided comparisons behind the subnetwork-inference experiment verdicts."""

from __future__ import annotations

import numpy as np

from laplace_lab.paper_checks.subnetwork_inference._paired import (
    differences,
    one_sided_p,
    paired_test,
)
from laplace_lab.paper_checks.verification import Status, decisions


def test_paired_tests_decide_through_the_superiority_rule():
    rng = np.random.default_rng(0)
    base = rng.standard_normal(200)
    better = base + 0.3 + 0.1 * rng.standard_normal(200)
    ahead = paired_test("better − base", better, base)
    assert ahead.mean > 0.25 and one_sided_p(ahead) < 1e-10
    assert decisions.superiority(ahead).status is Status.CONFIRMED
    behind = paired_test("base − better", base, better)
    assert decisions.superiority(behind).status is Status.REFUTED
    # a difference that is not significant decides nothing, either way
    noise = base + 0.01 * rng.standard_normal(200)
    unclear = paired_test("noise − base", noise, base)
    assert decisions.superiority(unclear, alpha=1e-6).status is Status.INCONCLUSIVE
    same = paired_test("base − base", base, base)
    assert same.se == 0.0 and decisions.superiority(same).status is Status.INCONCLUSIVE
    # one stated, one undecided: inconclusive; one reversed: refuted
    assert decisions.superiority([ahead, same]).status is Status.INCONCLUSIVE
    assert decisions.superiority([ahead, behind]).status is Status.REFUTED
    assert np.array_equal(differences(better, base), better - base)
