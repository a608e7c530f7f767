"""Paired-seed ordering verdict and NeuralLinear matching of the Experiment-1 claims."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from laplace_lab.paper_checks.subnetwork_laplace_optimality._experiment1 import (
    MATCH_MARGIN,
    at_margin,
    greedy_minus_gradient,
    neural_linear_decision,
    neural_linear_match,
    neural_linear_paired,
    ordering_tests,
    ordering_verdict,
)
from laplace_lab.paper_checks.verification import Status
from laplace_lab.paper_checks.verification.registry import ImplementationError

KS = (50, 200, 500)


def _result(per_seed, nl=(650, 4.0)):
    """A stand-in ExperimentResult: per_seed = [{method: W2 along KS}, ...]."""
    seeds = tuple(
        SimpleNamespace(ks=KS, w2={m: np.asarray(v, float) for m, v in s.items()})
        for s in per_seed
    )
    w = {m: np.array([s.w2[m] for s in seeds]) for m in seeds[0].w2}
    return SimpleNamespace(
        seeds=seeds,
        w2_mean={m: v.mean(0) for m, v in w.items()},
        w2_se={m: v.std(0, ddof=1) / np.sqrt(len(seeds)) for m, v in w.items()},
        reference_mean={"neural_linear": {"k": float(nl[0]), "w2": float(nl[1])}},
    )


def _seed(grad, greedy, diag, last):
    return {
        "gradient_laplace": grad,
        "greedy_laplace": greedy,
        "subnet_diagonal": diag,
        "last_k": last,
    }


def test_confirmed_when_every_seed_orders_the_methods():
    res = _result(
        [
            _seed([9, 5, 2], [9, 4, 1], [9, 9, 9], [9, 8, 7]),
            _seed([9, 6, 3], [9, 5, 2], [9] * 3, [9, 9, 8]),
        ]
    )
    v = ordering_verdict(res, label="toy")
    assert v.status is Status.CONFIRMED and v.decision.status is Status.CONFIRMED
    assert v.decision.audit() is None
    # worst proposed / best baseline over k ≥ 200: max(5.5/8.5, 2.5/7.5)
    assert v.measured == pytest.approx(5.5 / 8.5)
    assert v.details["paired_difference_mean"] == pytest.approx([-3.0, -5.0])  # k ≥ 200


def test_k_below_200_is_not_judged_and_reversal_is_refuted():
    # at k = 50 the proposed methods are worse (not judged); at k = 500 Gradient is worse than
    # Last-k by 1 ± 0.1 in three seeds: a reversal beyond two standard errors
    seeds = [_seed([20, 5, 8.0 + e], [20, 4, 1], [9, 9, 9], [9, 8, 7.0]) for e in (-0.1, 0.0, 0.1)]
    v = ordering_verdict(_result(seeds), label="toy")
    assert v.status is Status.REFUTED
    assert [t.label.split(":")[0] for t in v.decision.tests] == ["k = 200", "k = 500"]
    assert v.decision.tests[1].significant(0.05 / 2, direction=+1)  # the reverse, at α/m


def test_mixed_signs_within_two_standard_errors_are_inconclusive():
    seeds = [_seed([1, 5 + e, 1], [1, 1, 1], [9, 5, 9], [9, 9, 9]) for e in (-1.0, 0.5, 0.6)]
    v = ordering_verdict(_result(seeds), label="toy", command="laplace-lab check --full")
    assert v.status is Status.INCONCLUSIVE
    assert "neither ordering is significant" in v.decision.points[0]
    assert any("laplace-lab check --full" in p for p in v.decision.points)


def test_the_same_method_in_both_arms_is_inconclusive(monkeypatch):
    """A null effect (both arms one method: every difference exactly 0) never confirms."""
    from laplace_lab.paper_checks.subnetwork_laplace_optimality import _experiment1

    same = ("gradient_laplace", "gradient_laplace")
    monkeypatch.setattr(_experiment1, "PROPOSED", same)
    monkeypatch.setattr(_experiment1, "BASELINES", same)
    seeds = [_seed([9, 5, 2], [9, 4, 1], [9, 9, 9], [9, 8, 7])] * 3
    tests = ordering_tests(_result(seeds))
    assert all(t.mean == 0.0 and t.se == 0.0 for t in tests)
    assert ordering_verdict(_result(seeds), label="toy").status is Status.INCONCLUSIVE


def test_greedy_minus_gradient_is_the_paired_mean_and_standard_error():
    seeds = [
        _seed([3, 2, 1], [2, 2, 2], [0] * 3, [0] * 3),
        _seed([5, 2, 1], [2, 1, 0], [0] * 3, [0] * 3),
    ]
    mean, se, worse = greedy_minus_gradient(_result(seeds))
    np.testing.assert_allclose(mean, [-2.0, -0.5, 0.0])
    np.testing.assert_allclose(se, [1.0, 0.5, 1.0])  # |d1 − d2| / 2 for two seeds
    np.testing.assert_array_equal(worse, [0, 0, 1])  # differences (−1, −3), (0, −1), (1, −1)


def test_neural_linear_crossing_interpolates_in_log_k():
    # best curve 8, 4, 1 at k = 50, 200, 500; NeuralLinear W2 = 2 at k = 650 (outside the grid)
    res = _result([_seed([8, 4, 1], [9, 5, 2], [9] * 3, [9] * 3)] * 2, nl=(650, 2.0))
    nl = neural_linear_match(res)
    # crossing between 200 (4) and 500 (1): t = (4 − 2)/(4 − 1) = 2/3 of the way in log k
    assert nl["k_match"] == pytest.approx(200 * 2.5 ** (2 / 3))
    assert np.isnan(nl["w2_best_at_k"])  # k_NL = 650 > 500: no interpolation
    inside = neural_linear_match(
        _result([_seed([8, 4, 1], [9] * 3, [9] * 3, [9] * 3)] * 2, nl=(100, 9.0))
    )
    assert inside["k_match"] == 50.0  # already below at the first grid point
    assert inside["w2_best_at_k"] == pytest.approx(8 - 4 * np.log(2) / np.log(4))
    never = neural_linear_match(
        _result([_seed([8, 4, 1], [9] * 3, [9] * 3, [9] * 3)] * 2, nl=(100, 0.5))
    )
    assert np.isnan(never["k_match"])


def test_ordering_needs_a_k_at_or_above_the_threshold():
    res = _result([_seed([1, 1, 1], [1, 1, 1], [2] * 3, [2] * 3)] * 2)
    with pytest.raises(ValueError, match="k ≥ 1000"):
        ordering_verdict(res, label="toy", k_min=1000)


def _paired_result(best_curves, nl_w2, k_nl=100.0):
    """Seeds whose better proposed curve along KS is ``best_curves[i]`` and whose NeuralLinear
    W2 at k = ``k_nl`` is ``nl_w2[i]``."""
    seeds = tuple(
        SimpleNamespace(
            ks=KS,
            w2={"gradient_laplace": np.asarray(c, float), "greedy_laplace": np.full(3, 99.0)},
            reference={"neural_linear": {"k": k_nl, "w2": w}},
        )
        for c, w in zip(best_curves, nl_w2, strict=True)
    )
    return SimpleNamespace(seeds=seeds)


def test_neural_linear_paired_is_relative_to_each_seeds_neural_linear():
    # k_NL = 100 lies at fraction log 2 / log 4 = 1/2 between k = 50 and 200
    curves = [[4.0, 2.0, 1.0], [6.0, 2.0, 1.0], [5.0, 3.0, 1.0]]
    at = [3.0, 4.0, 4.0]
    better = neural_linear_paired(_paired_result(curves, [v + 1.0 for v in at]))
    np.testing.assert_allclose(better["absolute_differences"], [-1.0, -1.0, -1.0])
    np.testing.assert_allclose(better["relative_differences"], [-1 / 4, -1 / 5, -1 / 5])
    assert better["seeds_better"] == 3
    half = neural_linear_paired(_paired_result(curves, [1.0, 1.0, 1.0]), k=50.0)
    np.testing.assert_allclose(half["relative_differences"], [3.0, 5.0, 4.0])


@pytest.mark.parametrize(
    ("relative", "status"),
    [
        ([-0.2, -0.25, -0.22], Status.CONFIRMED),  # surpassed by more than the margin
        ([0.01, -0.01, 0.02], Status.CONFIRMED),  # matched: well inside the margin
        ([0.5, 0.4, 0.45], Status.REFUTED),  # significantly beyond the margin
        ([-0.3, 0.3, 0.1], Status.INCONCLUSIVE),  # too noisy to decide
    ],
)
def test_matched_or_surpassed_is_non_inferiority(relative, status):
    nl = {"k": 100.0, "relative_differences": relative}
    d = neural_linear_decision(nl)
    assert d.status is status and d.margin == MATCH_MARGIN and d.audit() is None


def test_an_effect_at_the_margin_does_not_confirm():
    moved = at_margin(np.array([-0.2, -0.25, -0.22, -0.1]))
    assert moved.mean() == pytest.approx(MATCH_MARGIN)
    d = neural_linear_decision({"k": 100.0, "relative_differences": moved})
    assert d.status is Status.INCONCLUSIVE


def test_neural_linear_paired_outside_the_grid_makes_no_test():
    out = neural_linear_paired(_paired_result([[1.0, 1.0, 1.0]] * 2, [1.0, 1.0], k_nl=650.0))
    assert out == {"inside": False, "k_neural_linear": 650.0, "k": 650.0}


def test_neural_linear_paired_rejects_a_nan_w2():
    # a matrix square root that lets a NaN through (W2 between Gaussians) must be an ERROR
    curves = [[4.0, np.nan, 1.0], [6.0, 2.0, 1.0]]
    with pytest.raises(ImplementationError, match="not finite"):
        neural_linear_paired(_paired_result(curves, [3.0, 4.0]))
