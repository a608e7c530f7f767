"""Diagonal-Laplace cases: the factorised posterior N(θ̂, diag(Ω)⁻¹) against the dense oracle.

The capability ``diagonal_predictive_variance`` returns gᵀ diag(Ω)⁻¹ g (per output for C
classes), Ω the GGN precision of the contract. The oracle is the diagonal of the dense
float64 Ω (:meth:`~laplace_lab.conformance.oracle.DenseOracle.diagonal_variance`); the
tolerance is the diagonal rule of :func:`laplace_lab.conformance.tolerance.diagonal_tolerance`.
On ``linear-gaussian-orthogonal`` the design columns (x, 1) are orthogonal, so the GGN
ΦᵀΦ/σ0² is diagonal, the factorised posterior is the exact Bayesian-linear-regression
posterior, and the answer is its closed form φ(x*)ᵀ S_n φ(x*) with S_n = (V + ΦᵀΦ/σ0²)⁻¹.

Every case breaks the symmetric readings: α = 2.5 or 2 (not 1, where a precision and a
variance agree), σ0² = 0.3 (regression), a non-isotropic V, three classes; on the MLPs
diag(Ω)⁻¹ and diag(Ω⁻¹) differ, so the marginal variances of the full posterior fail.

References
----------
.. [1] H. Ritter, A. Botev, D. Barber, "A Scalable Laplace Approximation for Neural Networks",
   ICLR 2018, §2 (the diagonal Laplace baseline).
.. [2] E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato,
   "Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §5
   (diag(H̃⁻¹) ≈ diag(H̃)⁻¹) and §6.1 ("Diag").
"""

from __future__ import annotations

from laplace_lab.conformance.catalog.predictive import blr_variances
from laplace_lab.conformance.compare import compare_values, target_array
from laplace_lab.conformance.oracle import DenseOracle
from laplace_lab.conformance.problems import Problem
from laplace_lab.conformance.registry import Check, conformance_case
from laplace_lab.conformance.runner import call_expression, call_target

CAPABILITY = "diagonal_predictive_variance"


def check_diagonal(target, problem: Problem, oracle: DenseOracle, *, exact: bool) -> Check:
    """The target's diagonal-Laplace variances against the closed form (``exact``: the
    design is orthogonal) or the diagonal of the dense Ω."""
    out = call_target(target, CAPABILITY, problem, rows=slice(None))
    expected = blr_variances(problem) if exact else oracle.diagonal_variance()
    expr = call_expression(CAPABILITY, problem, rows=slice(None))
    got = target_array(out, "the diagonal-Laplace variance", expected.shape, expr)

    def call(i: int | None) -> str:
        rows = slice(None) if i is None else slice(i, i + 1)
        return call_expression(CAPABILITY, problem, rows=rows)

    what = "Bayesian linear regression (diagonal GGN)" if exact else "diag of the dense Ω"
    tol = oracle.diagonal_tolerance()
    return compare_values(got, expected, tol, what=f"variance vs {what}", call=call)


_CASES = {
    "linear-gaussian-orthogonal": (True, "orthogonal design: diagonal Laplace is exact BLR"),
    "mlp-regression": (False, "tanh MLP 3-8-1, σ0² = 0.3, α = 2.5"),
    "mlp-regression-float32": (False, "float32 model and data"),
    "mlp-regression-diagonal-prior": (False, "a non-isotropic diagonal prior V"),
    "mlp-binary": (False, "one logit, Bernoulli likelihood"),
    "mlp-multiclass": (False, "3 logits, softmax, variances (M, C)"),
    "mlp-multiclass-float32": (False, "3 logits in float32"),
}


def _register(problem: str, exact: bool, text: str) -> None:
    @conformance_case(
        f"diagonal/{problem}", capability=CAPABILITY, problem=problem, description=text
    )
    def case(target, problem: Problem, oracle: DenseOracle, *, seed: int) -> Check:
        return check_diagonal(target, problem, oracle, exact=exact)


for _name, (_exact, _text) in _CASES.items():
    _register(_name, _exact, _text)
