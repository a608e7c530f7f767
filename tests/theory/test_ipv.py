"""IPV (eq. 8 / eq. 18) against dense references, closed forms and Monte Carlo."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from laplace_lab.theory import discrepancy, ipv, ipv_classification, ipv_full, ipv_path, random_psd
from laplace_lab.theory.strategies import (
    noise_variances,
    prior_precisions,
    psd_matrices,
    sample_sizes,
)
from laplace_lab.theory.theorems import roundoff_tolerance


def dense_ipv(Lam, S, n, noise_var=1.0, v=1.0):
    """eq. (18) literally: (σ0²/N) tr((Λ_SS + (σ0²/N)V_SS)⁻¹ Λ_SS) with a general solve."""
    S = np.asarray(S)
    c = noise_var / n
    V = np.diag(np.broadcast_to(np.asarray(v, float), (Lam.shape[0],))[S])
    A = Lam[np.ix_(S, S)]
    return c * np.trace(np.linalg.solve(A + c * V, A))


def test_ipv_matches_the_literal_trace_form():
    rng = np.random.default_rng(0)
    Lam = random_psd(7, cond=1e3, rng=rng)
    v = rng.uniform(0.5, 3.0, size=7)
    for S in ([3], [0, 5, 2], [6, 1, 4, 3], list(range(7))):
        got = ipv(Lam, S, n=40, noise_var=0.7, prior_precision=v)
        assert got == pytest.approx(dense_ipv(Lam, S, 40, 0.7, v), rel=1e-12)


def test_diagonal_lambda_has_the_closed_form():
    # Λ = diag(λ), V = cI: IPV(S) = (σ0²/N) Σ_{i∈S} λ_i / (λ_i + σ0² c / N).
    lam = np.array([0.3, 2.0, 0.01, 5.0])
    n, s2, prior = 25.0, 0.5, 3.0
    expected = s2 / n * sum(lam[i] / (lam[i] + s2 * prior / n) for i in (0, 2, 3))
    assert ipv(np.diag(lam), [3, 0, 2], n=n, noise_var=s2, prior_precision=prior) == (
        pytest.approx(expected, rel=1e-14)
    )


def test_empty_subset_and_full_and_discrepancy():
    Lam = random_psd(5, rng=np.random.default_rng(1))
    assert ipv(Lam, [], n=10) == 0.0
    full = ipv_full(Lam, n=10)
    assert full == pytest.approx(dense_ipv(Lam, range(5), 10), rel=1e-12)
    assert discrepancy(Lam, [1, 3], n=10) == pytest.approx(full - ipv(Lam, [1, 3], n=10))
    assert discrepancy(Lam, range(5), n=10) == pytest.approx(0.0, abs=1e-15)


def mp_ipv(Lam, S, n, noise_var, v):
    """IPV (eq. 18) of the float64 input in 60-digit arithmetic (mpmath): the exact value."""
    with mpmath.workdps(60):
        c = mpmath.mpf(noise_var) / mpmath.mpf(n)
        A = mpmath.matrix([[mpmath.mpf(Lam[i, j]) for j in S] for i in S])
        Ac = A + mpmath.diag([c * mpmath.mpf(v[i]) for i in S])
        M = mpmath.inverse(Ac) * A
        return float(c * sum(M[i, i] for i in range(len(S))))


@given(psd_matrices(max_p=7, max_cond=1e10), sample_sizes(), noise_variances(), st.data())
def test_ipv_path_is_within_its_roundoff_bound_of_the_exact_value(Lam, n, s2, data):
    # The reference is independent of the code (60-digit Gauss–Jordan), and the assertion
    # also checks that roundoff_tolerance is an honest bound on the float64 error.
    p = Lam.shape[0]
    v = data.draw(prior_precisions(p=p))
    order = np.array(data.draw(st.permutations(range(p))))
    path = ipv_path(Lam, order, n=n, noise_var=s2, prior_precision=v)
    for k in range(1, p + 1):
        exact = mp_ipv(Lam, order[:k], n, s2, v)
        tol = roundoff_tolerance(Lam, order[:k], s2 / n, s2 / n, v)
        assert abs(path[k - 1] - exact) <= tol, (k, path[k - 1], exact, tol)
        single = ipv(Lam, order[:k], n=n, noise_var=s2, prior_precision=v)
        assert abs(single - exact) <= tol, (k, single, exact, tol)
    assert np.all(np.diff(path) >= 0)  # sums of non-negative terms
    # 0 ≤ IPV(S) ≤ (σ0²/N)·|S|, since tr((A + cV)⁻¹A) counts eigenvalues in [0, 1).
    assert np.all(path >= -1e-12 * s2 / n)
    assert np.all(path <= s2 / n * np.arange(1, p + 1) * (1 + 1e-12))


def test_trace_form_agrees_with_monte_carlo_expectation():
    # eq. (8): IPV(S) = (σ0²/N) E[ḡ_Sᵀ (Λ_SS + cV_SS)⁻¹ ḡ_S] with ḡ ~ N(0, Λ).
    rng = np.random.default_rng(2)
    p, n, s2 = 6, 30.0, 0.8
    Lam = random_psd(p, cond=50, rng=rng)
    S = np.array([4, 1, 3])
    c = s2 / n
    M = np.linalg.inv(Lam[np.ix_(S, S)] + c * np.eye(S.size))
    g = rng.multivariate_normal(np.zeros(p), Lam, size=200_000)[:, S]
    q = c * np.einsum("mi,ij,mj->m", g, M, g)
    standard_error = q.std(ddof=1) / np.sqrt(q.size)
    assert abs(q.mean() - ipv(Lam, S, n=n, noise_var=s2)) < 5 * standard_error


def test_classification_ipv_is_the_weighted_monte_carlo_expectation():
    # Appendix A.3: IPV_C(S) = (1/N) E[ū ḡ_Sᵀ (Λ^C_SS + V_SS/N)⁻¹ ḡ_S], Λ^C = E[ū ḡ ḡᵀ].
    rng = np.random.default_rng(3)
    p, n, m = 5, 20.0, 200_000
    x = rng.standard_normal((m, p))
    g = x * np.array([1.0, 0.5, 2.0, 0.3, 1.2])
    prob = 1 / (1 + np.exp(-x @ np.array([1.0, -0.5, 0.3, 0.0, 2.0])))
    u = prob * (1 - prob)
    LamC = (g * u[:, None]).T @ g / m
    S = np.array([0, 2, 4])
    M = np.linalg.inv(LamC[np.ix_(S, S)] + np.eye(S.size) / n)
    q = u * np.einsum("mi,ij,mj->m", g[:, S], M, g[:, S]) / n
    # LamC is the empirical Λ^C of these very samples, so the mean is exact up to roundoff.
    assert ipv_classification(LamC, S, n=n) == pytest.approx(q.mean(), rel=1e-10)


def test_vector_prior_precision_matters():
    Lam = random_psd(4, rng=np.random.default_rng(4))
    a = ipv(Lam, [0, 1], n=2, prior_precision=np.array([1.0, 1.0, 1.0, 1.0]))
    b = ipv(Lam, [0, 1], n=2, prior_precision=np.array([100.0, 100.0, 1.0, 1.0]))
    assert b < a
    assert a == pytest.approx(ipv(Lam, [0, 1], n=2, prior_precision=1.0), rel=1e-15)


GOOD = np.array([[2.0, 0.5], [0.5, 1.0]])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"Lam": np.ones((2, 3))}, "Lam must be a non-empty square"),
        ({"Lam": np.array([[1.0, 0.2], [0.3, 1.0]])}, "Lam must be symmetric"),
        ({"Lam": np.array([[1.0, np.nan], [np.nan, 1.0]])}, "Lam must be finite"),
        ({"Lam": np.array([[1.0, np.inf], [np.inf, 1.0]])}, "Lam must be finite"),
        ({"Lam": np.array([[1.0, 2.0], [2.0, 1.0]])}, "Lam must be positive semi-definite"),
        ({"n": 0}, "n must be positive"),
        ({"n": -3.0}, "n must be positive"),
        ({"n": float("nan")}, "n must be positive"),
        ({"noise_var": 0.0}, "noise_var must be positive"),
        ({"prior_precision": 0.0}, "prior_precision must be positive"),
        ({"prior_precision": np.array([1.0, -1.0])}, "prior_precision must be positive"),
        ({"prior_precision": np.array([1.0, 1.0, 1.0])}, "prior_precision must be a scalar"),
        ({"S": [0, 0]}, "S must not contain duplicate"),
        ({"S": [0, 2]}, r"S has indices outside \[0, 2\)"),
        ({"S": [-1]}, r"S has indices outside \[0, 2\)"),
        ({"n": 1e-310}, "noise_var / n \\* prior_precision must be positive and finite"),
        ({"n": 1e-10, "prior_precision": 1e308}, "must be positive and finite in float64"),
        ({"Lam": np.ones((2, 2)), "S": [0, 1], "n": 1e17}, "numerically singular"),
    ],
)
def test_bad_input_names_the_argument(kwargs, match):
    args = {"Lam": GOOD, "S": [0], "n": 10, "noise_var": 1.0, "prior_precision": 1.0} | kwargs
    Lam, S = args.pop("Lam"), args.pop("S")
    with pytest.raises(ValueError, match=match):
        ipv(Lam, S, **args)


def test_bad_types_raise_type_errors():
    with pytest.raises(TypeError, match="S must contain integer indices"):
        ipv(GOOD, [0.5], n=1)
    with pytest.raises(TypeError, match="S must contain integer indices"):
        ipv(GOOD, [0.0, 1.0], n=1)
    with pytest.raises(TypeError, match="prior_precision must be a real numeric array"):
        ipv(GOOD, [0], n=1, prior_precision="2")
    with pytest.raises(TypeError, match="prior_precision must be a real numeric array"):
        ipv(GOOD, [0], n=1, prior_precision=True)
    with pytest.raises(TypeError, match="prior_precision must be a real numeric array"):
        ipv(GOOD, [0], n=1, prior_precision=1 + 1j)
    with pytest.raises(ValueError, match="Lam must be a rectangular array"):
        ipv([[1.0, 0.0], [0.0]], [0], n=1)
    with pytest.raises(ValueError, match="S must be a 1-D sequence"):
        ipv(GOOD, np.zeros((0, 3)), n=1)
    with pytest.raises(TypeError, match="n must be a real number"):
        ipv(GOOD, [0], n="10")
    with pytest.raises(TypeError, match="Lam must be a real numeric array"):
        ipv(np.array([["a", "b"], ["c", "d"]]), [0], n=1)
    with pytest.raises(ValueError, match="order must not contain duplicate"):
        ipv_path(GOOD, [1, 1], n=1)
