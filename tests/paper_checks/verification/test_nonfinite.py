"""A NaN or an infinity in a claim's evidence is an ERROR, never a verdict."""

from __future__ import annotations

import math

import numpy as np
import pytest

from laplace_lab.paper_checks.verification.registry import (
    Claim,
    Context,
    Status,
    Verdict,
    nonfinite,
    run_claim,
)


def _claim(verdict: Verdict) -> Claim:
    return Claim("p", "c", "eq. (1)", "s", Status.CONFIRMED, lambda ctx: verdict)


@pytest.mark.parametrize(
    ("field", "value", "where"),
    [
        ("measured", math.nan, "measured = nan"),
        ("tolerance", np.float32("inf"), "tolerance = inf"),
        ("details", {"tv": [0.1, math.nan]}, "details['tv'][1] = nan"),
        ("details", {"a": np.array([[1.0, 2.0], [3.0, -np.inf]])}, "details['a'][1, 1] = -inf"),
        ("details", {"models": {"pg": {"max_TV": math.nan}, "nn": {"max_TV": 0.01}}}, "max_TV"),
    ],
)
def test_a_nonfinite_number_anywhere_in_the_evidence_is_an_error(field, value, where):
    verdict = run_claim(_claim(Verdict(Status.CONFIRMED, **{field: value})), Context())
    assert verdict.status is Status.ERROR
    assert "non-finite number in the evidence" in verdict.summary
    assert where in verdict.summary


def test_finite_evidence_and_text_pass():
    ok = Verdict(
        Status.REFUTED,
        measured="no finite K(η) for η ∈ [2.0]",  # text may say "inf"
        details={"x": [1.0, 2], "flag": True, "none": None, "arr": np.arange(3.0)},
    )
    assert run_claim(_claim(ok), Context()).status is Status.REFUTED
    assert nonfinite({"x": (1, 2.5, "nan")}) is None
    assert nonfinite({"x": (1, 2.5, math.inf)}) == "['x'][2] = inf"
    assert nonfinite(np.array([[0.0, np.nan]]), "d") == "d[0, 1] = nan"
