"""context-points-rough-priors: the smallest capturing M per prior, and its decision over seeds."""

from __future__ import annotations

import pytest

from laplace_lab.paper_checks.fsp_laplace.context_points import (
    FAMILIES,
    SIZES,
    needed_steps,
    rough_decision,
)
from laplace_lab.paper_checks.verification import Status
from laplace_lab.paper_checks.verification.registry import ImplementationError


def _sweep(captures_from: dict[str, int], beyond: float = 0.5) -> dict:
    """Mean W₂ ``beyond`` below the index ``captures_from[f]`` of the grid, 0.1 from it on."""
    return {
        (f, M): {"w2": 0.1 if i >= captures_from[f] else beyond}
        for f in FAMILIES
        for i, M in enumerate(SIZES)
    }


def test_the_smallest_capturing_m_is_a_grid_index_and_a_diverging_fit_is_an_error():
    assert needed_steps(_sweep({"RBF": 2, "Matern-1/2": 4}), 0.25) == {"RBF": 2, "Matern-1/2": 4}
    # not captured on the grid but approaching its GP (W₂ ≤ 0.5 at M = 100): beyond the grid
    never = {"RBF": 0, "Matern-1/2": len(SIZES)}
    assert needed_steps(_sweep(never, beyond=0.3), 0.25)["Matern-1/2"] == len(SIZES)
    with pytest.raises(ImplementationError, match=r"Matern-1/2 GP posterior even at M = 100"):
        needed_steps(_sweep(never, beyond=0.6), 0.25)


def _steps(*pairs: tuple[int, int]) -> list[dict[str, int]]:
    return [{"Matern-1/2": m, "RBF": r} for m, r in pairs]


@pytest.mark.parametrize(
    ("steps", "status"),
    [
        (_steps((5, 2)), Status.INCONCLUSIVE),  # one seed, the paper's ordering: no test
        (_steps((2, 5)), Status.INCONCLUSIVE),  # one seed, the reverse: no test either
        (_steps((6, 3)), Status.INCONCLUSIVE),  # one seed, the rough prior beyond the grid
        (_steps((4, 3), (5, 3), (4, 3), (4, 2), (5, 3)), Status.CONFIRMED),
        (_steps((3, 5), (3, 5), (3, 4), (3, 5), (2, 5)), Status.REFUTED),
        (_steps((3, 3), (3, 5), (3, 3), (5, 3), (3, 3)), Status.INCONCLUSIVE),
    ],
)
def test_one_seed_decides_nothing_and_five_decide_by_the_superiority_rule(steps, status):
    d = rough_decision(steps, "laplace-lab check --full --claim x")
    assert d.status is status
    if len(steps) == 1:
        assert d.rule == "one run decides nothing"
        assert (
            d.points[-1]
            == "Decide with the comparison over seeds: laplace-lab check --full --claim x"
        )
