"""Posterior-sample cases: two exact tests with a stated false-alarm rate.

With Ω_SS = R Rᵀ (Cholesky of the oracle's precision on S), samples θ ~ N(θ̂, Ω⁻¹) give
z = Rᵀ(θ_S − θ̂_S) ~ N(0, I_k) independently. For n samples, with z̄ their mean and
Ŝ = (1/n) Σ z zᵀ:

- mean: n‖z̄‖² ~ χ²_k (exact);
- covariance: the likelihood-ratio statistic for Σ = I with known mean,
  n (tr Ŝ − log det Ŝ − k) → χ²_{k(k+1)/2} (Anderson 2003, §10.8; k ≤ 12 and n = 4000 here,
  where the asymptotic law is accurate).

Each is rejected at level 5e-4, so a correct sampler fails a case with probability at most
1e-3 (Bonferroni), and the five cases together at most 5e-3 for a given seed; the seed is
fixed per case (``--seed`` redraws). Parameters outside the subset must equal θ̂ exactly.
Both tests have power against the known sampling bugs: a covariance that is the precision
scale instead of its inverse, a transposed square root, a missing σ0² or a dtype mix-up.

References
----------
.. [1] T. W. Anderson, "An Introduction to Multivariate Statistical Analysis", 3rd ed.,
   Wiley (2003), §10.8 (testing Σ = Σ0).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from laplace_lab._random import keyed_seed
from laplace_lab.conformance.compare import target_array
from laplace_lab.conformance.oracle import DenseOracle
from laplace_lab.conformance.problems import Problem
from laplace_lab.conformance.registry import Check, conformance_case
from laplace_lab.conformance.runner import call_expression, call_target

N_SAMPLES = 4000
#: Level of each of the two tests of a case (case false-alarm rate ≤ 2 × LEVEL).
LEVEL = 5e-4


def _test_statistics(z: np.ndarray) -> tuple[float, float, int]:
    """(p-value of the mean test, p-value of the covariance test, degrees of freedom)."""
    n, k = z.shape
    t_mean = n * float(np.sum(z.mean(axis=0) ** 2))
    S = z.T @ z / n
    _, logdet = np.linalg.slogdet(S)
    t_cov = n * (float(np.trace(S)) - logdet - k)
    df = k * (k + 1) // 2
    return float(stats.chi2.sf(t_mean, k)), float(stats.chi2.sf(t_cov, df)), df


def check_samples(target, problem: Problem, oracle: DenseOracle, *, seed: int) -> Check:
    """Whitened samples against N(0, I) (module docstring)."""
    subset = problem.subset
    sample_seed = int(
        keyed_seed("conformance-samples", problem.name, seed=seed).generate_state(1)[0]
    )
    kw = {"subset": subset, "n_samples": N_SAMPLES, "seed": sample_seed}
    expr = call_expression("posterior_samples", problem, **kw)
    out = call_target(target, "posterior_samples", problem, **kw)
    theta = target_array(out, "the posterior samples", (N_SAMPLES, problem.p), expr)
    S = np.arange(problem.p) if subset is None else subset
    rest = np.setdiff1d(np.arange(problem.p), S)
    moved = int(np.sum(np.any(theta[:, rest] != oracle.theta[rest], axis=0)))
    R = np.linalg.cholesky(oracle.omega[np.ix_(S, S)])
    z = (theta[:, S] - oracle.theta[S]) @ R
    p_mean, p_cov, df = _test_statistics(z)
    ratio = float(np.mean(np.sum(z * z, axis=1)) / S.size)  # 1 for the right covariance
    passed = p_mean >= LEVEL and p_cov >= LEVEL and moved == 0
    summary = (
        f"{N_SAMPLES} samples, k = {S.size}: mean test p = {p_mean:.3g}, covariance test "
        f"(χ²_{df}) p = {p_cov:.3g} (level {LEVEL:g} each); E‖z‖²/k = {ratio:.4g} (1 if "
        f"right); parameters outside the subset moved: {moved}"
    )
    details = {"p_mean": p_mean, "p_covariance": p_cov, "trace_ratio": ratio, "moved": moved}
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
