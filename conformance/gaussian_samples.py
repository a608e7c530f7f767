"""Two exact tests of samples against a Gaussian N(μ, P⁻¹) given by its precision P.

With P = L Lᵀ (Cholesky), draws θ ~ N(μ, P⁻¹) whiten to z = Lᵀ(θ − μ) ~ N(0, I_k)
independently. For n draws, with z̄ their mean and Ŝ = (1/n) Σ z zᵀ (nŜ ~ Wishart_k(n, I)
under the null):

- mean: n‖z̄‖² ~ χ²_k (exact);
- covariance: the likelihood-ratio statistic for Σ = I with known mean,
  λ = n (tr Ŝ − log det Ŝ − k), Bartlett-corrected, ρλ → χ²_{k(k+1)/2} with
  ρ = 1 − (2k² + 3k − 1)/(6n(k + 1)) (Anderson 2003, §10.8; Muirhead 1982, §8.4), n the
  Wishart degrees of freedom: the mean is known (Ŝ about 0, not about z̄), so n is the number
  of draws, not n − 1 as for an estimated mean. Without
  ρ the statistic's mean exceeds k(k + 1)/2 by about k(2k² + 3k − 1)/(12n): at k = 59 and
  n = 4000 by 8.8, a seventh of its standard deviation 59.5, and the test at level 5e-4
  rejects a correct sampler with probability 8.1e-4 (simulated, 4·10⁵ Wishart draws); with ρ,
  4.8e-4 (k = 41: 6.7e-4 without, 4.9e-4 with; k = 12: 5.5e-4 and 5.4e-4).

Each is rejected at ``LEVEL`` = 5e-4, so a correct sampler fails a case with probability at
most 1e-3 (Bonferroni). The covariance test has power against every wrong covariance: if
the draws have covariance Σ ≠ P⁻¹, the whitened covariance is C = Lᵀ Σ L and the statistic
grows like n (tr C − log det C − k) (:func:`expected_statistic`), against a critical value
of about k(k + 1)/2 + 3.3·√(k(k + 1)).

References
----------
.. [1] T. W. Anderson, "An Introduction to Multivariate Statistical Analysis", 3rd ed.,
   Wiley (2003), §10.8 (testing Σ = Σ0; the modified likelihood-ratio criterion and its
   asymptotic expansion).
.. [2] R. J. Muirhead, "Aspects of Multivariate Statistical Theory", Wiley (1982), §8.4
   (the Bartlett correction of the likelihood-ratio test of Σ = I).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from laplace_lab._random import keyed_seed

__all__ = [
    "LEVEL",
    "WhitenedTest",
    "bartlett_factor",
    "expected_statistic",
    "sample_seed",
    "whitened_test",
]

#: Level of each of the two tests of a case (case false-alarm rate ≤ 2 × LEVEL).
LEVEL = 5e-4


def bartlett_factor(k: int, n: int) -> float:
    """ρ = 1 − (2k² + 3k − 1)/(6n(k + 1)): ρλ has the mean of χ²_{k(k+1)/2} to O(n⁻²)."""
    return 1.0 - (2 * k * k + 3 * k - 1) / (6.0 * n * (k + 1))


def expected_statistic(precision: np.ndarray, covariance: np.ndarray, n: int) -> float:
    """n (tr C − log det C − k) with C = Lᵀ Σ L (P = L Lᵀ): what the covariance statistic
    grows to when the draws have covariance Σ instead of P⁻¹ (0 when Σ = P⁻¹)."""
    L = np.linalg.cholesky(precision)
    C = L.T @ covariance @ L
    _, logdet = np.linalg.slogdet(C)
    return float(n * (np.trace(C) - logdet - C.shape[0]))


def sample_seed(*key: Any, seed: int) -> int:
    """The integer seed a case passes to the target: its named stream, redrawn by ``seed``."""
    return int(keyed_seed(*key, seed=seed).generate_state(1)[0])


@dataclass(frozen=True)
class WhitenedTest:
    """The two tests of n whitened draws of dimension k (module docstring)."""

    n: int
    k: int
    p_mean: float
    p_covariance: float
    trace_ratio: float  # E‖z‖²/k, 1 for the right covariance
    eigenvalue_range: tuple[float, float]  # of Ŝ: near 1 ± 2√(k/n) for the right one

    @property
    def df(self) -> int:
        """The covariance test's degrees of freedom k(k + 1)/2."""
        return self.k * (self.k + 1) // 2

    @property
    def passed(self) -> bool:
        """Neither test rejects at ``LEVEL``."""
        return self.p_mean >= LEVEL and self.p_covariance >= LEVEL

    def summary(self) -> str:
        """One line: both p-values, the trace ratio and the spread of Ŝ's eigenvalues."""
        lo, hi = self.eigenvalue_range
        return (
            f"{self.n} samples, k = {self.k}: mean test p = {self.p_mean:.3g}, covariance test "
            f"(χ²_{self.df}) p = {self.p_covariance:.3g} (level {LEVEL:g} each); "
            f"E‖z‖²/k = {self.trace_ratio:.4g} (1 if right), whitened covariance's "
            f"eigenvalues in [{lo:.3g}, {hi:.3g}]"
        )

    def details(self) -> dict[str, Any]:
        """The numbers, for the report's JSON."""
        return {
            "p_mean": self.p_mean,
            "p_covariance": self.p_covariance,
            "trace_ratio": self.trace_ratio,
            "whitened_eigenvalues": list(self.eigenvalue_range),
        }


def whitened_test(theta: np.ndarray, mean: np.ndarray, precision: np.ndarray) -> WhitenedTest:
    """Test draws ``theta`` (n, k) against N(``mean``, ``precision``⁻¹).

    Parameters
    ----------
    theta : (n, k) float64 array
        The draws.
    mean : (k,) float64 array
        μ.
    precision : (k, k) float64 array
        P, symmetric positive definite (the oracle's).

    Returns
    -------
    WhitenedTest
    """
    L = np.linalg.cholesky(precision)
    z = (np.asarray(theta, dtype=np.float64) - mean) @ L
    n, k = z.shape
    t_mean = n * float(np.sum(z.mean(axis=0) ** 2))
    S = z.T @ z / n
    _, logdet = np.linalg.slogdet(S)
    t_cov = bartlett_factor(k, n) * n * (float(np.trace(S)) - logdet - k)
    eig = np.linalg.eigvalsh(S)
    return WhitenedTest(
        n=n,
        k=k,
        p_mean=float(stats.chi2.sf(t_mean, k)),
        p_covariance=float(stats.chi2.sf(t_cov, k * (k + 1) // 2)),
        trace_ratio=float(np.trace(S) / k),
        eigenvalue_range=(float(eig[0]), float(eig[-1])),
    )
