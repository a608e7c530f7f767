"""Fitted convergence slopes agree with the rates derived in theory.ssla_rates.

Deterministic statistics (x̄ − μ0 = c·n^-½ or fixed; Σx = λn) isolate the asymptotic rate;
the paper's random setups are checked for ASSLA, Lemma 1 and Theorem 1.
"""

from __future__ import annotations

import numpy as np
import pytest

from laplace_lab.theory import fit_rate
from laplace_lab.theory.conjugate import NormalStats, PoissonStats
from laplace_lab.theory.ssla_rates import (
    PAPER_NS,
    divergence_curve,
    exact_predictive,
    paper_model,
    prefix_statistics,
    refit_gaps,
)

TOL = 0.05  # on the exponent, beyond the 95% CI
KL, TV = 0, 2


def _agrees(ns, values, rate):
    f = fit_rate(ns, values)
    return f.ci_low - TOL <= rate <= f.ci_high + TOL, f


@pytest.mark.parametrize(
    ("offset", "variant", "kl_rate", "tv_rate"),
    [
        (lambda n: 1.0 / np.sqrt(n), "refit", -5.0, -2.5),  # paper: prior centred at truth
        (lambda n: 1.0, "refit", -4.0, -2.0),  # generic: x̄ − μ0 does not vanish
        (lambda n: 1.0 / np.sqrt(n), "approx", -2.0, -1.0),
        (lambda n: 1.0, "approx", -2.0, -1.0),
    ],
)
def test_normal_normal_rates(offset, variant, kl_rate, tv_rate):
    model, _ = paper_model("normal-normal")
    ns = [100, 1_000, 10_000, 100_000]
    st = [NormalStats(float(n), 4.0 + offset(n), 2.0 * (n - 1)) for n in ns]
    d = np.array(divergence_curve(model, st, variant=variant, hessian="likelihood"))
    ok_kl, f_kl = _agrees(ns, d[:, KL], kl_rate)
    ok_tv, f_tv = _agrees(ns, d[:, TV], tv_rate)
    assert ok_kl, f_kl
    assert ok_tv, f_tv


def test_normal_normal_posterior_refit_is_exact_at_every_n():
    model, truth = paper_model("normal-normal")
    st = prefix_statistics(model, np.random.default_rng(5), PAPER_NS, theta_true=truth)
    d = np.array(divergence_curve(model, st, variant="refit", hessian="posterior"))
    assert np.max(d[:, TV]) < 1e-14 and np.max(d[:, KL]) < 1e-28


@pytest.mark.parametrize(
    ("variant", "hessian", "kl_rate", "tv_rate"),
    [
        ("refit", "likelihood", -4.0, -2.0),
        ("refit", "posterior", -4.0, -2.0),
        ("approx", "likelihood", -2.0, -1.0),
        ("approx", "posterior", -2.0, -1.0),
    ],
)
def test_poisson_gamma_rates(variant, hessian, kl_rate, tv_rate):
    model, _ = paper_model("poisson-gamma")
    ns = [1_000, 10_000, 100_000, 1_000_000]
    st = [PoissonStats(float(n), 3.0 * n, 0.0) for n in ns]
    d = np.array(divergence_curve(model, st, variant=variant, hessian=hessian))
    ok_kl, f_kl = _agrees(ns, d[:, KL], kl_rate)
    ok_tv, f_tv = _agrees(ns, d[:, TV], tv_rate)
    assert ok_kl, f_kl
    assert ok_tv, f_tv


@pytest.mark.parametrize("name", ["normal-normal", "poisson-gamma"])
def test_paper_setup_assla_and_refit_gap_slopes(name):
    model, truth = paper_model(name)
    st = prefix_statistics(model, np.random.default_rng(11), PAPER_NS, theta_true=truth)
    d = np.array(divergence_curve(model, st, variant="approx", hessian="likelihood"))
    for col, rate in ((KL, -2.0), (TV, -1.0)):
        ok, f = _agrees(PAPER_NS, d[:, col], rate)
        assert ok, (col, f)
    gaps = np.array([refit_gaps(model, s, 7.0) for s in st])
    for col in (0, 1, 2):  # Lemma 1, Theorem 1, eq. (19): all Θ(1/n)
        ok, f = _agrees(PAPER_NS, gaps[:, col], -1.0)
        assert ok, (col, f)


def test_refit_gaps_closed_form_normal_normal():
    model, _ = paper_model("normal-normal")
    n, xbar, y = 1_000_000, 4.01, 7.0
    g = refit_gaps(model, NormalStats(float(n), xbar, 2.0 * n), y)
    assert g.theta_gap == pytest.approx((y - xbar) / (n + 1), rel=1e-9)
    assert g.augmented_gap == pytest.approx((y - xbar) ** 2 / (2 * 2.0 * (n + 1)), rel=1e-8)
    assert g.data_loglik_gap == pytest.approx(n * (y - xbar) ** 2 / (4.0 * (n + 1) ** 2), rel=1e-8)
    assert g.information_gap == 0.0


def test_paper_model_bad_name():
    with pytest.raises(ValueError, match="name must be"):
        paper_model("gamma-gamma")


def test_divergence_curve_with_given_exact_predictives_is_the_same_curve():
    model, truth = paper_model("poisson-gamma")
    st = prefix_statistics(model, np.random.default_rng(3), (20, 100), theta_true=truth)
    exact = [exact_predictive(model, s) for s in st]
    own = divergence_curve(model, st, variant="approx", hessian="likelihood")
    given = divergence_curve(model, st, variant="approx", hessian="likelihood", exact=exact)
    assert given == own
    assert all(d.total_variation > 0.0 for d in own)
    with pytest.raises(ValueError, match="exact must hold one predictive"):
        divergence_curve(model, st, variant="approx", hessian="likelihood", exact=exact[:1])
