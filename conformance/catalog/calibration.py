"""Simulation-based calibration (SBC) of posterior samples on the linear-Gaussian model.

If θ ~ p(θ) and y ~ p(y | θ), then θ is a draw from the posterior p(θ | y); so if a sampler
draws θ_1, …, θ_L exactly from p(θ | y), the rank of u(θ) among u(θ_1), …, u(θ_L) is uniform
on {0, …, L} for any function u (Talts et al. 2018, Thm. 1). On Bayesian linear regression
(``linear-gaussian``: f(x) = wᵀx + b, Gaussian noise σ0², prior N(0, V⁻¹)) the Laplace
posterior N(θ̂, Ω⁻¹), Ω = ΦᵀΦ/σ0² + V, *is* the posterior, so a correct
``posterior_samples`` passes SBC exactly.

A case repeats R = 100 times, from a seeded stream: θ ~ N(0, V⁻¹), y = Φθ + ε with
ε ~ N(0, σ0² I), the model set to the posterior mean θ̂ = Ω⁻¹Φᵀy/σ0² (its MAP), and L = 99
samples asked of the target (its own seed each time). The functionals are u_i(θ) = r_iᵀθ,
r_i the columns of the Cholesky factor of Ω = R Rᵀ (Ω does not depend on y): under the
posterior the u_i are independent, so the R·k ranks are independent uniform draws on
{0, …, L} for a correct sampler. They are pooled into 10 bins of 10 ranks and tested by
Pearson's χ² with 9 degrees of freedom at level 1e-3 (fixed before any target ran): a
correct sampler fails with probability 1e-3. A sampler with a wrong spread makes the
histogram ∩-shaped (too wide: the true value falls in the middle of the samples) or
∪-shaped (too narrow).

References
----------
.. [1] S. Talts, M. Betancourt, D. Simpson, A. Vehtari, A. Gelman, "Validating Bayesian
   inference algorithms with simulation-based calibration", arXiv:1804.06788 (2018), §2
   (Thm. 1, rank uniformity) and §4 (the rank histogram and its χ² test).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from scipy import stats

from laplace_lab._random import keyed_generator
from laplace_lab.conformance.compare import target_array
from laplace_lab.conformance.contract import Target
from laplace_lab.conformance.oracle import DenseOracle
from laplace_lab.conformance.problems import Problem
from laplace_lab.conformance.registry import Check, conformance_case
from laplace_lab.conformance.runner import call_expression, call_target

__all__ = ["rank_histogram", "sbc_ranks"]

#: Simulated data sets R, posterior draws per data set L, histogram bins, level of the test.
N_DATASETS, N_DRAWS, BINS, LEVEL = 100, 99, 10, 1e-3


def _design(problem: Problem) -> np.ndarray:
    X = problem.X_train.detach().double().numpy()
    return np.hstack([X, np.ones((X.shape[0], 1))])  # parameters() order: weight, then bias


def _with_map(problem: Problem, theta: np.ndarray, y: np.ndarray) -> Problem:
    """The problem with data y and its model set to θ (in the model's dtype)."""
    import torch

    model = problem.fresh_model()
    with torch.no_grad():
        torch.nn.utils.vector_to_parameters(
            torch.as_tensor(theta, dtype=problem.dtype), model.parameters()
        )
    return replace(problem, model=model, y_train=torch.as_tensor(y, dtype=problem.dtype))


def sbc_ranks(target: Any, problem: Problem, *, seed: int) -> np.ndarray:
    """The (R, k) ranks of u_i(θ) among the target's L draws, over R simulated data sets.

    Parameters
    ----------
    target : Target or callable
        Declares ``posterior_samples`` (the conformance contract).
    problem : Problem
        A linear-Gaussian problem (its X_train, prior and noise; its y is not used).
    seed : int
        Seeds the simulation and the target's sampling seeds.
    """
    if not isinstance(target, Target):
        target = Target.from_callable(target)
    rng = keyed_generator("conformance-sbc", problem.name, seed=seed)
    Phi = _design(problem)
    V, s2 = problem.prior_vector(), problem.noise_var
    omega = Phi.T @ Phi / s2 + np.diag(V)
    R = np.linalg.cholesky(omega)  # u(θ) = Rᵀθ
    ranks = np.empty((N_DATASETS, V.size), dtype=np.int64)
    for r in range(N_DATASETS):
        theta = rng.normal(size=V.size) / np.sqrt(V)
        y = Phi @ theta + rng.normal(0.0, np.sqrt(s2), size=Phi.shape[0])
        sub = _with_map(problem, np.linalg.solve(omega, Phi.T @ y / s2), y)
        kw = {"subset": None, "n_samples": N_DRAWS, "seed": int(rng.integers(2**31))}
        out = call_target(target, "posterior_samples", sub, **kw)
        expr = call_expression("posterior_samples", sub, **kw)
        draws = target_array(out, "the posterior samples", (N_DRAWS, V.size), expr)
        ranks[r] = np.sum(draws @ R < theta @ R, axis=0)
    return ranks


def rank_histogram(target: Any, problem: Problem, *, seed: int) -> tuple[np.ndarray, float]:
    """(counts in ``BINS`` bins of the pooled ranks, p-value of Pearson's χ² test)."""
    ranks = sbc_ranks(target, problem, seed=seed)
    counts = np.bincount(ranks.reshape(-1) * BINS // (N_DRAWS + 1), minlength=BINS)
    expected = ranks.size / BINS
    statistic = float(np.sum((counts - expected) ** 2) / expected)
    return counts, float(stats.chi2.sf(statistic, BINS - 1))


def check_calibration(target, problem: Problem, oracle: DenseOracle, *, seed: int) -> Check:
    """The rank histogram of the target's samples against uniform (module docstring)."""
    counts, p_value = rank_histogram(target, problem, seed=seed)
    passed = p_value >= LEVEL
    outer = int(counts[0] + counts[-1])  # the tails: few if the draws are too wide
    summary = (
        f"SBC, {N_DATASETS} data sets × {N_DRAWS} draws, k = {problem.p} functionals: rank "
        f"histogram {counts.tolist()} (uniform: {N_DATASETS * problem.p // BINS} each), "
        f"χ²_{BINS - 1} p = {p_value:.3g} (level {LEVEL:g}); outer bins {outer}"
    )
    details = {"counts": counts.tolist(), "p_value": p_value, "outer_bins": outer}
    body = (
        "from laplace_lab.conformance.catalog.calibration import rank_histogram\n"
        f"counts, p_value = rank_histogram(target, problem, seed={seed})\n"
        f"print(counts, p_value)  # uniform counts, p ≥ {LEVEL:g}; got p = {p_value:.3g}"
    )
    return Check(passed, summary, details, body)


_PROBLEMS = {
    "linear-gaussian": "Bayesian linear regression: the Laplace posterior is exact",
    "linear-gaussian-diagonal-prior": "the same with a non-isotropic prior V",
}

for _problem, _text in _PROBLEMS.items():
    conformance_case(
        f"sbc/{_problem}", capability="posterior_samples", problem=_problem, description=_text
    )(check_calibration)
