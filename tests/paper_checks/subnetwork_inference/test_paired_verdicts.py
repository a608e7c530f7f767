"""The paired one-sided comparisons behind the subnetwork-inference experiment verdicts."""

from __future__ import annotations

import numpy as np

from laplace_lab.paper_checks.subnetwork_inference._paired import paired, status_of
from laplace_lab.paper_checks.verification import Status


def test_paired_orders_and_verdicts():
    rng = np.random.default_rng(0)
    base = rng.standard_normal(200)
    better = base + 0.3 + 0.1 * rng.standard_normal(200)
    assert paired(better, base, 0.05)[0] == "stated"
    assert paired(base, better, 0.05)[0] == "reversed"
    noise = base + 0.01 * rng.standard_normal(200)
    assert paired(noise, base, 1e-6)[0] == "unclear"
    assert paired(base, base, 0.05) == ("unclear", 0.0, 1.0)
    _, diff, p = paired(better, base, 0.05)
    assert diff > 0.25 and p < 1e-10
    assert status_of({"stated"}) is Status.CONFIRMED
    assert status_of({"stated", "unclear"}) is Status.NOT_REPRODUCIBLE_HERE
    assert status_of({"stated", "reversed"}) is Status.REFUTED
