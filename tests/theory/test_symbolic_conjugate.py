"""SymPy derivations of the conjugate predictives and Fisher informations (SSLA checks)."""

from __future__ import annotations

import pytest
import sympy as sp

from laplace_lab.theory import symbolic


@pytest.mark.parametrize(
    "name",
    [
        "gaussian_integral_residual",
        "gamma_integral_residual",
        "normal_normal_predictive_residual",
        "poisson_gamma_predictive_residual",
        "blr_predictive_residual",
        "fisher_information_normal_residual",
        "fisher_information_poisson_residual",
        "ssla_normal_normal_residual",
        "assla_poisson_residual",
    ],
)
def test_derivation_matches_closed_form(name):
    assert getattr(symbolic, name)() == 0


def test_a_wrong_closed_form_leaves_a_nonzero_residual():
    # the plug-in N(μ_n, σ²) (no epistemic σ_n²) is not the predictive: the machinery notices
    mu, y, xbar = sp.symbols("mu y xbar", real=True)
    n, s2 = sp.symbols("n sigma2", positive=True)
    loglik = -n * (xbar - mu) ** 2 / (2 * s2)
    lognew = -((y - mu) ** 2) / (2 * s2) - sp.log(2 * sp.pi * s2) / 2
    derived = symbolic.log_gaussian_integral(lognew + loglik, mu) - symbolic.log_gaussian_integral(
        loglik, mu
    )
    plug_in = -((y - xbar) ** 2) / (2 * s2) - sp.log(2 * sp.pi * s2) / 2
    assert sp.simplify(sp.expand_log(derived - plug_in, force=True)) != 0


def test_integral_helpers_reject_wrong_shapes():
    x = sp.Symbol("x", real=True)
    with pytest.raises(ValueError, match="quadratic"):
        symbolic.log_gaussian_integral(-(x**4), x)
    lam = sp.Symbol("lam", positive=True)
    with pytest.raises(ValueError, match="log_integrand"):
        symbolic.log_gamma_integral(-(lam**2), lam)
