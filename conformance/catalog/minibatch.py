"""Curvature of a minibatch scaled to the data set: P = (N/n)·GGN_batch + V.

The target gets n = 8 of the N = 24 rows the model was fitted on and ``n_data`` = N, and
must scale the minibatch's GGN by N/n, the factor that makes it an unbiased estimate of the
data set's GGN under uniform subsampling (E[(N/n) Σ_{i∈B} G_i] = Σ_{i=1}^N G_i). The
reference is the dense oracle's GGN of the n rows times N/n, plus V; the scale n/N (the
inverse) is off by (N/n)² = 9 in the curvature.

References
----------
.. [1] A. Immer, M. Korzepa, M. Bauer, "Improving predictions of Bayesian neural nets via
   local linearization", AISTATS 2021, arXiv:2008.08400, §3 (the GGN Laplace posterior).
.. [2] E. Daxberger, A. Kristiadi, A. Immer, R. Eschenhagen, M. Bauer, P. Hennig, "Laplace
   Redux — Effortless Bayesian Deep Learning", NeurIPS 2021, arXiv:2106.14806, §2 (the
   curvature as a sum over the training data).
"""

from __future__ import annotations

import numpy as np

from laplace_lab.conformance.compare import compare_values, target_array
from laplace_lab.conformance.oracle import DenseOracle
from laplace_lab.conformance.problems import Problem
from laplace_lab.conformance.registry import Check, conformance_case
from laplace_lab.conformance.runner import call_expression, call_target
from laplace_lab.conformance.tolerance import variance_tolerance

CAPABILITY = "minibatch_predictive_variance"


def scaled_precision(problem: Problem, oracle: DenseOracle) -> np.ndarray:
    """P = (N/n)·GGN of the minibatch + V (p × p)."""
    n = problem.X_train.shape[0]
    return (problem.n_data / n) * oracle.ggn + np.diag(oracle.V)


def minibatch_variances(problem: Problem, oracle: DenseOracle) -> np.ndarray:
    """gᵀP⁻¹g per test point (and output), (M,) or (M, C)."""
    G = oracle.G.reshape(-1, problem.p)
    v = np.sum(np.linalg.solve(scaled_precision(problem, oracle), G.T).T * G, axis=1)
    v = v.reshape(oracle.G.shape[:2])
    return v if problem.likelihood == "multiclass" else v[:, 0]


def check_minibatch(target, problem: Problem, oracle: DenseOracle, *, seed: int) -> Check:
    """The target's variances against the dense (N/n)-scaled minibatch GGN."""
    N = int(problem.n_data)
    out = call_target(target, CAPABILITY, problem, rows=slice(None), n_data=N)
    expected = minibatch_variances(problem, oracle)
    expr = call_expression(CAPABILITY, problem, rows=slice(None), n_data=N)
    got = target_array(out, "the minibatch predictive variance", expected.shape, expr)
    n = problem.X_train.shape[0]
    P = scaled_precision(problem, oracle)
    G = oracle.G.reshape(-1, problem.p)
    tol = variance_tolerance(P, G, oracle.V, dtype=problem.dtype, n_rows=oracle.n_rows)

    def call(i: int | None) -> str:
        rows = slice(None) if i is None else slice(i, i + 1)
        return call_expression(CAPABILITY, problem, rows=rows, n_data=N)

    return compare_values(
        got,
        expected,
        tol.reshape(expected.shape),
        what=f"variance vs the dense GGN of {n} rows × {N}/{n}",
        call=call,
    )


_PROBLEMS = {
    "mlp-regression-minibatch": "tanh MLP 3-8-1, 8 of 24 rows: GGN × 24/8",
    "mlp-multiclass-minibatch": "3-logit MLP, 8 of 24 rows: softmax GGN × 24/8",
    "mlp-binary-minibatch": "one logit, 8 of 24 rows: Bernoulli GGN × 24/8",
}

for _problem, _text in _PROBLEMS.items():
    conformance_case(
        f"minibatch/{_problem.removesuffix('-minibatch')}",
        capability=CAPABILITY,
        problem=_problem,
        description=_text,
    )(check_minibatch)
