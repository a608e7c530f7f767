"""Last-layer Laplace cases: the posterior over the last Linear layer only, three structures.

The capability ``last_layer_predictive_variance`` returns the linearized-Laplace variances
over the parameters S of the model's last ``torch.nn.Linear`` layer — its weight W and its
bias b — with every other parameter fixed at the MAP (laplace-torch's
``subset_of_weights="last_layer"``). The oracles restrict the dense float64 Ω to S:

- ``"full"``: g_Sᵀ Ω_SS⁻¹ g_S
  (:meth:`~laplace_lab.conformance.oracle.DenseOracle.predictive_variance` on S), the
  variance rule of :mod:`laplace_lab.conformance.tolerance`;
- ``"diag"``: g_Sᵀ diag(Ω_SS)⁻¹ g_S, the diagonal rule;
- ``"kron"``: g_Sᵀ P_SS⁻¹ g_S with P_SS the layer's KFAC block in the ``"separate"``
  convention (G ⊗ (1/N) Σ_n a_n a_nᵀ on W, G on b, no W–b block;
  :class:`~laplace_lab.conformance.kronecker.SharedKFACOracle`, a Linear layer has R = 1)
  plus αI, the variance rule on P_SS.

For one output the last layer's output gradient is δ = ∂f/∂s = 1 at every point, so its GGN
block is Σ_n w_n ã_n ã_nᵀ. Under a Gaussian likelihood w_n = 1/σ0² is constant and KFAC's
product of sums G ⊗ A = (N/σ0²)·(1/N) Σ_n ã_n ã_nᵀ is that block exactly: the separate
Kronecker block is Ω_SS with its W–b cross entries (1/σ0²) Σ_n a_n set to zero, a closed
form written here from the dense GGN without any Kronecker factor. Under a Bernoulli
likelihood KFAC replaces Σ_n w_n ã_n ã_nᵀ by (Σ_n w_n)·(1/N) Σ_n ã_n ã_nᵀ and is not exact.
For C logits the last layer is the output (D_n = ∂f/∂s = I), its GGN block is
Σ_n H_n ⊗ ã_n ã_nᵀ with H_n = diag(π_n) − π_nπ_nᵀ, and KFAC's is (Σ_n H_n) ⊗ (1/N) Σ_n ã_n ã_nᵀ:
not exact, since H_n varies between points, so the multiclass ``kron`` case checks the
KFAC definition (the oracle's last block), per output, (M, C).

What each case rules out: the last layer taken as all parameters, or without its bias,
fails every case by many orders of magnitude more than the tolerance (relative errors of
1.1 to 16 and of 0.79 to 0.96 at the worst test point, seed 0); the details record the relative
differences of the three structures from one another, so a target that computes another
structure fails too. Every case breaks the symmetric readings: α = 2.5 (not 1), σ0² = 0.3
(regression), three classes.

References
----------
.. [1] E. Daxberger, A. Kristiadi, A. Immer, R. Eschenhagen, M. Bauer, P. Hennig,
   "Laplace Redux – Effortless Bayesian Deep Learning", NeurIPS 2021, arXiv:2106.14806,
   §3.1 (last-layer Laplace, with full, KFAC and diagonal Hessians).
.. [2] A. Kristiadi, M. Hein, P. Hennig, "Being Bayesian, Even Just a Bit, Fixes
   Overconfidence in ReLU Networks", ICML 2020, arXiv:2002.10118, §3 (the last-layer
   Gaussian and its linearized predictive).
.. [3] H. Ritter, A. Botev, D. Barber, "A Scalable Laplace Approximation for Neural
   Networks", ICLR 2018, §3 (the KFAC Laplace posterior).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from laplace_lab.conformance.compare import compare_values, target_array
from laplace_lab.conformance.kronecker import SharedKFACOracle
from laplace_lab.conformance.oracle import DenseOracle
from laplace_lab.conformance.problems import Problem
from laplace_lab.conformance.registry import Check, conformance_case
from laplace_lab.conformance.runner import call_expression, call_target
from laplace_lab.conformance.tolerance import variance_tolerance

CAPABILITY = "last_layer_predictive_variance"


def last_layer_indices(model: Any) -> tuple[np.ndarray, np.ndarray]:
    """(weight, bias) indices of the last ``torch.nn.Linear`` module in the flat parameter
    vector (``parameters()`` order); the weight's row-major, (out · in,) and (out,)."""
    import torch

    offsets, start = {}, 0
    for name, t in model.named_parameters():
        offsets[name] = start
        start += int(t.numel())
    linears = [(n, m) for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)]
    if not linears:
        raise ValueError("last-layer Laplace needs a torch.nn.Linear layer")
    name, layer = linears[-1]
    if layer.bias is None:
        raise ValueError(f"the cases need a bias in the last Linear layer ({name!r})")
    prefix = f"{name}." if name else ""
    w0, b0 = offsets[f"{prefix}weight"], offsets[f"{prefix}bias"]
    return w0 + np.arange(layer.weight.numel()), b0 + np.arange(layer.bias.numel())


def _kron_precision(oracle: DenseOracle, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """P_SS of the separate convention on S = [W, b] (module docstring): for regression
    Ω_SS with its W–b block set to zero, otherwise the KFAC oracle's last block plus V_S."""
    S = np.concatenate([weight, bias])
    if oracle.problem.likelihood == "regression":
        P = oracle.omega[np.ix_(S, S)].copy()
        nw = weight.size
        P[:nw, nw:] = P[nw:, :nw] = 0.0
        return P
    K = SharedKFACOracle(oracle, "separate").curvature[np.ix_(S, S)]
    return K + np.diag(oracle.V[S])


def _solve_variance(oracle: DenseOracle, P: np.ndarray, S: np.ndarray) -> np.ndarray:
    G = oracle.G[:, :, S].reshape(-1, S.size)
    v = np.sum(np.linalg.solve(P, G.T).T * G, axis=1).reshape(oracle.G.shape[:2])
    return v if oracle.problem.likelihood == "multiclass" else v[:, 0]


def expected_variance(
    oracle: DenseOracle, structure: str, S: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(variance, tolerance) of ``structure`` on the last layer (or on the indices ``S``)."""
    weight, bias = last_layer_indices(oracle.problem.model)
    S = np.concatenate([weight, bias]) if S is None else np.asarray(S)
    if structure == "full":
        return oracle.predictive_variance(S), oracle.variance_tolerance(S)
    if structure == "diag":
        return oracle.diagonal_variance(S), oracle.diagonal_tolerance(S)
    P = _kron_precision(oracle, weight, bias)
    tol = variance_tolerance(
        P,
        oracle.G[:, :, S].reshape(-1, S.size),
        oracle.V[S],
        dtype=oracle.problem.dtype,
        n_rows=oracle.n_rows,
    ).reshape(oracle.G.shape[:2])
    if oracle.problem.likelihood != "multiclass":
        tol = tol[:, 0]
    return _solve_variance(oracle, P, S), tol


def structure_gaps(oracle: DenseOracle, structures: tuple[str, ...]) -> dict[str, list[float]]:
    """[min, max] of |v_a − v_b| / v_a over test points for each pair of ``structures``."""
    v = {s: expected_variance(oracle, s)[0] for s in structures}
    out = {}
    for i, a in enumerate(structures):
        for b in structures[i + 1 :]:
            gap = np.abs(v[a] - v[b]) / v[a]
            out[f"relative_difference_{a}_{b}"] = [float(gap.min()), float(gap.max())]
    return out


def check_last_layer(target, problem: Problem, oracle: DenseOracle, *, structure: str) -> Check:
    """The target's last-layer variances of ``structure`` against the restricted oracle."""
    out = call_target(target, CAPABILITY, problem, rows=slice(None), structure=structure)
    expected, tol = expected_variance(oracle, structure)
    expr = call_expression(CAPABILITY, problem, rows=slice(None), structure=structure)
    got = target_array(out, f"the last-layer {structure} variance", expected.shape, expr)

    def call(i: int | None) -> str:
        rows = slice(None) if i is None else slice(i, i + 1)
        return call_expression(CAPABILITY, problem, rows=rows, structure=structure)

    exact = structure == "kron" and problem.likelihood == "regression"
    what = "Ω_SS without its W–b block" if exact else f"the dense last-layer {structure}"
    check = compare_values(got, expected, tol, what=f"variance vs {what}", call=call)
    gaps = structure_gaps(oracle, ("full", "diag", "kron"))
    return Check(check.passed, check.summary, {**check.details, **gaps}, check.reproducer)


_PROBLEMS = {
    "mlp-regression": "tanh MLP 3-8-1, σ0² = 0.3, α = 2.5",
    "mlp-regression-float32": "float32 model and data",
    "mlp-binary": "one logit, Bernoulli likelihood",
    "mlp-multiclass": "3 logits, softmax, variances (M, C)",
    "cnn-multiclass": "digits 0-2, Conv2d(1, 2, 3, stride 2) → tanh → Linear(18, 3)",
}
_STRUCTURES = {
    "full": "Ω_SS on the last layer's [W, b]",
    "diag": "diag(Ω_SS) on the last layer's [W, b]",
    "kron": "the separate KFAC block G ⊗ A on W, G on b",
}


def _register(problem: str, structure: str) -> None:
    text = f"{_PROBLEMS[problem]}; {_STRUCTURES[structure]}"
    if structure == "kron" and problem.startswith("mlp-regression"):
        text += "; exact: δ = 1 and w = 1/σ0², so KFAC is Ω_SS without its W–b block"
    elif structure == "kron" and problem.endswith("multiclass"):
        text += "; G = Σ_n (diag(π_n) − π_nπ_nᵀ), not exact: H_n varies"

    @conformance_case(
        f"last-layer/{problem}-{structure}",
        capability=CAPABILITY,
        problem=problem,
        description=text,
    )
    def case(target, problem: Problem, oracle: DenseOracle, *, seed: int) -> Check:
        return check_last_layer(target, problem, oracle, structure=structure)


for _problem in _PROBLEMS:
    for _structure in _STRUCTURES:
        _register(_problem, _structure)
