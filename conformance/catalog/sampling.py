"""Posterior-sample cases: two exact tests with a stated false-alarm rate.

With Ω_SS = R Rᵀ (Cholesky of the oracle's precision on S), samples θ ~ N(θ̂, Ω⁻¹) give
z = Rᵀ(θ_S − θ̂_S) ~ N(0, I_k) independently, tested by
:func:`laplace_lab.conformance.gaussian_samples.whitened_test`: the mean (n‖z̄‖² ~ χ²_k,
exact) and the covariance (the Bartlett-corrected likelihood-ratio test of Σ = I with known
mean, → χ²_{k(k+1)/2}; Anderson 2003, §10.8; k ≤ 12 and n = 4000 here).

Each is rejected at level 5e-4, so a correct sampler fails a case with probability at most
1e-3 (Bonferroni), and the five cases together at most 5e-3 for a given seed; the seed is
fixed per case (``--seed`` redraws). Parameters outside the subset must equal θ̂ exactly.
Both tests have power against the known sampling bugs: a covariance that is the precision
scale instead of its inverse, a transposed square root, a missing σ0² or a dtype mix-up.
The structured posteriors (diagonal, KFAC, low rank) are tested the same way in
:mod:`.structured_sampling`.

References
----------
.. [1] T. W. Anderson, "An Introduction to Multivariate Statistical Analysis", 3rd ed.,
   Wiley (2003), §10.8 (testing Σ = Σ0).
"""

from __future__ import annotations

import numpy as np

from laplace_lab.conformance.compare import target_array
from laplace_lab.conformance.gaussian_samples import sample_seed, whitened_test
from laplace_lab.conformance.oracle import DenseOracle
from laplace_lab.conformance.problems import Problem
from laplace_lab.conformance.registry import Check, conformance_case
from laplace_lab.conformance.runner import call_expression, call_target

#: Draws asked of a target per case.
N_SAMPLES = 4000


def check_samples(target, problem: Problem, oracle: DenseOracle, *, seed: int) -> Check:
    """Whitened samples against N(0, I) (module docstring)."""
    subset = problem.subset
    draws_seed = sample_seed("conformance-samples", problem.name, seed=seed)
    kw = {"subset": subset, "n_samples": N_SAMPLES, "seed": draws_seed}
    expr = call_expression("posterior_samples", problem, **kw)
    out = call_target(target, "posterior_samples", problem, **kw)
    theta = target_array(out, "the posterior samples", (N_SAMPLES, problem.p), expr)
    S = np.arange(problem.p) if subset is None else subset
    rest = np.setdiff1d(np.arange(problem.p), S)
    moved = int(np.sum(np.any(theta[:, rest] != oracle.theta[rest], axis=0)))
    test = whitened_test(theta[:, S], oracle.theta[S], oracle.omega[np.ix_(S, S)])
    ratio = test.trace_ratio
    passed = test.passed and moved == 0
    summary = f"{test.summary()}; parameters outside the subset moved: {moved}"
    details = {**test.details(), "moved": moved}
    body = (
        "import numpy as np\n"
        "from laplace_lab.conformance import DenseOracle\n"
        f"theta = np.asarray({expr}, dtype=float)\n"
        "oracle = DenseOracle(problem)\n"
        f"S = {S.tolist() if subset is not None else 'np.arange(problem.p)'}\n"
        "R = np.linalg.cholesky(oracle.omega[np.ix_(S, S)])\n"
        "z = (theta[:, S] - oracle.theta[S]) @ R  # must be N(0, I)\n"
        f"print(np.cov(z.T, bias=True).diagonal())  # ≈ 1; got E‖z‖²/k = {ratio:.4g}"
    )
    return Check(passed, summary, details, body)


_PROBLEMS = {
    "linear-gaussian": "Bayesian linear regression, all 5 parameters",
    "mlp-regression-subset": "12 of 41 parameters, unsorted; the others must stay at θ̂",
    "mlp-regression-subset-float32": "the same in float32",
    "mlp-binary-subset": "one logit, 12 parameters",
    "mlp-multiclass-subset": "3 logits, 12 parameters",
}

for _problem, _text in _PROBLEMS.items():
    conformance_case(
        f"samples/{_problem}", capability="posterior_samples", problem=_problem, description=_text
    )(check_samples)
