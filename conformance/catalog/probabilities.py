"""Class-probability cases: the probit, Monte Carlo and Laplace-bridge predictives.

The capability ``predictive_probabilities(..., link, n_samples, seed)`` returns the class
probabilities of the linearized Laplace predictive f* ~ N(f̂(x*), G Ω⁻¹ Gᵀ) (Ω the full GGN
precision of the contract) under a link (:mod:`laplace_lab.conformance.links`). The oracle's
μ and Σ come from the dense float64 GGN (:class:`~laplace_lab.conformance.oracle.DenseOracle`).

Tolerances (:mod:`laplace_lab.conformance.tolerance`, fixed before any target ran):

- ``"probit"``, ``"bridge"``: deterministic functions of (μ, Σ); the target's rounding of
  μ (a forward pass) and Σ (the bilinear rule) propagated to first order through the link;
- ``"mc"``: the oracle is the defining integral E[σ(f)] or E[softmax(f)] by quadrature
  (error < 1e-12, :mod:`laplace_lab.conformance.quadrature`), and the tolerance is Bernstein's
  bound on the mean of ``n_samples`` = 100 000 draws with the oracle's own per-draw variance
  Var[p_j(f)], at level 1e-3 Bonferroni-split over the entries (a correct sampler fails a
  case with probability ≤ 1e-3), plus the rounding term and the quadrature error.

Every case has posterior variances of 0.36–1.4 on the logits (α = 2.5, N′ < p), and records
in ``variance_effect_over_tolerance`` by how many tolerances a target that ignores the
variance (σ or softmax of μ) fails; three classes, so a per-class scaling and its absence
differ; the bridge is offered for C ≥ 3 only (with two logits its mean is the softmax of the
conditioned mean and ignores the spread: docs/mathematics.md).

References
----------
.. [1] E. Daxberger, A. Kristiadi, A. Immer, R. Eschenhagen, M. Bauer, P. Hennig, "Laplace
   Redux — Effortless Bayesian Deep Learning", NeurIPS 2021, arXiv:2106.14806, §2.
.. [2] M. Hobbhahn, A. Kristiadi, P. Hennig, "Fast predictive uncertainty for classification
   with Bayesian deep networks", UAI 2022, arXiv:2003.01227, §3.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from laplace_lab._random import keyed_seed
from laplace_lab.conformance.compare import compare_values, target_array
from laplace_lab.conformance.links import LINK_FUNCTIONS, link_sensitivity
from laplace_lab.conformance.oracle import DenseOracle
from laplace_lab.conformance.problems import Problem
from laplace_lab.conformance.quadrature import QUADRATURE_ERROR, link_moments
from laplace_lab.conformance.registry import Check, conformance_case
from laplace_lab.conformance.runner import call_expression, call_target
from laplace_lab.conformance.tolerance import SAFETY, monte_carlo_bound, unit_roundoff

CAPABILITY = "predictive_probabilities"
#: Draws asked of a Monte Carlo target.
N_SAMPLES = 100_000
#: The false-alarm rate of a Monte Carlo case (Bonferroni over its entries).
LEVEL = 1e-3


def _squeeze(p: np.ndarray, problem: Problem) -> np.ndarray:
    return p[:, 0] if problem.likelihood == "binary" else p


def expected_probabilities(oracle: DenseOracle, link: str) -> tuple[np.ndarray, np.ndarray]:
    """(oracle probabilities, tolerance) for ``link`` on every test point, (M, C) (C = 1 for
    one logit); for ``"mc"`` the tolerance holds for ``N_SAMPLES`` draws at ``LEVEL``."""
    mu, cov = oracle.test_outputs, oracle.output_covariance
    tau_mu, tau_cov = oracle.mean_tolerance(), oracle.output_covariance_tolerance()
    u = unit_roundoff(oracle.problem.dtype)
    C = mu.shape[1]
    if link == "mc":
        moments = [link_moments(m, S) for m, S in zip(mu, cov, strict=True)]
        p = np.stack([e for e, _ in moments])
        var = np.stack([v for _, v in moments])
        rounding = 0.25 * (tau_mu.sum(axis=1, keepdims=True) + tau_cov.sum(axis=(1, 2))[:, None])
        tol = monte_carlo_bound(var, N_SAMPLES, LEVEL) + rounding + QUADRATURE_ERROR
        return p, tol + SAFETY * (C + 10) * u
    fn = LINK_FUNCTIONS[link]
    p = np.stack([fn(m, S) for m, S in zip(mu, cov, strict=True)])
    sens = np.stack(
        [link_sensitivity(fn, *args) for args in zip(mu, cov, tau_mu, tau_cov, strict=True)]
    )
    return p, sens + SAFETY * (C + 10) * u


def _plug_in(oracle: DenseOracle, link: str) -> np.ndarray:
    """The probabilities with the variance ignored: σ(μ) or softmax(μ)."""
    mu = oracle.test_outputs
    if mu.shape[1] == 1:
        return 1.0 / (1.0 + np.exp(-mu))
    z = np.exp(mu - mu.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def check_probabilities(
    target, problem: Problem, oracle: DenseOracle, *, link: str, seed: int
) -> Check:
    """The target's class probabilities under ``link`` against the oracle."""
    sample_seed = int(
        keyed_seed("conformance-probabilities", problem.name, link, seed=seed).generate_state(1)[0]
    )
    kw = {"link": link, "n_samples": N_SAMPLES, "seed": sample_seed}
    out = call_target(target, CAPABILITY, problem, rows=slice(None), **kw)
    expected, tol = (_squeeze(a, problem) for a in expected_probabilities(oracle, link))
    expr = call_expression(CAPABILITY, problem, rows=slice(None), **kw)
    got = target_array(out, f"the {link} class probabilities", expected.shape, expr)

    def call(i: int | None) -> str:
        rows = slice(None) if i is None else slice(i, i + 1)
        return call_expression(CAPABILITY, problem, rows=rows, **kw)

    what = "the defining integral" if link == "mc" else f"the {link} formula"
    check = compare_values(
        got,
        expected,
        tol,
        what=f"{link} probabilities vs {what}",
        call=call,
        per_point=link != "mc",  # Monte Carlo draws depend on the batch
    )
    effect = float(np.max(np.abs(_squeeze(_plug_in(oracle, link), problem) - expected) / tol))
    details = {**check.details, "variance_effect_over_tolerance": effect}
    summary = f"{check.summary}; ignoring the variance would be off by {effect:.3g} tolerances"
    return replace(check, summary=summary, details=details)


_CASES = {
    ("probit", "mlp-binary"): "one logit: σ(μ/√(1 + πv/8))",
    ("probit", "mlp-binary-float32"): "one logit in float32",
    ("probit", "mlp-multiclass"): "3 logits: softmax of μ_k/√(1 + πΣ_kk/8)",
    ("probit", "mlp-multiclass-float32"): "3 logits in float32",
    ("mc", "mlp-binary"): "E[σ(f)] from 100 000 draws vs 1-D quadrature",
    ("mc", "mlp-multiclass"): "E[softmax(f)] from 100 000 draws vs 2-D quadrature",
    ("mc", "mlp-multiclass-float32"): "the same in float32",
    ("bridge", "mlp-multiclass"): "Laplace bridge α/Σα, zero-sum conditioned Gaussian",
    ("bridge", "mlp-multiclass-float32"): "the same in float32",
}


def _register(link: str, problem: str, text: str) -> None:
    @conformance_case(
        f"probabilities/{link}/{problem}", capability=CAPABILITY, problem=problem, description=text
    )
    def case(target, problem: Problem, oracle: DenseOracle, *, seed: int) -> Check:
        return check_probabilities(target, problem, oracle, link=link, seed=seed)


for (_link, _name), _text in _CASES.items():
    _register(_link, _name, _text)
