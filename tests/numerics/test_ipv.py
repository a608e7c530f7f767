"""numerics.ipv agrees with the theory oracle (theory.ipv) on every CPU backend."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from laplace_lab import theory
from laplace_lab.numerics import (
    GGN,
    discrepancy,
    empirical_pv,
    ggn_discrepancy,
    ggn_ipv,
    ggn_ipv_path,
    ipv,
    ipv_path,
)
from tests.numerics.conftest import host, random_problem

RTOL = 1e-10


@settings(max_examples=min(settings.default.max_examples, 25))
@given(
    seed=st.integers(0, 2**32 - 1),
    p=st.integers(1, 9),
    rank=st.integers(0, 9),
    n=st.floats(1.0, 1e4),
    noise_var=st.floats(0.01, 10.0),
)
def test_ipv_matches_theory(seed, p, rank, n, noise_var):
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((p, min(rank, p)))
    Lam = B @ B.T  # PSD, possibly singular
    V = rng.uniform(0.2, 3.0, p)
    order = rng.permutation(p)
    kw = {"n": n, "noise_var": noise_var, "prior_precision": V}
    ref = theory.ipv_path(Lam, order, **kw)
    np.testing.assert_allclose(ipv_path(Lam, order, **kw), ref, rtol=RTOL, atol=1e-14)
    S = order[: max(1, p // 2)]
    assert ipv(Lam, S, **kw) == pytest.approx(theory.ipv(Lam, S, **kw), rel=RTOL, abs=1e-14)
    assert discrepancy(Lam, S, **kw) == pytest.approx(
        theory.discrepancy(Lam, S, **kw), rel=1e-8, abs=1e-12
    )


def test_ipv_on_every_backend(backend):
    rng = np.random.default_rng(0)
    B = rng.standard_normal((6, 4))
    Lam = B @ B.T
    order = [5, 0, 3, 1]
    kw = {"n": 50.0, "noise_var": 0.5, "prior_precision": 2.0}
    out = host(ipv_path(backend(Lam), order, **kw))
    np.testing.assert_allclose(out, theory.ipv_path(Lam, order, **kw), rtol=RTOL)
    assert ipv(backend(Lam), [], **kw) == 0.0


@pytest.mark.parametrize("which", ["regression", "binary"])
def test_ggn_ipv_is_theory_ipv_of_the_empirical_lambda(backend, which):
    """IPV̂ from the GGN = theory.ipv with Λ̂ = σ0² J_wᵀJ_w/N = mean training PV(S)."""
    rng = np.random.default_rng(1)
    N, p = 30, 12
    J, V = random_problem(rng, N, p, spread=0.3)
    if which == "regression":
        s2 = 0.3
        ggn = GGN.regression(backend(J), noise_var=s2, prior_precision=backend(V))
    else:
        s2 = 1.0
        ggn = GGN.binary(backend(J), backend(rng.standard_normal(N)), prior_precision=backend(V))
    Jw = host(ggn.Jw)
    Lam = s2 * Jw.T @ Jw / N
    kw = {"n": N, "noise_var": s2, "prior_precision": V}
    order = rng.permutation(p)
    np.testing.assert_allclose(
        host(ggn_ipv_path(ggn, order)), theory.ipv_path(Lam, order, **kw), rtol=RTOL
    )
    S = order[:5]
    assert ggn_ipv(ggn, S) == pytest.approx(theory.ipv(Lam, S, **kw), rel=RTOL)
    assert ggn_ipv(ggn) == pytest.approx(theory.ipv_full(Lam, **kw), rel=RTOL)
    assert ggn_discrepancy(ggn, S) == pytest.approx(theory.discrepancy(Lam, S, **kw), rel=1e-8)
    train = backend(s2**0.5 * Jw)  # √σ0² J_w: the training gradients (ū-weighted if binary)
    assert empirical_pv(ggn, train, S) == pytest.approx(theory.ipv(Lam, S, **kw), rel=RTOL)
    assert empirical_pv(ggn, train) == pytest.approx(theory.ipv_full(Lam, **kw), rel=1e-9)


def test_ggn_ipv_full_uses_woodbury_when_p_exceeds_n():
    rng = np.random.default_rng(2)
    N, p = 6, 40
    J, V = random_problem(rng, N, p)
    ggn = GGN.regression(J, noise_var=2.0, prior_precision=V)
    Lam = J.T @ J / N
    kw = {"n": N, "noise_var": 2.0, "prior_precision": V}
    assert ggn_ipv(ggn) == pytest.approx(theory.ipv_full(Lam, **kw), rel=RTOL)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: ipv(np.ones((2, 3)), [0], n=1.0), "Lam"),
        (lambda: ipv(np.array([[1.0, 2.0], [0.0, 1.0]]), [0], n=1.0), "symmetric"),
        (lambda: ipv(np.array([[1.0, np.nan], [np.nan, 1.0]]), [0], n=1.0), "Lam"),
        (lambda: ipv(-np.eye(2) * 10, [0, 1], n=1.0), "positive semi-definite"),
        (lambda: ipv(np.eye(2), [0, 0], n=1.0), "S"),
        (lambda: ipv(np.eye(2), [2], n=1.0), "S"),
        (lambda: ipv_path(np.eye(2), [1, 1], n=1.0), "order"),
        (lambda: ipv(np.eye(2), [0], n=0.0), "n"),
        (lambda: ipv(np.eye(2), [0], n=1.0, noise_var=-1.0), "noise_var"),
        (lambda: ipv(np.eye(2), [0], n=1.0, prior_precision=[1.0, 0.0]), "prior_precision"),
        (lambda: ggn_ipv(np.eye(2), [0]), "ggn"),
    ],
)
def test_bad_input(call, name):
    with pytest.raises((ValueError, TypeError), match=name):
        call()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scale", [1e-8, 1.0, 1e6])
def test_ipv_keeps_its_digits_when_lambda_is_far_below_or_above_the_prior(dtype, scale):
    """IPV ≈ (σ0²/N)·tr(Λ/cV) when Λ ≪ cV: the complement form k − c·tr(A⁻¹V) would round
    to 0 there; each term is taken in the form that keeps its digits. References are exact
    for the input as rounded to ``dtype``."""
    rng = np.random.default_rng(0)
    B = rng.standard_normal((6, 6))
    Lam = (scale * B @ B.T / 6).astype(dtype)
    kw = {"n": 10.0, "noise_var": 1.0, "prior_precision": rng.uniform(0.5, 2.0, 6)}
    order = [0, 2, 3, 5]
    want = theory.ipv_path(Lam.astype(np.float64), order, **kw)
    rtol = float(50 * np.finfo(dtype).eps)
    np.testing.assert_allclose(ipv_path(Lam, order, **kw), want, rtol=rtol)
    # N' = 4 < p = 6 (Woodbury): IPV̂_full = (σ0²/N) Σ_j s_j²/(s_j² + σ0² v) over the
    # singular values s_j of J (Ω = JᵀJ/σ0² + vI), accurate to eps by the SVD
    J = (np.sqrt(scale) * rng.standard_normal((4, 6))).astype(dtype)
    s2, v = 0.5, 2.0
    ggn = GGN.regression(J, noise_var=s2, prior_precision=v)
    sv2 = np.linalg.svd(J.astype(np.float64), compute_uv=False) ** 2
    assert ggn_ipv(ggn) == pytest.approx(s2 / 4 * np.sum(sv2 / (sv2 + s2 * v)), rel=rtol)
    lam_hat = s2 * host(ggn.Jw).astype(np.float64).T @ host(ggn.Jw).astype(np.float64) / 4
    want_s = theory.ipv(lam_hat, order, n=4, noise_var=s2, prior_precision=v)
    assert ggn_ipv(ggn, order) == pytest.approx(want_s, rel=rtol)
