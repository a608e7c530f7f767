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

On networks with ``torch.nn.Conv2d`` layers (weight sharing over R output positions) the
cases pass ``approximation``, ``"expand"`` or ``"reduce"`` (Eschenhagen et al. §3; the
contract), and the oracle is :class:`~laplace_lab.conformance.kronecker.SharedKFACOracle`.
On ``conv-linear-gaussian`` (one Conv2d(1, 1, 3) summed over its R = 4 positions, Gaussian
likelihood) f is linear in θ with the features φ = (Σ_r patch_r, R) and every δ_{n,r} = 1:
reduce's A = (1/(N R²)) Σ_n φ_nφ_nᵀ and G = N R²/σ0², so the joint reduce is the GGN,
Bayesian linear regression on φ, checked in closed form; expand's Σ_{n,r} ã ãᵀ/(N R) is
not (7% to 61% off BLR at seed 0), and that case is judged against the dense expand. On
``cnn-multiclass`` the two approximations differ by far more than the tolerance, so a target
that computes reduce as expand (or forgets expand's 1/R) fails; the details record the
relative difference (``approximations_relative_difference``). A target whose capability
takes no keyword ``approximation`` is not offered these cases (N/A).

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
from laplace_lab.conformance.kronecker import KFACOracle, SharedKFACOracle
from laplace_lab.conformance.oracle import DenseOracle
from laplace_lab.conformance.problems import Problem, conv_features
from laplace_lab.conformance.registry import Check, conformance_case
from laplace_lab.conformance.runner import NotOfferedError, call_expression, call_target
from laplace_lab.theory import BayesianLinearRegression

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


# ----------------------------------------------------------------------------- Conv2d
def require_approximation(target, problem: Problem) -> None:
    """Refuse (N/A) a target whose ``kfac_predictive_variance`` takes no keyword
    ``approximation``: one written for MLPs is not offered the Conv2d cases rather than
    crashed by the keyword."""
    import inspect

    try:
        params = inspect.signature(target.capabilities[CAPABILITY]).parameters.values()
    except (TypeError, ValueError):  # no signature to read: call it
        return
    if not any(p.name == "approximation" or p.kind is p.VAR_KEYWORD for p in params):
        raise NotOfferedError(
            f"not offered by the target: its {CAPABILITY} takes no keyword approximation "
            "(KFAC-expand or KFAC-reduce of a Conv2d layer)",
            call_expression(CAPABILITY, problem),
        )


def conv_blr_variances(problem: Problem) -> np.ndarray:
    """φ(x*)ᵀ S_n φ(x*) of Bayesian linear regression on the features (Σ_r patch_r, R) of
    ``conv-linear-gaussian`` (:func:`~laplace_lab.conformance.problems.conv_features`): the
    summed Conv2d is linear in θ with these features, so its GGN Laplace is this posterior."""
    Phi = conv_features(problem.X_train.detach().double().numpy())
    Phi_s = conv_features(problem.X_test.detach().double().numpy())
    y = problem.y_train.detach().double().numpy()
    V = problem.prior_vector()
    blr = BayesianLinearRegression(np.zeros(V.size), np.diag(1.0 / V), problem.noise_var)
    cov = blr.posterior((Phi, y)).cov
    return np.einsum("mi,ij,mj->m", Phi_s, cov, Phi_s)


def approximation_gap(oracle: DenseOracle, convention: str) -> np.ndarray:
    """|v_expand − v_reduce| / v_expand per test point (and output)."""
    expand = SharedKFACOracle(oracle, convention, "expand").predictive_variance()
    reduce = SharedKFACOracle(oracle, convention, "reduce").predictive_variance()
    return np.abs(expand - reduce) / expand


#: The Conv2d case whose KFAC is exact: (problem, convention, approximation).
EXACT_CONV = ("conv-linear-gaussian", "joint", "reduce")


def check_conv_kfac(
    target, problem: Problem, oracle: DenseOracle, *, convention: str, approximation: str
) -> Check:
    """The target's KFAC variances of a network with Conv2d layers, called with
    ``approximation``, against the dense :class:`~laplace_lab.conformance.kronecker.
    SharedKFACOracle` — or, for the joint reduce of ``conv-linear-gaussian``, against
    Bayesian linear regression on its features, which it equals."""
    require_approximation(target, problem)
    dense = SharedKFACOracle(oracle, convention, approximation)
    extra = {"convention": convention, "approximation": approximation}
    out = call_target(target, CAPABILITY, problem, rows=slice(None), **extra)
    exact = (problem.name, convention, approximation) == EXACT_CONV
    expected = conv_blr_variances(problem) if exact else dense.predictive_variance()
    expr = call_expression(CAPABILITY, problem, rows=slice(None), **extra)
    got = target_array(out, "the KFAC variance", expected.shape, expr)

    def call(i: int | None) -> str:
        rows = slice(None) if i is None else slice(i, i + 1)
        return call_expression(CAPABILITY, problem, rows=rows, **extra)

    what = "Bayesian linear regression" if exact else f"dense {convention} KFAC-{approximation}"
    check = compare_values(
        got, expected, dense.variance_tolerance(), what=f"variance vs {what}", call=call
    )
    gap = approximation_gap(oracle, convention)
    span = [float(gap.min()), float(gap.max())]
    details = {**check.details, "approximations_relative_difference": span}
    return Check(check.passed, check.summary, details, check.reproducer)


_CONV_CASES = {
    ("cnn-multiclass", "joint", "expand"): "digits 0-2, Conv2d(1, 2, 3, stride 2) → tanh → "
    "Linear(18, 3), R = 9: A = Σ_{n,r} ããᵀ/(N R), G = Σ_{n,c,r} g gᵀ",
    ("cnn-multiclass", "joint", "reduce"): "the same CNN: A of the mean patch, G of the "
    "position-summed g",
    ("cnn-multiclass", "separate", "expand"): "the same CNN, bias factor G alone",
    ("cnn-multiclass", "separate", "reduce"): "the same CNN, bias factor G alone",
    ("conv-linear-gaussian", "joint", "reduce"): "Conv2d(1, 1, 3) summed over R = 4 "
    "positions, σ0² = 0.3, α = 2; exact: the joint reduce is the GGN, Bayesian linear "
    "regression on (Σ_r patch_r, R)",
    ("conv-linear-gaussian", "joint", "expand"): "the same model; expand is not exact "
    "(Σ_r ã_r ã_rᵀ for (Σ_r ã_r)(Σ_r ã_r)ᵀ): against the dense expand",
}


def _register_conv(problem: str, convention: str, approximation: str, text: str) -> None:
    @conformance_case(
        f"kfac/{problem}-{convention}-{approximation}",
        capability=CAPABILITY,
        problem=problem,
        description=text,
    )
    def case(target, problem: Problem, oracle: DenseOracle, *, seed: int) -> Check:
        return check_conv_kfac(
            target, problem, oracle, convention=convention, approximation=approximation
        )


for (_problem_name, _convention, _approximation), _text in _CONV_CASES.items():
    _register_conv(_problem_name, _convention, _approximation, _text)
