"""Network SSLA/ASSLA: determinant lemma and SSLA terms vs dense p×p algebra; scores."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

from laplace_lab.numerics.ggn import GGN
from laplace_lab.numerics.network_ssla import (
    NormalPredictive,
    assla_log_density,
    assla_predictive,
    gaussian_scores,
    log_det_ratio,
    ssla_log_density,
    ssla_predictive,
)
from laplace_lab.numerics.predictive import predictive_variance


def _problem(seed=0, n=6, p=9, m=4):
    rng = np.random.default_rng(seed)
    J = rng.normal(size=(n, p))
    V = rng.uniform(0.5, 2.0, size=p)
    s2 = 0.3
    ggn = GGN.regression(J, noise_var=s2, prior_precision=V)
    omega = J.T @ J / s2 + np.diag(V)
    return ggn, omega, rng.normal(size=(m, p)), rng.normal(size=m), s2


def test_determinant_lemma_equals_dense_log_determinants():
    ggn, omega, G, _, s2 = _problem()
    v = predictive_variance(ggn, G)
    got = log_det_ratio(v, s2)
    for g, val in zip(G, got, strict=True):
        ref = 0.5 * (
            np.linalg.slogdet(omega)[1] - np.linalg.slogdet(omega + np.outer(g, g) / s2)[1]
        )
        assert val == pytest.approx(ref, rel=1e-11, abs=1e-13)


def test_ssla_terms_equal_dense_refit_of_the_linearised_network():
    ggn, omega, G, f, s2 = _problem(1)
    y = f[:, None] + np.array([-1.3, 0.0, 0.4, 2.5])[None, :]
    got = ssla_log_density(ggn, G, f, y, noise_var=s2)
    for i, g in enumerate(G):
        om_t = omega + np.outer(g, g) / s2
        for j, yy in enumerate(y[i]):
            r = yy - f[i]
            delta = np.linalg.solve(om_t, g * r / s2)  # θ̃ − θ̂: argmax of the augmented log-joint
            ell_new = stats.norm.logpdf(yy, f[i] + g @ delta, np.sqrt(s2))
            prior_lik = -0.5 * delta @ omega @ delta  # log-joint(θ̃) − log-joint(θ̂), quadratic
            det = 0.5 * (np.linalg.slogdet(omega)[1] - np.linalg.slogdet(om_t)[1])
            assert got[i, j] == pytest.approx(ell_new + prior_lik + det, rel=1e-10)


def test_ssla_normalises_to_linearized_laplace_and_assla_to_noise_only():
    ggn, _, G, f, s2 = _problem(2)
    v = predictive_variance(ggn, G)
    grid = np.linspace(-30, 30, 60001)  # Simpson's rule on the whole bulk of both densities
    y = f[:, None] + grid[None, :]
    ssla = np.exp(ssla_log_density(ggn, G, f, y, noise_var=s2))
    assla = np.exp(assla_log_density(ggn, G, f, y, noise_var=s2))
    np.testing.assert_allclose(integrate.simpson(ssla, x=grid, axis=1), 1.0, rtol=1e-9)
    np.testing.assert_allclose(
        integrate.simpson(assla, x=grid, axis=1), (1 + v / s2) ** -0.5, rtol=1e-9
    )
    # the normalised SSLA density is N(f, σ0² + v) pointwise
    ref = stats.norm.pdf(y, f[:, None], np.sqrt(s2 + v)[:, None])
    np.testing.assert_allclose(ssla, ref, rtol=1e-9, atol=1e-300)
    sp = ssla_predictive(ggn, G, f, noise_var=s2)
    np.testing.assert_allclose(sp.var, s2 + v, rtol=1e-12)
    ap = assla_predictive(ggn, G, f, noise_var=s2)
    np.testing.assert_allclose(ap.var, s2)
    np.testing.assert_allclose(ap.mean, f)


def test_backends_agree():
    torch = pytest.importorskip("torch")
    ggn, _, G, f, s2 = _problem(3)
    ref = assla_log_density(ggn, G, f, f + 0.5, noise_var=s2)
    tg = GGN.regression(
        torch.as_tensor(ggn.Jw * np.sqrt(s2)),
        noise_var=s2,
        prior_precision=torch.as_tensor(ggn.prior_precision),
    )
    got = ssla_log_density(
        tg, torch.as_tensor(G), torch.as_tensor(f), torch.as_tensor(f + 0.5), noise_var=s2
    )
    ref_s = ssla_log_density(ggn, G, f, f + 0.5, noise_var=s2)
    np.testing.assert_allclose(got.numpy(), ref_s, rtol=1e-12)
    assert ref.shape == (4, 1)


def test_gaussian_scores_against_closed_forms_and_quadrature():
    mean, var = np.array([0.0, 1.0, -2.0]), np.array([1.0, 0.25, 4.0])
    y = np.array([0.5, 2.5, -1.0])
    s = gaussian_scores(NormalPredictive(mean, var), y)
    sd = np.sqrt(var)
    assert s["nll"] == pytest.approx(np.mean(-stats.norm.logpdf(y, mean, sd)), rel=1e-12)
    # |z| = 0.5, 3, 0.5: inside the 95% and 90% intervals twice, the 50% interval twice
    assert s["coverage_95"] == pytest.approx(2 / 3) and s["coverage_50"] == pytest.approx(2 / 3)
    crps = [
        integrate.quad(
            lambda t, m=m, d=d, yy=yy: (stats.norm.cdf(t, m, d) - (t >= yy)) ** 2,
            -60,
            60,
            points=[yy],
            limit=200,
        )[0]
        for m, d, yy in zip(mean, sd, y, strict=True)
    ]
    assert s["crps"] == pytest.approx(np.mean(crps), rel=1e-7)


def test_bad_input():
    ggn, _, G, f, s2 = _problem()
    with pytest.raises(TypeError, match="ggn"):
        assla_log_density(np.eye(3), G, f, f, noise_var=s2)
    with pytest.raises(ValueError, match="noise_var"):
        ssla_log_density(ggn, G, f, f, noise_var=0.0)
    with pytest.raises(ValueError, match="noise_var must be the σ² of the GGN"):
        ssla_predictive(ggn, G, f, noise_var=2 * s2)  # Ω built with another σ²
    binary = GGN.binary(np.asarray(ggn.Jw), np.zeros(ggn.n_rows), prior_precision=1.0)
    with pytest.raises(ValueError, match="ggn must be a regression GGN"):
        assla_predictive(binary, G, f, noise_var=s2)
    with pytest.raises(ValueError, match="f_test"):
        ssla_log_density(ggn, G, f[:2], f, noise_var=s2)
    with pytest.raises(ValueError, match="y"):
        ssla_log_density(ggn, G, f, f[:2], noise_var=s2)
    with pytest.raises(ValueError, match="levels"):
        gaussian_scores(NormalPredictive(f, np.ones(4)), f, levels=(1.5,))
    with pytest.raises(ValueError, match="y"):
        gaussian_scores(NormalPredictive(f, np.ones(4)), f[:1])
