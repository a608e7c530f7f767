"""Verdict logic and self-checks of the subnetwork-laplace-optimality claims, on hand-built
inputs: the relative reading of App. A.1, the Greedy-Laplace and Wheel self-checks, and the
power every claim must carry."""

from __future__ import annotations

import numpy as np
import pytest

from laplace_lab.paper_checks.subnetwork_laplace_optimality._greedy import (
    require_literal_greedy,
)
from laplace_lab.paper_checks.subnetwork_laplace_optimality._mutants import (
    GREEDY_TOP_K_DIAGONAL,
    GREEDY_WITHOUT_SCHUR,
)
from laplace_lab.paper_checks.subnetwork_laplace_optimality._wheel import (
    WHEEL_PAYS_INNER_DISK,
    require_wheel_geometry,
)
from laplace_lab.paper_checks.subnetwork_laplace_optimality.ipv_empirical import (
    relative_reading,
)
from laplace_lab.paper_checks.verification import ImplementationError
from laplace_lab.paper_checks.verification.mutants import applied

NS = [30, 100, 300, 1000, 3000]


def test_relative_error_vanishing_like_the_wishart_theory_passes():
    # (k+1)/N + √(2/(kN)) for k = 2: 0.36 at N = 30 down to 0.019 at N = 3,000
    series = [3 / n + np.sqrt(1 / n) for n in NS]
    ok, fits = relative_reading(NS, {"k=2": series})
    assert ok
    assert fits["k=2"]["slope"] == pytest.approx(-0.6, abs=0.1)


@pytest.mark.parametrize(
    "series",
    [
        [1.0] * 5,  # E PV replaced by 0: |0 − IPV| / IPV = 1 at every N
        [2.0, 2.01, 2.0, 1.99, 2.0],  # E PV tripled
        [0.9, 0.6, 0.4, 0.3, 0.2],  # vanishing, but still 20% off at the largest N
    ],
)
def test_relative_error_that_does_not_vanish_or_stays_large_fails(series):
    ok, fits = relative_reading(NS, {"k=2": [3 / n + np.sqrt(1 / n) for n in NS], "bad": series})
    assert not ok
    assert fits["k=2"]["passes"] and not fits["bad"]["passes"]


@pytest.mark.parametrize("likelihood", ["regression", "binary", "multiclass"])
@pytest.mark.parametrize("candidates", ["2k", "paper"])
def test_greedy_self_check_passes_on_the_package_and_catches_wrong_greedy(likelihood, candidates):
    text = require_literal_greedy(
        np.random.default_rng(1), likelihood=likelihood, candidates=candidates
    )
    assert "equals the literal Algorithm 2" in text
    for mutant in (GREEDY_WITHOUT_SCHUR, GREEDY_TOP_K_DIAGONAL):
        with applied(mutant), pytest.raises(ImplementationError, match="literal Algorithm 2"):
            require_literal_greedy(
                np.random.default_rng(1), likelihood=likelihood, candidates=candidates
            )


@pytest.mark.parametrize("delta", [0.95, 0.9])
def test_wheel_geometry_check(delta):
    assert f"δ = {delta}" in require_wheel_geometry(delta, np.random.default_rng(2))
    with applied(WHEEL_PAYS_INNER_DISK), pytest.raises(ImplementationError, match="1 − δ²"):
        require_wheel_geometry(delta, np.random.default_rng(2))
