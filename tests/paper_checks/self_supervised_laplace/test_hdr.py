"""The step-by-step evaluation of App. A.1 of self-supervised-laplace (HDR derivation)."""

from __future__ import annotations

import numpy as np
import pytest

from laplace_lab.paper_checks.self_supervised_laplace._hdr import (
    _K,
    STEPS,
    b_eq28,
    b_from_26_27,
    chain_discrepancies,
    eq27_error,
    gaussian_region,
    random_inputs,
)


def test_eq27_exact_at_the_mode_and_equal_to_the_general_closed_form_elsewhere():
    assert eq27_error(0.3, 0.3, 0.7) < 1e-14
    y_hat, f, b = 0.3, 0.0, 0.7
    general = 2 * b**3 / 3 + 2 * b * (y_hat - f) ** 2  # ∫(y − f)² over [ŷ − b, ŷ + b]
    assert eq27_error(y_hat, f, b) == pytest.approx(abs(general - 2 * b**3 / 3) / general)
    with pytest.raises(ValueError, match="b"):
        eq27_error(0.0, 0.0, 0.0)


def test_b_from_26_27_solves_two_thirds_b_cubed_and_eq28_differs_by_exp_minus_ell_tilde_third():
    v = random_inputs(np.random.default_rng(1))
    b = b_from_26_27(v)
    assert 2 * b**3 / 3 == pytest.approx((1 - v["alpha"]) * np.exp(-_K(v)), rel=1e-13)
    assert b_eq28(v) / b == pytest.approx(np.exp(-v["ell_tilde"] / 3), rel=1e-13)


def test_chain_flags_broken_steps_and_passes_the_valid_rewrites():
    rng = np.random.default_rng(2)
    gaps = chain_discrepancies([random_inputs(rng) for _ in range(50)])
    assert list(gaps) == [s.label for s in STEPS]
    values = list(gaps.values())
    assert all(g > 0.1 for g in values[:8])  # each broken step is off by > 10% somewhere
    assert all(g < 1e-12 for g in values[8:])  # the closing rewrites are exact algebra


def test_gaussian_region_numbers():
    r = gaussian_region(0.05)
    assert r.t_for_coverage == pytest.approx(0.0627068, abs=1e-6)  # Φ⁻¹(0.525)
    assert r.hdr_half_width == pytest.approx(1.959964, abs=1e-6)
    assert r.density_ratio == pytest.approx(np.exp(-(0.0627068**2) / 2), rel=1e-6)
    with pytest.raises(ValueError, match="alpha"):
        gaussian_region(1.0)


def test_eq27_likelihood_vs_loss_equals_the_closed_form_spread():
    from scipy import stats

    from laplace_lab.paper_checks.self_supervised_laplace._hdr import eq27_likelihood_vs_loss

    bs = (0.25, 1.0, 4.0)
    gauss = [np.sqrt(2 * np.pi) * (2 * stats.norm.cdf(b) - 1) for b in bs]
    logs = [np.log(g / (2 * b**3 / 3)) for g, b in zip(gauss, bs, strict=True)]
    assert eq27_likelihood_vs_loss(bs) == pytest.approx(max(logs) - min(logs), rel=1e-10)
    with pytest.raises(ValueError, match="bs"):
        eq27_likelihood_vs_loss((1.0,))


def test_steps_name_their_errors_and_readings():
    errors = [s.error for s in STEPS]
    assert errors[0] == errors[2]  # eq. (28)'s extra −ℓ̃ appears, then silently disappears
    assert [bool(s.reading) for s in STEPS].count(True) == 1
    assert errors[-2:] == ["", ""]  # the valid closing rewrites point to no error
