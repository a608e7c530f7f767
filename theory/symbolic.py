"""SymPy derivations behind the sub-network Laplace theory and the SSLA conjugate checks.

Each function derives an identity symbolically and returns the residual (left − right),
which is exactly zero when the identity holds. Equation numbers in the first group refer to
S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
Results and Methods", arXiv:2605.09075 (2026):

- :func:`trace_form_residual` — eq. (8) → eq. (18): E[ḡ_Sᵀ M ḡ_S] = tr(M Λ_SS) for a
  symmetric M, using only linearity of expectation and E[ḡ_i ḡ_j] = Λ_ij.
- :func:`partitioned_inverse_residual` — the partitioned-inverse step of the proof of
  Theorem 1 (Appendix A.2): the three-term identity for IPV(S ∪ T).
- :func:`cross_term_square` — Ã⁻¹AÃ⁻¹ − 2Ã⁻¹ + A⁻¹ = A^{-1/2}(Γ − I)²A^{-1/2} ⪰ 0; for scalar
  blocks it factors as d² / (a (a + d)²).
"""

from __future__ import annotations

import sympy as sp

__all__ = ["cross_term_square", "partitioned_inverse_residual", "trace_form_residual"]


def _symmetric(name: str, k: int) -> sp.Matrix:
    return sp.Matrix(k, k, lambda i, j: sp.Symbol(f"{name}_{min(i, j)}{max(i, j)}"))


def trace_form_residual(k: int = 3) -> sp.Expr:
    """E[ḡᵀ M ḡ] − tr(M Λ) for symbolic k×k symmetric M, Λ (eq. 8 → eq. 18).

    The quadratic form is expanded into monomials ḡ_i ḡ_j, and the expectation is taken by
    linearity, replacing each monomial by its second moment Λ_ij.
    """
    g = sp.Matrix(sp.symbols(f"g0:{k}"))
    M, Lam = _symmetric("m", k), _symmetric("lam", k)
    quad = sp.Poly((g.T * M * g)[0, 0], *g)
    expectation = 0
    for powers, coeff in quad.terms():
        i, j = [idx for idx, e in enumerate(powers) for _ in range(e)]
        expectation += coeff * Lam[i, j]
    return sp.simplify(expectation - (M * Lam).trace())


def partitioned_inverse_residual(s: int = 1, t: int = 1) -> sp.Expr:
    """Residual of the Theorem 1 identity (Appendix A.2) for symbolic blocks of sizes s, t.

    Λ_{S'S'} = [[A, B], [Bᵀ, C]] with symbolic symmetric A (s×s), C (t×t), general B, and
    diagonal D, E; checks (N/σ0²)IPV(S') − (N/σ0²)IPV(S) − cross − schur = 0 as a rational
    function of all the symbols.
    """
    A, C = _symmetric("a", s), _symmetric("c", t)
    B = sp.Matrix(s, t, lambda i, j: sp.Symbol(f"b_{i}{j}"))
    D = sp.diag(*sp.symbols(f"d0:{s}", positive=True))
    E = sp.diag(*sp.symbols(f"e0:{t}", positive=True))
    Lam = sp.BlockMatrix([[A, B], [B.T, C]]).as_explicit()
    prior = sp.diag(D, E)
    full = ((Lam + prior).inv() * Lam).trace()
    At, Ct = A + D, C + E
    At_inv, A_inv = At.inv(), A.inv()
    F_inv = (Ct - B.T * At_inv * B).inv()
    part = (At_inv * A).trace()
    cross = (F_inv * B.T * (At_inv * A * At_inv - 2 * At_inv + A_inv) * B).trace()
    schur = (F_inv * (C - B.T * A_inv * B)).trace()
    return sp.simplify(sp.together(full - part - cross - schur))


def cross_term_square() -> tuple[sp.Expr, sp.Expr]:
    """The scalar cross-term matrix of Appendix A.2 and its factored form.

    Returns ``(expr, factored)`` with expr = a/(a+d)² − 2/(a+d) + 1/a for a, d > 0 and
    factored = d²/(a(a+d)²), visibly non-negative: A^{-1/2}(Γ − I)²A^{-1/2} with Γ = a/(a+d).
    """
    a, d = sp.symbols("a d", positive=True)
    expr = a / (a + d) ** 2 - 2 / (a + d) + 1 / a
    return expr, sp.factor(sp.together(expr))


# =========================================================================================
# Self-supervised Laplace: conjugate predictives and Fisher informations
# Rodemann et al., "Self-Supervised Laplace Approximation for Bayesian Uncertainty
# Quantification", arXiv:2605.12208, App. B.1 (eqs. 30-35); the closed forms are collected in
# docs/mathematics.md, "Closed forms" and "Analytic predictives". Each function returns a
# residual that simplifies to exactly 0 when the derivation agrees with the closed form.
# Likelihoods are written through sufficient statistics (the Σ(x_i - x̄)² and Σ log x_i!
# factors cancel between numerator and denominator of p(y|D) = ∫p(y|θ)p(D|θ)π(θ)dθ / p(D)).
# =========================================================================================

__all__ += [
    "assla_poisson_residual",
    "blr_predictive_residual",
    "fisher_information_normal_residual",
    "fisher_information_poisson_residual",
    "gamma_integral_residual",
    "gaussian_integral_residual",
    "log_gamma_integral",
    "log_gaussian_integral",
    "normal_normal_predictive_residual",
    "poisson_gamma_predictive_residual",
    "ssla_normal_normal_residual",
]


def log_gaussian_integral(exponent: sp.Expr, var: sp.Symbol) -> sp.Expr:
    """log ∫_ℝ exp(exponent) d var for an exponent −A var² + B var + C (A > 0):
    ½ log(π/A) + B²/(4A) + C (the identity is checked by :func:`gaussian_integral_residual`)."""
    P = sp.Poly(sp.expand(exponent), var)
    if P.degree() != 2:
        raise ValueError(f"exponent must be quadratic in {var}; got degree {P.degree()}")
    A, B, C = -P.coeff_monomial(var**2), P.coeff_monomial(var), P.coeff_monomial(1)
    return sp.log(sp.pi / sp.factor(A)) / 2 + sp.cancel(B**2 / (4 * A)) + C


def log_gamma_integral(log_integrand: sp.Expr, var: sp.Symbol) -> sp.Expr:
    """log ∫_0^∞ var^(a−1) e^(−b var) d var = log Γ(a) − a log b, for a log-integrand
    (a − 1) log var − b var + C (checked by :func:`gamma_integral_residual`)."""
    ell = sp.Dummy("ell")
    e = sp.expand(sp.expand_log(log_integrand, force=True).subs(sp.log(var), ell))
    P = sp.Poly(e, ell, var)
    if P.total_degree() > 1:
        raise ValueError("log_integrand must be (a − 1) log var − b var + C")
    a, b = P.coeff_monomial(ell) + 1, -P.coeff_monomial(var)
    return sp.log(sp.gamma(a)) - a * sp.log(b) + P.coeff_monomial(1)


def gaussian_integral_residual() -> sp.Expr:
    """SymPy's own ∫ exp(−Ax² + Bx) dx minus the formula used by log_gaussian_integral."""
    x, B = sp.Symbol("x", real=True), sp.Symbol("B", real=True)
    A = sp.Symbol("A", positive=True)
    direct = sp.integrate(sp.exp(-A * x**2 + B * x), (x, -sp.oo, sp.oo))
    return sp.simplify(direct - sp.exp(log_gaussian_integral(-A * x**2 + B * x, x)))


def gamma_integral_residual() -> sp.Expr:
    """SymPy's own ∫_0^∞ λ^(a−1) e^(−bλ) dλ minus the formula used by log_gamma_integral."""
    lam, a, b = sp.symbols("lam a b", positive=True)
    direct = sp.integrate(lam ** (a - 1) * sp.exp(-b * lam), (lam, 0, sp.oo))
    formula = sp.exp(log_gamma_integral((a - 1) * sp.log(lam) - b * lam, lam))
    return sp.simplify(direct - formula)


def normal_normal_predictive_residual() -> sp.Expr:
    """log ∫N(y; μ, σ²)p(D|μ)π(μ)dμ − log p(D) − log N(y; μ_n, σ_n² + σ²) (eqs. 30-31)."""
    mu, y, xbar, mu0 = sp.symbols("mu y xbar mu0", real=True)
    n, s2, t2 = sp.symbols("n sigma2 tau2", positive=True)
    loglik = -n * (xbar - mu) ** 2 / (2 * s2)  # + terms free of μ and y
    logprior = -((mu - mu0) ** 2) / (2 * t2) - sp.log(2 * sp.pi * t2) / 2
    lognew = -((y - mu) ** 2) / (2 * s2) - sp.log(2 * sp.pi * s2) / 2
    derived = log_gaussian_integral(lognew + loglik + logprior, mu) - log_gaussian_integral(
        loglik + logprior, mu
    )
    vn = 1 / (n / s2 + 1 / t2)
    mn = vn * (mu0 / t2 + n * xbar / s2)
    closed = -((y - mn) ** 2) / (2 * (vn + s2)) - sp.log(2 * sp.pi * (vn + s2)) / 2
    return sp.simplify(sp.expand_log(derived - closed, force=True))


def poisson_gamma_predictive_residual() -> sp.Expr:
    """p(k|D) = ∫Poi(k; λ)p(D|λ)π(λ)dλ / p(D) divided by NegBin(k; α + Σx, (β+n)/(β+n+1)),
    minus 1."""
    lam = sp.Symbol("lam", positive=True)
    a, b, S, n = sp.symbols("alpha beta S n", positive=True)
    k = sp.Symbol("k", integer=True, nonnegative=True)

    def log_evidence(extra_count: sp.Expr, extra_n: int) -> sp.Expr:
        return log_gamma_integral(
            (S + extra_count + a - 1) * sp.log(lam) - (n + extra_n + b) * lam, lam
        )

    derived = sp.exp(log_evidence(k, 1) - log_evidence(0, 0)) / sp.factorial(k)
    r, p = a + S, (b + n) / (b + n + 1)
    closed = sp.gamma(r + k) / (sp.gamma(r) * sp.factorial(k)) * p**r * (1 - p) ** k
    return sp.simplify(sp.gammasimp(derived / closed)) - 1


def blr_predictive_residual() -> sp.Expr:
    """Bayesian linear regression, one feature, known σ²: the integral against
    N(x*m_n, σ² + x*² S_n), S_n = (1/s0 + Σx²/σ²)⁻¹, m_n = S_n(m0/s0 + Σxy/σ²)."""
    w, y, m0, xs, sxy = sp.symbols("w y m0 xstar Sxy", real=True)
    s2, s0, sxx = sp.symbols("sigma2 s0 Sxx", positive=True)
    loglik = -(sxx * w**2 - 2 * sxy * w) / (2 * s2)
    logprior = -((w - m0) ** 2) / (2 * s0) - sp.log(2 * sp.pi * s0) / 2
    lognew = -((y - xs * w) ** 2) / (2 * s2) - sp.log(2 * sp.pi * s2) / 2
    derived = log_gaussian_integral(lognew + loglik + logprior, w) - log_gaussian_integral(
        loglik + logprior, w
    )
    sn = 1 / (1 / s0 + sxx / s2)
    mn = sn * (m0 / s0 + sxy / s2)
    v = s2 + xs**2 * sn
    closed = -((y - xs * mn) ** 2) / (2 * v) - sp.log(2 * sp.pi * v) / 2
    return sp.simplify(sp.expand_log(derived - closed, force=True))


def fisher_information_normal_residual() -> sp.Expr:
    """−∂²/∂μ² of eq. (32), ℓ(μ) = Σ_i [−½log(2πσ²) − (x_i − μ)²/(2σ²)], minus n/σ² (eq. 33)."""
    mu = sp.Symbol("mu", real=True)
    s2 = sp.Symbol("sigma2", positive=True)
    n = sp.Symbol("n", integer=True, positive=True)
    i = sp.Idx("i")
    x = sp.IndexedBase("x", real=True)
    ell = sp.Sum(-sp.log(2 * sp.pi * s2) / 2 - (x[i] - mu) ** 2 / (2 * s2), (i, 1, n))
    return sp.simplify((-sp.diff(ell, mu, 2)).doit() - n / s2)


def fisher_information_poisson_residual() -> sp.Expr:
    """−∂²/∂λ² of eq. (34), ℓ(λ) = Σ_i [x_i log λ − λ − log x_i!], minus Σx_i/λ² (eq. 35)."""
    lam = sp.Symbol("lam", positive=True)
    n = sp.Symbol("n", integer=True, positive=True)
    i = sp.Idx("i")
    x = sp.IndexedBase("x", nonnegative=True)
    ell = sp.Sum(x[i] * sp.log(lam) - lam - sp.log(sp.factorial(x[i])), (i, 1, n))
    closed = sp.Sum(x[i], (i, 1, n)) / lam**2
    return sp.simplify((-sp.diff(ell, lam, 2)).doit() - closed.doit())


def ssla_normal_normal_residual() -> sp.Expr:
    """∂/∂y of [eq. 12 at θ̂ = x̄, θ̃ = x̄ + (y − x̄)/(n+1)] − [log N(y; x̄, σ²(n+1)/n)
    + log π(θ̃)]: zero, i.e. SSLA ∝ N(y; x̄, σ²(n+1)/n)·π(θ̃). J = n/σ² and
    J̃ = (n+1)/σ² do not depend on y."""
    y, xbar, mu0 = sp.symbols("y xbar mu0", real=True)
    n, s2, t2 = sp.symbols("n sigma2 tau2", positive=True)

    def loglik(theta: sp.Expr, count: sp.Expr) -> sp.Expr:  # Σ(x_i − θ)² = M2 + n(x̄ − θ)²
        return -count * (xbar - theta) ** 2 / (2 * s2)

    def logprior(theta: sp.Expr) -> sp.Expr:
        return -((theta - mu0) ** 2) / (2 * t2)

    th_hat, th_til = xbar, xbar + (y - xbar) / (n + 1)
    lognew = -((y - th_til) ** 2) / (2 * s2) - sp.log(2 * sp.pi * s2) / 2
    eq12 = (
        loglik(th_til, n)
        + lognew
        - loglik(th_hat, n)
        + logprior(th_til)
        - logprior(th_hat)
        - sp.log((n + 1) / s2) / 2
        + sp.log(n / s2) / 2
    )
    closed = -((y - xbar) ** 2) / (2 * s2 * (n + 1) / n) + logprior(th_til)
    return sp.simplify(sp.diff(eq12 - closed, y))


def assla_poisson_residual() -> sp.Expr:
    """eq. 17 with eq. 35 minus [log Poi(y; λ̂) + ½ log(Σx/(Σx + y))] (ASSLA's closed form)."""
    S, n = sp.symbols("S n", positive=True)
    y = sp.Symbol("y", integer=True, nonnegative=True)
    lam = S / n
    lognew = y * sp.log(lam) - lam - sp.log(sp.factorial(y))
    eq17 = lognew + sp.log(S / lam**2) / 2 - sp.log((S + y) / lam**2) / 2
    closed = y * sp.log(lam) - lam - sp.log(sp.factorial(y)) + sp.log(S / (S + y)) / 2
    return sp.simplify(sp.expand_log(eq17 - closed, force=True))
