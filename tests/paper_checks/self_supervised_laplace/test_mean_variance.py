"""LA on the mean + log-variance network of self-supervised-laplace App. C.1 eq. (37)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

import torch

from laplace_lab.numerics.network_ssla import NormalPredictive, gaussian_scores
from laplace_lab.paper_checks.self_supervised_laplace.experiments.curvature import (
    CURVATURES,
    LEVELS,
)
from laplace_lab.paper_checks.self_supervised_laplace.experiments.mean_variance import (
    MeanVarianceCurvature,
    MeanVarianceFit,
    fit_mean_variance,
    gaussian_nll,
    la_coverage,
    output_hessian_root,
)


def test_gaussian_nll_is_app_c3_per_point():
    out = torch.tensor([[0.5, np.log(2.0)], [-1.0, 0.0]])
    y = torch.tensor([1.5, 0.0])
    expected = 0.5 * np.array([np.log(2.0) + 1.0 / 2.0, 0.0 + 1.0])
    np.testing.assert_allclose(gaussian_nll(out, y).numpy(), expected, rtol=1e-6)


def test_output_hessian_root_squares_to_the_gaussian_fisher_in_mean_and_log_variance():
    out = np.array([[0.3, np.log(0.25)], [1.0, 2.0]])
    R = output_hessian_root(out)
    H = R @ np.swapaxes(R, 1, 2)
    np.testing.assert_allclose(H[0], np.diag([4.0, 0.5]), rtol=1e-12)
    np.testing.assert_allclose(H[1], np.diag([np.exp(-2.0), 0.5]), rtol=1e-12)


@pytest.fixture(scope="module")
def small_fit():
    return fit_mean_variance(rng=0, n_train=60, n_test=40, epochs=15, batch_size=30)


def test_dense_la_coverage_matches_a_direct_inverse_of_the_ggn(small_fit):
    f = small_fit
    lam = 2.0
    R = output_hessian_root(f.out_train)
    Lam = R @ np.swapaxes(R, 1, 2)
    p = f.J.shape[2]
    omega = np.einsum("nap,nab,nbq->pq", f.J, Lam, f.J) + lam * np.eye(p)
    g = f.G[:, 0, :]
    v = np.einsum("mp,pq,mq->m", g, np.linalg.inv(omega), g)
    s2 = np.exp(f.out_test[:, 1])
    scores = gaussian_scores(
        NormalPredictive(f.out_test[:, 0], s2 + v), f.data.y_test, levels=LEVELS
    )
    direct = np.array([scores[f"coverage_{round(100 * lv)}"] for lv in LEVELS])
    res = la_coverage(f, prior_precision=lam)
    np.testing.assert_allclose(res.coverage["DENSE"], direct)
    assert res.mean_epistemic["DENSE"] == pytest.approx(float(np.mean(v)), rel=1e-8)
    # every curvature adds a non-negative epistemic variance to the MAP's own predictive
    for c in CURVATURES:
        assert np.all(res.coverage[c] >= res.plugin - 1e-12)
        assert res.mean_epistemic[c] >= 0.0


def test_assla_log_det_ratio_is_the_rank_two_determinant_lemma(small_fit):
    from laplace_lab.numerics.ggn import GGN
    from laplace_lab.paper_checks.self_supervised_laplace.experiments.mean_variance import (
        _dense_log_det_ratio,
    )

    f = small_fit
    lam = 2.0
    R = output_hessian_root(f.out_train)
    Jw = np.einsum("nab,nap->nbp", R, f.J).reshape(-1, f.J.shape[2])
    ggn = GGN.regression(Jw, noise_var=1.0, prior_precision=lam)
    omega = Jw.T @ Jw + lam * np.eye(Jw.shape[1])
    Rs = output_hessian_root(f.out_test[:3])
    direct = []
    for i in range(3):
        W = Rs[i].T @ f.G[i]
        direct.append(
            0.5 * np.linalg.slogdet(omega)[1] - 0.5 * np.linalg.slogdet(omega + W.T @ W)[1]
        )
    got = _dense_log_det_ratio(ggn, f.G[:3], f.out_test[:3])
    np.testing.assert_allclose(got, direct, rtol=1e-8, atol=1e-10)


def test_assla_normalises_to_the_plug_in_predictive(small_fit):
    res = la_coverage(small_fit, prior_precision=2.0)
    # eq. (17)'s determinant term is constant in ŷ: ASSLA is N(μ̂, σ̂²) up to the grid
    np.testing.assert_allclose(res.assla, res.plugin, atol=1.5 / res.n_test)


def _toy(seed: int, n: int = 96):
    from laplace_lab.networks.data import heteroscedastic_toy

    return heteroscedastic_toy(n + 32, test_fraction=32 / (n + 32), rng=seed)


def _pair(seed: int):
    return tuple(np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))


def test_batched_trainer_is_the_one_network_trainer_for_one_network():
    from laplace_lab.paper_checks.self_supervised_laplace.experiments.mean_variance import (
        fit_mean_variance_batch,
        fit_mean_variance_to,
    )

    ds = _toy(3)
    one = fit_mean_variance_to(ds, rng=_pair(7), epochs=3, batch_size=32)
    (batch,) = fit_mean_variance_batch([ds], rngs=[_pair(7)], epochs=3, batch_size=32)
    np.testing.assert_allclose(batch.out_train, one.out_train, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(batch.out_test, one.out_test, rtol=1e-4, atol=1e-5)
    for a, b in zip(batch.model.parameters(), one.model.parameters(), strict=True):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-5)


def test_networks_of_a_batch_are_independent():
    from laplace_lab.paper_checks.self_supervised_laplace.experiments.mean_variance import (
        fit_mean_variance_batch,
    )

    first = fit_mean_variance_batch([_toy(1), _toy(2)], rngs=[_pair(1), _pair(2)], epochs=2)
    other = fit_mean_variance_batch([_toy(1), _toy(5)], rngs=[_pair(1), _pair(2)], epochs=2)
    assert np.array_equal(first[0].out_train, other[0].out_train)
    assert np.array_equal(first[0].J, other[0].J)
    assert not np.array_equal(first[1].out_train, other[1].out_train)


def test_a_prior_precision_beside_a_computed_curvature_is_refused():
    fit = object.__new__(MeanVarianceFit)  # refused before any field is read
    computed = MeanVarianceCurvature(2.5, {"DENSE": np.ones(3)}, np.zeros(3))
    with pytest.raises(ValueError, match=r"prior_precision must be None when curvature is given"):
        la_coverage(fit, curvature=computed, prior_precision=1.0)
