"""KFAC-Laplace cases, both weight–bias conventions, against the dense KFAC precision.

The capability ``kfac_predictive_variance`` returns gᵀP⁻¹g with P = ⊕_l K_l + αI, the
Kronecker factors of :mod:`laplace_lab.conformance.kronecker` and the prior added exactly;
``convention="joint"`` puts the bias in the input factor (ã = [a; 1]), ``"separate"`` gives
it a factor of its own (laplace-torch's ``KronLaplace``). The oracle writes P out as a p × p
matrix from per-sample signals computed without any KFAC code; the tolerance is the
variance rule of :mod:`laplace_lab.conformance.tolerance` on P.

On ``linear-gaussian`` (one Linear layer, Gaussian likelihood: w_n and δ_n = 1 are the same
for every point) the joint KFAC is the GGN itself, so its answer is exact Bayesian linear
regression; the separate one drops the weight–bias block G ⊗ x̄ and is not. On
``mlp-multiclass`` (three logits, softmax) the output-side factor is the backpropagated exact
output Hessian G_l = Σ_n D_nᵀ(diag(π_n) − π_nπ_nᵀ)D_n, D_n = ∂f(x_n)/∂s_l (C × out), and
the variances are per output, (M, C); KFAC is not exact there (the H_n differ between
points), so the oracle is the KFAC definition written out densely, as on the other MLPs. The
two conventions differ on every case (x̄ and the mean hidden activations are not zero) by far
more than the tolerance, so a target with the other convention fails; each case records the
relative difference in its details.

References
----------
.. [1] H. Ritter, A. Botev, D. Barber, "A Scalable Laplace Approximation for Neural Networks",
   ICLR 2018, §3 (KFAC Laplace, the prior added through the eigendecompositions).
.. [2] R. Eschenhagen, A. Immer, R. E. Turner, F. Schneider, P. Hennig, "Kronecker-Factored
   Approximate Curvature for Modern Neural Network Architectures", NeurIPS 2023,
   arXiv:2311.00636, §3 (where KFAC is exact; KFAC-expand).
.. [3] F. Dangel, B. Mucsányi, T. Weber, R. Eschenhagen, "Kronecker-factored Approximate
   Curvature (KFAC) From Scratch", arXiv:2507.05127 (v1, 2025), §3–4 (the type-2 output
   factor for C outputs).
"""

from __future__ import annotations

import numpy as np

from laplace_lab.conformance.catalog.predictive import blr_variances
from laplace_lab.conformance.compare import compare_values, target_array
from laplace_lab.conformance.contract import KFAC_CONVENTIONS
from laplace_lab.conformance.kronecker import KFACOracle
from laplace_lab.conformance.oracle import DenseOracle
from laplace_lab.conformance.problems import Problem
from laplace_lab.conformance.registry import Check, conformance_case
from laplace_lab.conformance.runner import call_expression, call_target

CAPABILITY = "kfac_predictive_variance"


def convention_gap(oracle: DenseOracle) -> np.ndarray:
    """|v_joint − v_separate| / v_joint per test point (how far apart the conventions are)."""
    joint = KFACOracle(oracle, "joint").predictive_variance()
    separate = KFACOracle(oracle, "separate").predictive_variance()
    return np.abs(joint - separate) / joint


def check_kronecker(
    target,
    problem: Problem,
    oracle: DenseOracle,
    *,
    capability: str,
    structure,
    convention: str,
    exact: bool,
    gap: tuple[str, np.ndarray],
) -> Check:
    """The target's ``capability`` variances against the dense precision of ``structure``
    (:class:`~laplace_lab.conformance.kronecker.KFACOracle` or ``EKFACOracle``) — or,
    ``exact``, against Bayesian linear regression, which the joint structure of one Linear
    layer equals —; ``gap`` (name, per-point relative difference) goes to the details."""
    dense = structure(oracle, convention)
    name = capability.split("_")[0].upper()
    out = call_target(target, capability, problem, rows=slice(None), convention=convention)
    expected = blr_variances(problem) if exact else dense.predictive_variance()
    expr = call_expression(capability, problem, rows=slice(None), convention=convention)
    got = target_array(out, f"the {name} variance", expected.shape, expr)

    def call(i: int | None) -> str:
        rows = slice(None) if i is None else slice(i, i + 1)
        return call_expression(capability, problem, rows=rows, convention=convention)

    what = "Bayesian linear regression" if exact else f"dense {convention} {name}"
    check = compare_values(
        got, expected, dense.variance_tolerance(), what=f"variance vs {what}", call=call
    )
    details = {**check.details, gap[0]: [float(gap[1].min()), float(gap[1].max())]}
    return Check(check.passed, check.summary, details, check.reproducer)


def check_kfac(
    target, problem: Problem, oracle: DenseOracle, *, convention: str, exact: bool
) -> Check:
    """The target's KFAC variances against the dense KFAC precision (or, ``exact``, against
    Bayesian linear regression, which the joint KFAC of one Linear layer equals)."""
    gap = ("conventions_relative_difference", convention_gap(oracle))
    return check_kronecker(
        target,
        problem,
        oracle,
        capability=CAPABILITY,
        structure=KFACOracle,
        convention=convention,
        exact=exact,
        gap=gap,
    )


_CASES = {
    "linear-gaussian": "one Linear layer, σ0² = 0.3, α = 2",
    "mlp-regression": "tanh MLP 3-8-1, σ0² = 0.3, α = 2.5",
    "mlp-regression-float32": "float32 model and data",
    "mlp-binary": "one logit: G = Σ σ(f)(1 − σ(f)) δδᵀ",
    "mlp-multiclass": "3 logits: G = Σ Dᵀ(diag(π) − ππᵀ)D, variances (M, C)",
}


def _register(problem: str, convention: str, text: str) -> None:
    exact = problem == "linear-gaussian" and convention == "joint"
    if exact:
        text += "; exact: the joint KFAC is the GGN, Bayesian linear regression"
    elif convention == "separate":
        text += "; bias factor G alone (laplace-torch's KronLaplace)"
    else:
        text += "; [W b] factor with ã = [a; 1]"

    @conformance_case(
        f"kfac/{problem}-{convention}", capability=CAPABILITY, problem=problem, description=text
    )
    def case(target, problem: Problem, oracle: DenseOracle, *, seed: int) -> Check:
        return check_kfac(target, problem, oracle, convention=convention, exact=exact)


for _name, _text in _CASES.items():
    for _convention in KFAC_CONVENTIONS:
        _register(_name, _convention, _text)
