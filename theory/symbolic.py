"""SymPy derivations behind the sub-network Laplace theory (*subnetwork-laplace-optimality*).

Each function derives an identity symbolically and returns the residual (left − right),
which is exactly zero when the identity holds:

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
