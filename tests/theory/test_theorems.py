"""Theorems 1–3 as properties (Hypothesis), the proof identity, and a negative control."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from laplace_lab.theory import (
    all_ipvs,
    check_monotonicity,
    check_theorem2,
    check_theorem3,
    exhaustive_extremes,
    ipv,
    random_psd,
    theorem1_decomposition,
)
from laplace_lab.theory.strategies import (
    cpi_matrices,
    dominant_matrices,
    nested_subsets,
    noise_variances,
    prior_precisions,
    psd_matrices,
    sample_sizes,
)


@st.composite
def psd_with_dead_parameters(draw, max_p: int = 9):
    """Λ with exact zero rows/columns ("dead" parameters, e.g. inactive ReLU units) around a
    PSD block of condition ≤ 1e4: Λ_SS is exactly singular whenever S holds a
    dead index."""
    p = draw(st.integers(2, max_p))
    size = draw(st.integers(1, p))
    full_rank = psd_matrices(min_p=size, max_p=size, min_rank=size, max_cond=10.0)
    block = draw(full_rank.filter(lambda B: np.linalg.cond(B) <= 1e4))
    live = np.asarray(draw(st.permutations(range(p))))[:size]
    Lam = np.zeros((p, p))
    Lam[np.ix_(live, live)] = block
    return Lam


@given(psd_matrices(max_p=9, max_cond=1e10), sample_sizes(), noise_variances(), st.data())
def test_theorem1_monotonicity_regression(Lam, n, s2, data):
    S, S_sup = data.draw(nested_subsets(p=Lam.shape[0]))
    v = data.draw(prior_precisions(p=Lam.shape[0]))
    check = check_monotonicity(Lam, S, S_sup, n=n, noise_var=s2, prior_precision=v)
    assert check.holds, check.details


@given(psd_matrices(max_p=8), sample_sizes(), st.data())
def test_theorem1_monotonicity_classification(G_scale, n, data):
    # Λ^C = E[ū ḡ ḡᵀ] from weighted samples, σ0² = 1 (Appendix A.3).
    p = G_scale.shape[0]
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    g = rng.multivariate_normal(np.zeros(p), G_scale, size=50, method="eigh")
    prob = rng.uniform(0.01, 0.99, size=50)
    LamC = (g * (prob * (1 - prob))[:, None]).T @ g / 50
    S, S_sup = data.draw(nested_subsets(p=p))
    v = data.draw(prior_precisions(p=p))
    assert check_monotonicity(LamC, S, S_sup, n=n, prior_precision=v).holds


@given(cpi_matrices(max_p=12), sample_sizes(), noise_variances(), st.floats(0.1, 10.0), st.data())
def test_theorem2_top_and_bottom_k_are_exhaustive_extremes(Lam, n, s2, c, data):
    k = data.draw(st.integers(1, Lam.shape[0]))
    check = check_theorem2(Lam, k, n=n, noise_var=s2, prior_precision=c)
    assert check.premises and check.holds, check.details


@given(dominant_matrices(max_p=10), sample_sizes(), noise_variances(), st.floats(0.1, 10.0))
def test_theorem3_both_parts(case, n, s2, c):
    Lam, k, eps = case
    check = check_theorem3(Lam, k, eps, n=n, noise_var=s2, prior_precision=c)
    assert check.details["part_a"].premises and check.details["part_b"].premises
    assert check.holds, check.details


@given(psd_with_dead_parameters(), st.floats(1.0, 100.0), st.floats(0.1, 10.0), st.data())
def test_theorem1_proof_identity(Lam, n, s2, data):
    p = Lam.shape[0]
    perm = data.draw(st.permutations(range(p)))
    cut = data.draw(st.integers(0, p))
    S, T = perm[:cut], perm[cut:]
    v = data.draw(prior_precisions(p=p))
    dec = theorem1_decomposition(Lam, S, T, n=n, noise_var=s2, prior_precision=v)
    tol = dec.tolerance
    # Conditioning ≤ 1e4 and c·v ≥ 1e-4 keep the bound far below the terms it guards.
    assert tol <= 1e-5 * s2 / n * p
    assert dec.cross_term >= 0.0
    assert dec.schur_term >= -tol
    assert dec.ipv_S + dec.cross_term + dec.schur_term == pytest.approx(dec.ipv_union, abs=tol)


def test_theorem1_proof_identity_to_machine_precision_on_a_well_conditioned_case():
    rng = np.random.default_rng(5)
    Lam = random_psd(8, cond=10, rng=rng)
    dec = theorem1_decomposition(Lam, [0, 3, 5], [1, 7, 2], n=3.0, noise_var=0.5)
    assert dec.cross_term > 0 and dec.schur_term > 0
    assert dec.ipv_S + dec.cross_term + dec.schur_term == pytest.approx(dec.ipv_union, rel=1e-14)


def test_exhaustive_search_matches_brute_force_loop():
    rng = np.random.default_rng(6)
    Lam = random_psd(7, rank=5, rng=rng)
    v = rng.uniform(0.5, 2.0, size=7)
    ext = exhaustive_extremes(Lam, 3, n=15, noise_var=2.0, prior_precision=v)
    brute = {
        S: ipv(Lam, S, n=15, noise_var=2.0, prior_precision=v)
        for S in itertools.combinations(range(7), 3)
    }
    best, worst = max(brute, key=brute.get), min(brute, key=brute.get)
    assert ext.n_subsets == 35
    assert tuple(ext.best) == best and ext.best_ipv == pytest.approx(brute[best], rel=1e-12)
    assert tuple(ext.worst) == worst and ext.worst_ipv == pytest.approx(brute[worst], rel=1e-12)
    subsets, values = all_ipvs(Lam, 3, n=15, noise_var=2.0, prior_precision=v)
    np.testing.assert_allclose(values, [brute[tuple(s)] for s in subsets], rtol=1e-12)


# A counterexample found by the seeded search below (seed 0, first hit), kept as a regression
# test: outside C_PI the k largest diagonal entries need not maximise IPV (the assumption of
# Theorem 2 matters). Rounded to 4 decimals; still PSD and still a counterexample.
COUNTEREXAMPLE = np.array(
    [
        [0.2697, 0.0033, 0.0358, 0.0605, -0.0109],
        [0.0033, 0.3929, -0.0352, 0.1122, -0.1024],
        [0.0358, -0.0352, 0.3710, -0.0445, -0.1017],
        [0.0605, 0.1122, -0.0445, 0.4598, -0.0853],
        [-0.0109, -0.1024, -0.1017, -0.0853, 0.2507],
    ]
)


def search_counterexample(seed: int, tries: int = 2000):
    rng = np.random.default_rng(seed)
    for _ in range(tries):
        Lam = random_psd(5, rng=rng)
        check = check_theorem2(Lam, 2, n=10.0, prior_precision=1.0)
        if not check.holds:
            return Lam, check
    return None, None


def test_negative_control_search_finds_a_counterexample_outside_cpi():
    Lam, check = search_counterexample(0)
    assert Lam is not None, "no counterexample in 2000 random PSD matrices"
    assert not check.premises and not check.holds
    assert check.details["ipv_S_star"] < check.details["max_ipv"] - 10 * check.details["tolerance"]


def test_kept_counterexample_top_k_is_not_optimal():
    # Independent arithmetic: the top-2 diagonal is {3, 1}, yet {2, 3} has the larger IPV
    # (Λ_12 > 0 makes {3, 1} redundant, Λ_23 < 0 makes {2, 3} complementary).
    def dense(S):
        A = COUNTEREXAMPLE[np.ix_(S, S)]
        return 0.1 * np.trace(np.linalg.solve(A + 0.1 * np.eye(2), A))

    assert np.linalg.eigvalsh(COUNTEREXAMPLE)[0] > 0
    assert dense([2, 3]) > dense([3, 1]) + 5e-4
    check = check_theorem2(COUNTEREXAMPLE, 2, n=10.0)
    assert check.details["S_star"] == [3, 1] and check.details["argmax"] == [2, 3]
    assert not check.premises and not check.holds and not check.refutes


def test_theorem_checks_reject_bad_input():
    Lam = random_psd(4, rng=np.random.default_rng(7))
    with pytest.raises(ValueError, match="S must be a subset of S_sup"):
        check_monotonicity(Lam, [0, 3], [0, 1], n=1)
    with pytest.raises(ValueError, match="k must be in \\[1, p\\]"):
        check_theorem2(Lam, 0, n=1)
    with pytest.raises(ValueError, match="k must be in \\[1, p\\]"):
        check_theorem3(Lam, 5, 0.5, n=1)
    with pytest.raises(ValueError, match="prior_precision must be isotropic"):
        check_theorem2(Lam, 2, n=1, prior_precision=np.array([1.0, 2.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="T must be disjoint from S"):
        theorem1_decomposition(Lam, [0, 1], [1, 2], n=1)
    with pytest.raises(ValueError, match="k must be in \\[0, p\\]"):
        exhaustive_extremes(Lam, 5, n=1)
    with pytest.raises(ValueError, match="k must be in \\[0, p\\]"):
        exhaustive_extremes(Lam, -1, n=1)
    with pytest.raises(ValueError, match="exceeds"):
        exhaustive_extremes(np.eye(40), 20, n=1)
    with pytest.raises(ValueError, match="eps must be in"):
        check_theorem3(Lam, 1, 1.5, n=1)
