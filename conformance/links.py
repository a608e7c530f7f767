"""The oracle's class probabilities of a Gaussian over logits, one link at a time.

At a test point the linearized Laplace predictive puts f* ~ N(μ, Σ) on the logits (μ = f̂(x*),
Σ = G Ω⁻¹ Gᵀ; :class:`~laplace_lab.conformance.oracle.DenseOracle`). The capability
``predictive_probabilities`` returns class probabilities under one of three links, written
here in float64 without any code of :mod:`laplace_lab.numerics` (docs/mathematics.md,
"Class probabilities of the linearized predictive"):

- ``"probit"``: σ(μ/√(1 + πΣ/8)) for one logit; softmax_j(μ_j/√(1 + πΣ_jj/8)) for C logits;
- ``"mc"``: E[σ(f)] or E[softmax(f)], the defining integral, by the quadrature of
  :mod:`.quadrature` (a target estimates it from ``n_samples`` draws);
- ``"bridge"`` (C ≥ 3 logits): the Laplace bridge. The Gaussian is first conditioned on a
  zero sum of the logits (softmax is invariant along 1), μ' = μ − Σ1 (1ᵀμ)/(1ᵀΣ1),
  Σ' = Σ − Σ11ᵀΣ/(1ᵀΣ1); then α_k = (1 − 2/K + e^{μ'_k} Σ_l e^{−μ'_l}/K²)/Σ'_kk and the
  probabilities are the Dirichlet mean α/Σ_l α_l.

References
----------
.. [1] D. J. C. MacKay, "The evidence framework applied to classification networks", Neural
   Computation 4(5) (1992) (the probit approximation for one logit).
.. [2] E. Daxberger, A. Kristiadi, A. Immer, R. Eschenhagen, M. Bauer, P. Hennig, "Laplace
   Redux — Effortless Bayesian Deep Learning", NeurIPS 2021, arXiv:2106.14806, §2 (the
   multiclass probit, and the "mc" and "bridge" predictives of laplace-torch).
.. [3] M. Hobbhahn, A. Kristiadi, P. Hennig, "Fast predictive uncertainty for classification
   with Bayesian deep networks", UAI 2022, arXiv:2003.01227, §3 (the Laplace bridge α_k, the
   inverse of the Laplace approximation of a Dirichlet in the softmax basis, and the
   zero-sum condition on the Gaussian).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.special import expit, softmax

__all__ = ["LINK_FUNCTIONS", "bridge", "link_sensitivity", "probit"]


def probit(mu: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """The probit approximation at one test point: (1,) P(y = 1) for one logit, (C,) else."""
    z = mu / np.sqrt(1.0 + np.pi * np.diagonal(cov) / 8.0)
    return expit(z) if mu.size == 1 else softmax(z)


def bridge(mu: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """The Laplace bridge's Dirichlet mean α/Σα at one test point, C ≥ 3 logits."""
    K = mu.size
    s = cov.sum(axis=1)
    t = s.sum()
    mu0 = mu - s * mu.sum() / t
    var0 = np.diagonal(cov) - s * s / t
    alpha = (1.0 - 2.0 / K + np.exp(mu0) * np.sum(np.exp(-mu0)) / K**2) / var0
    return alpha / alpha.sum()


#: The closed-form links by name.
LINK_FUNCTIONS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "probit": probit,
    "bridge": bridge,
}


def link_sensitivity(
    link: Callable[[np.ndarray, np.ndarray], np.ndarray],
    mu: np.ndarray,
    cov: np.ndarray,
    tau_mu: np.ndarray,
    tau_cov: np.ndarray,
) -> np.ndarray:
    """Σ_k |∂p/∂μ_k| τ_μ,k + Σ_{k≤l} |∂p/∂Σ_kl| τ_Σ,kl at one test point (Σ_kl and Σ_lk
    moved together), the derivatives by central differences of relative step 1e-6."""
    total = np.zeros_like(link(mu, cov))
    for k in range(mu.size):
        h = 1e-6 * max(1.0, abs(float(mu[k])))
        e = np.zeros_like(mu)
        e[k] = h
        total += np.abs(link(mu + e, cov) - link(mu - e, cov)) / (2 * h) * tau_mu[k]
    h = 1e-6 * float(np.max(np.diagonal(cov)))
    for k in range(mu.size):
        for j in range(k, mu.size):
            E = np.zeros_like(cov)
            E[k, j] = E[j, k] = h
            total += np.abs(link(mu, cov + E) - link(mu, cov - E)) / (2 * h) * tau_cov[k, j]
    return total
