"""Multi-output regression with a per-output noise vector: variances and the evidence.

The likelihood is p(y|f) = Π_c N(y_c | f_c, σ_c²) with σ² = (0.1, 0.4, 0.9), so the GGN is
Ω = Σ_n J_nᵀ diag(1/σ²) J_n + V and the variances are the (M, C) diagonal of G Ω⁻¹ Gᵀ.
On ``torch.nn.Linear(d, C)`` the Jacobian of output c is φ(x)ᵀ = (x, 1) on its own row
[w_c, b_c] and zero elsewhere, so Ω is block diagonal over the outputs (up to the order of
``parameters()``): block c is ΦᵀΦ/σ_c² + V_c, the posterior factorises, and linearized
Laplace is C independent Bayesian linear regressions, each with its own noise σ_c². The
variance of output c is φ(x*)ᵀ S_c φ(x*) with S_c = (V_c + ΦᵀΦ/σ_c²)⁻¹ and the evidence is
Σ_c log N(y_c; 0, σ_c²I + Φ V_c⁻¹ Φᵀ), both computed without network code. On the MLP the
reference is the dense oracle. One noise shared by the outputs, or any one σ_c² put in
another's place, moves both.

References
----------
.. [1] C. M. Bishop, "Pattern Recognition and Machine Learning", Springer 2006, §3.1.5
   (multiple outputs), §3.5.1 (the evidence of Bayesian linear regression) and §5.7.1
   (the Laplace approximation of a regression network).
.. [2] J. Rodemann, A. Marquard, T. Augustin, M. Caprio, "Self-Supervised Laplace
   Approximation for Bayesian Uncertainty Quantification", TMLR, arXiv:2605.12208, §2
   (the Laplace approximation of the evidence).
"""

from __future__ import annotations

import numpy as np

from laplace_lab.conformance.catalog.evidence import check_evidence
from laplace_lab.conformance.catalog.predictive import check_variances
from laplace_lab.conformance.oracle import DenseOracle
from laplace_lab.conformance.problems import Problem
from laplace_lab.conformance.registry import Check, conformance_case
from laplace_lab.theory import BayesianLinearRegression


def _per_output_blr(problem: Problem) -> list[tuple[BayesianLinearRegression, np.ndarray]]:
    """For each output c: Bayesian linear regression on (x, 1) with σ_c² and V_c, and the
    indices of its parameters [w_c, b_c] in ``parameters()`` order (weight rows, then bias)."""
    X = problem.X_train.detach().double().numpy()
    d = X.shape[1]
    s2 = np.asarray(problem.noise_var, dtype=np.float64).reshape(-1)
    C = s2.size
    V = problem.prior_vector()
    out = []
    for c in range(C):
        idx = np.append(np.arange(c * d, (c + 1) * d), C * d + c)
        blr = BayesianLinearRegression(np.zeros(d + 1), np.diag(1.0 / V[idx]), float(s2[c]))
        out.append((blr, idx))
    return out


def _features(X) -> np.ndarray:
    X = X.detach().double().numpy()
    return np.hstack([X, np.ones((X.shape[0], 1))])


def blr_multi_output_variances(problem: Problem) -> np.ndarray:
    """φ(x*)ᵀ S_c φ(x*) for every test point and output, (M, C): C independent regressions."""
    Phi, Phi_s = _features(problem.X_train), _features(problem.X_test)
    y = problem.y_train.detach().double().numpy()
    cols = [
        np.einsum("mi,ij,mj->m", Phi_s, blr.posterior((Phi, y[:, c])).cov, Phi_s)
        for c, (blr, _) in enumerate(_per_output_blr(problem))
    ]
    return np.stack(cols, axis=1)


def blr_multi_output_evidence(problem: Problem) -> float:
    """Σ_c log N(y_c; 0, σ_c²I + Φ V_c⁻¹ Φᵀ): the exact evidence, a sum over the outputs."""
    Phi = _features(problem.X_train)
    y = problem.y_train.detach().double().numpy()
    return float(
        sum(
            blr.log_evidence((Phi, y[:, c])) for c, (blr, _) in enumerate(_per_output_blr(problem))
        )
    )


_CASES = {
    "linear-gaussian-multi-output": "Linear(4, 3), σ² = (0.1, 0.4, 0.9): 3 regressions",
    "mlp-regression-multi-output": "tanh MLP 3-6-3 (p = 45), σ² = (0.1, 0.4, 0.9), N·C = 36",
}


def _register(name: str, text: str) -> None:
    exact = name.startswith("linear")

    @conformance_case(
        f"predictive/{name}",
        capability="predictive_variance",
        problem=name,
        description=f"per-output noise, variances (M, C): {text}",
    )
    def variances(target, problem: Problem, oracle: DenseOracle, *, seed: int) -> Check:
        expected = blr_multi_output_variances(problem) if exact else None
        return check_variances(target, problem, oracle, expected=expected)

    @conformance_case(
        f"evidence/{name}",
        capability="log_marginal_likelihood",
        problem=name,
        description=f"per-output Gaussian log-likelihood and log det Ω: {text}",
    )
    def evidence(target, problem: Problem, oracle: DenseOracle, *, seed: int) -> Check:
        expected = blr_multi_output_evidence(problem) if exact else None
        return check_evidence(target, problem, oracle, expected=expected)


for _name, _text in _CASES.items():
    _register(_name, _text)
