"""GGN: every operator equals its dense reference, on every CPU backend.

The three likelihoods' precisions are in docs/mathematics.md, "Gauss–Newton precision".
"""

from __future__ import annotations

import numpy as np
import pytest

from laplace_lab.numerics import GGN, SubnetProblem, select
from laplace_lab.numerics.ggn import DENSE_MAX_P
from tests.numerics.conftest import host, random_problem, traced_peak

RTOL = 1e-10  # float64
RTOL32 = 2e-5  # float32: ~100 eps32 relative to max|Ω| for these well-scaled problems


def _softmax(F: np.ndarray) -> np.ndarray:
    E = np.exp(F - F.max(axis=1, keepdims=True))
    return E / E.sum(axis=1, keepdims=True)


def dense_references(rng: np.random.Generator):
    """(name, builder(backend) -> GGN, Ω dense, scores) for the three likelihoods."""
    N, C, p = 9, 3, 13
    J, V = random_problem(rng, N, p)
    s2 = 0.7
    f = 2.0 * rng.standard_normal(N)
    J3 = rng.standard_normal((N, C, p))
    F = rng.standard_normal((N, C))
    omega_reg = J.T @ J / s2 + np.diag(V)
    prob = 1.0 / (1.0 + np.exp(-f))
    w = prob * (1.0 - prob)
    omega_bin = (J * w[:, None]).T @ J + np.diag(V)
    pi = _softmax(F)
    omega_mc = np.diag(V).copy()
    score_mc = np.zeros(p)
    for n in range(N):
        H = np.diag(pi[n]) - np.outer(pi[n], pi[n])  # exact: no jitter
        omega_mc += J3[n].T @ H @ J3[n]
        score_mc += np.einsum("ci,cd,di->i", J3[n], H, J3[n]) / N
    return [
        (
            "regression",
            lambda b: GGN.regression(b(J), noise_var=s2, prior_precision=b(V)),
            omega_reg,
            (J**2).mean(axis=0),
        ),
        (
            "binary",
            lambda b: GGN.binary(b(J), b(f), prior_precision=b(V)),
            omega_bin,
            (w[:, None] * J**2).mean(axis=0),
        ),
        (
            "multiclass",
            lambda b: GGN.multiclass(b(J3), b(F), prior_precision=b(V)),
            omega_mc,
            score_mc,
        ),
    ]


@pytest.mark.parametrize("which", ["regression", "binary", "multiclass"])
def test_operators_equal_dense_reference(backend, which):
    rng = np.random.default_rng(0)
    _, build, omega, scores = next(c for c in dense_references(rng) if c[0] == which)
    ggn = build(backend)
    p = omega.shape[0]
    tol = RTOL * np.abs(omega).max()
    np.testing.assert_allclose(host(ggn.dense()), omega, rtol=0, atol=tol)
    np.testing.assert_allclose(host(ggn.diagonal()), np.diag(omega), rtol=0, atol=tol)
    np.testing.assert_allclose(host(ggn.scores()), scores, rtol=RTOL, atol=RTOL * scores.max())
    S = [7, 2, 11, 0]
    np.testing.assert_allclose(host(ggn.submatrix(S)), omega[np.ix_(S, S)], rtol=0, atol=tol)
    np.testing.assert_allclose(host(ggn.columns(S)), omega[:, S], rtol=0, atol=tol)
    v = rng.standard_normal((p, 2))
    np.testing.assert_allclose(host(ggn.matvec(backend(v))), omega @ v, rtol=0, atol=tol * p)
    np.testing.assert_allclose(host(ggn.matvec(backend(v[:, 0]))), omega @ v[:, 0], atol=tol * p)
    Jw = host(ggn.Jw)
    np.testing.assert_allclose(Jw.T @ Jw + np.diag(host(ggn.prior_precision)), omega, atol=tol)
    D = 1.0 / host(ggn.prior_precision)
    np.testing.assert_allclose(host(ggn.gram()), (Jw * D) @ Jw.T, rtol=RTOL, atol=tol)


def test_float32_within_documented_tolerance(backend):
    rng = np.random.default_rng(1)
    J, _V = random_problem(rng, 12, 30, spread=0.3)
    ggn = GGN.regression(backend(J.astype(np.float32)), noise_var=0.5, prior_precision=1.0)
    omega = J.T @ J / 0.5 + np.eye(30)
    out = host(ggn.submatrix(np.arange(30)))
    assert out.dtype == np.float32
    err = np.abs(out - omega).max() / np.abs(omega).max()
    assert err < RTOL32
    assert err > 0  # float32 really was used: the float64 answer is not reproduced exactly


def test_binary_weights_of_saturated_logits_stay_positive_in_float32():
    """p(1 − p) rounds to 0 in float32 once p rounds to 1 (f ≳ 17); σ(f)σ(−f) does not."""
    f = np.array([0.0, 5.0, 20.0, -30.0, 60.0])
    J = np.ones((5, 1))
    want = np.exp(-np.abs(f)) / (1 + np.exp(-np.abs(f))) ** 2  # float64, exact to rounding
    for dtype in (np.float32, np.float64):
        ggn = GGN.binary(J.astype(dtype), f.astype(dtype), prior_precision=1.0)
        w = np.asarray(ggn.Jw[:, 0], dtype=np.float64) ** 2
        np.testing.assert_allclose(w, want, rtol=10 * np.finfo(dtype).eps)


def test_scores_keep_their_digits_when_the_data_term_is_far_below_the_prior():
    """Gradient-Laplace's ranking must not come from diag(Ω) − V, which rounds colsum(J_w²)
    ≪ V to a few digits (or to 0)."""
    rng = np.random.default_rng(0)
    J = 1e-9 * rng.standard_normal((20, 7))
    ggn = GGN.regression(J, noise_var=0.5, prior_precision=1.0)
    np.testing.assert_allclose(ggn.scores(), 0.5 * (J**2).sum(0) / 20 / 0.5, rtol=1e-14)
    np.testing.assert_array_equal(
        select("gradient_laplace", SubnetProblem(ggn), 7), np.argsort(-(J**2).sum(0))
    )


def test_scalar_prior_and_prior_vector_agree():
    rng = np.random.default_rng(2)
    J, _ = random_problem(rng, 5, 8)
    a = GGN.regression(J, noise_var=2.0, prior_precision=3.0)
    b = GGN.regression(J, noise_var=2.0, prior_precision=np.full(8, 3.0))
    np.testing.assert_array_equal(a.dense(), b.dense())
    assert a.n_data == 5 and a.likelihood == "regression" and a.noise_var == 2.0


def test_multiclass_rows_and_positive_weights():
    """J_w has N·C rows and Σ_c (W_nᵀJ_n)ᵀ(W_nᵀJ_n) = J_nᵀ H_n J_n even at saturated softmax."""
    rng = np.random.default_rng(3)
    J3 = rng.standard_normal((4, 5, 6))
    F = np.array([[50.0, 0, 0, 0, 0], [0, 0, 0, 0, 0], [-30, 30, 0, 1, 2], [1, 2, 3, 4, 5]])
    ggn = GGN.multiclass(J3, F, prior_precision=1.0, eps=0.0)
    assert ggn.Jw.shape == (20, 6) and ggn.n_data == 4
    pi = _softmax(F)
    ref = np.eye(6)
    for n in range(4):
        ref += J3[n].T @ (np.diag(pi[n]) - np.outer(pi[n], pi[n])) @ J3[n]
    np.testing.assert_allclose(ggn.dense(), ref, rtol=0, atol=1e-12 * np.abs(ref).max())


@pytest.mark.parametrize(
    ("build", "name"),
    [
        (lambda: GGN.regression(np.ones(3), noise_var=1.0, prior_precision=1.0), "J"),
        (lambda: GGN.regression(np.zeros((0, 3)), noise_var=1.0, prior_precision=1.0), "J"),
        (lambda: GGN.regression([[1.0, np.nan]], noise_var=1.0, prior_precision=1.0), "J"),
        (lambda: GGN.regression([[1.0, np.inf]], noise_var=1.0, prior_precision=1.0), "J"),
        (lambda: GGN.regression(np.ones((2, 3)), noise_var=0.0, prior_precision=1.0), "noise_var"),
        (lambda: GGN.regression(np.ones((2, 3)), noise_var=1.0, prior_precision=0.0), "prior"),
        (
            lambda: GGN.regression(np.ones((2, 3)), noise_var=1.0, prior_precision=[1, -1, 1]),
            "prior",
        ),
        (lambda: GGN.regression(np.ones((2, 3)), noise_var=1.0, prior_precision=[1, 1]), "prior"),
        (lambda: GGN.binary(np.ones((2, 3)), np.zeros(3), prior_precision=1.0), "logits"),
        (lambda: GGN.binary(np.ones((2, 3)), [0.0, np.nan], prior_precision=1.0), "logits"),
        (lambda: GGN.multiclass(np.ones((2, 3)), np.zeros((2, 3)), prior_precision=1.0), "J"),
        (
            lambda: GGN.multiclass(np.ones((2, 3, 4)), np.zeros((2, 4)), prior_precision=1.0),
            "logits",
        ),
        (
            lambda: GGN.multiclass(
                np.ones((2, 3, 4)), np.zeros((2, 3)), prior_precision=1, eps=-1
            ),
            "eps",
        ),
    ],
)
def test_bad_construction_raises_naming_the_argument(build, name):
    with pytest.raises(ValueError, match=name):
        build()


def test_bad_index_sets_raise():
    ggn = GGN.regression(np.ones((2, 5)), noise_var=1.0, prior_precision=1.0)
    for S in ([1, 1], [0, 5], [-1], []):
        with pytest.raises(ValueError, match="S"):
            ggn.submatrix(S)
    with pytest.raises(ValueError, match="idx"):
        ggn.columns([2, 2])
    with pytest.raises(ValueError, match="v must"):
        ggn.matvec(np.ones(4))
    with pytest.raises(TypeError, match="J"):
        GGN.regression(np.ones((2, 2), dtype=complex), noise_var=1.0, prior_precision=1.0)


def test_dense_refuses_large_p():
    ggn = GGN(np.ones((1, DENSE_MAX_P + 1)), 1.0)
    with pytest.raises(ValueError, match="DENSE_MAX_P"):
        ggn.dense()


def test_prior_and_logits_from_another_backend(backend):
    """V and the logits may come as NumPy arrays; they move to J's backend and dtype."""
    rng = np.random.default_rng(4)
    J, V = random_problem(rng, 4, 6)
    f = rng.standard_normal(4)
    ggn = GGN.binary(backend(J), f, prior_precision=V)
    prob = 1.0 / (1.0 + np.exp(-f))
    ref = (J * (prob * (1 - prob))[:, None]).T @ J + np.diag(V)
    np.testing.assert_allclose(host(ggn.dense()), ref, rtol=1e-12)
    assert type(ggn.prior_precision) is type(ggn.Jw)


@pytest.mark.parametrize(
    ("noise_var", "overwrite"), [(1.0, False), (0.3, True)], ids=["unit-noise", "in-place"]
)
def test_a_regression_ggn_holds_one_jacobian(noise_var, overwrite):
    """With σ0² = 1, or scaled in place, J is the GGN's J_w: the peak memory of building the
    GGN (J itself included) stays within 1.1 × J, where a scaled copy would need 2 × J."""
    J = np.random.default_rng(0).standard_normal((1000, 4000))
    expected = J / noise_var**0.5
    ggn, peak = traced_peak(
        lambda: GGN.regression(J, noise_var=noise_var, prior_precision=2.0, overwrite_J=overwrite)
    )
    assert (J.nbytes + peak) / J.nbytes <= 1.1
    assert np.shares_memory(ggn.Jw, J)
    np.testing.assert_allclose(ggn.Jw, expected, rtol=1e-15)
    np.testing.assert_allclose(ggn.diagonal(), np.sum(expected**2, axis=0) + 2.0, rtol=1e-12)


def test_a_scaled_copy_of_j_that_cannot_fit_is_refused_by_name(monkeypatch):
    import laplace_lab.numerics.backend as backend

    J = np.ones((100, 50))
    monkeypatch.setattr(backend, "available_memory", lambda: J.nbytes // 2)
    with pytest.raises(MemoryError, match=r"J/σ0 \(a copy of J, shape \(100, 50\).*overwrite_J"):
        GGN.regression(J, noise_var=0.3, prior_precision=1.0)
    kept = GGN.regression(J, noise_var=0.25, prior_precision=1.0, overwrite_J=True)
    assert kept.Jw is J and float(J[0, 0]) == 2.0  # scaled in place: 1 / √0.25
    with pytest.raises(TypeError, match="overwrite_J must be a bool"):
        GGN.regression(J, noise_var=0.3, prior_precision=1.0, overwrite_J=1)
    J.setflags(write=False)
    with pytest.raises(ValueError, match="overwrite_J=True needs a writeable J"):
        GGN.regression(J, noise_var=0.3, prior_precision=1.0, overwrite_J=True)


def test_multiclass_is_exact_by_default_and_a_jitter_adds_eps_times_the_jacobian_gram():
    """ε = 0 by default (the softmax Hessian as it is); an explicit ε adds ε Σ_n J_nᵀJ_n."""
    rng = np.random.default_rng(3)
    J, F = rng.standard_normal((7, 4, 6)), 3.0 * rng.standard_normal((7, 4))
    pi = _softmax(F)
    exact = sum(J[n].T @ (np.diag(pi[n]) - np.outer(pi[n], pi[n])) @ J[n] for n in range(7))
    np.testing.assert_allclose(
        GGN.multiclass(J, F, prior_precision=1.0).dense() - np.eye(6), exact, atol=1e-12
    )
    jittered = GGN.multiclass(J, F, prior_precision=1.0, eps=1e-6).dense() - np.eye(6)
    np.testing.assert_allclose(
        jittered - exact, 1e-6 * np.einsum("ncp,ncq->pq", J, J), rtol=0, atol=1e-12
    )
