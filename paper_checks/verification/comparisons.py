"""A tested mean, which the decision rules of :mod:`.decisions` decide on.

It is a per-replicate statistic against a threshold, with its one-sided bounds and its
power.

A :class:`Test` holds the replicates of one statistic (or an estimate with its standard error)
and the side of the threshold a claim needs. Its one-sided (1 − α) bounds are Student-t bounds;
:meth:`Test.detectable` is the smallest distance from the threshold it would detect with 80%
power, and :meth:`Test.replicates_needed` the replicates that would detect the observed one
(normal approximation; Chow, Shao & Wang 2008, §3.1).

References
----------
.. [1] S.-C. Chow, J. Shao, H. Wang, *Sample Size Calculations in Clinical Research*, 2nd ed.,
   Chapman & Hall/CRC, 2008, §3.1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["ALPHA", "POWER", "Test", "cross_validated", "proportion", "t_quantile", "test"]

#: The level of every one-sided test, fixed before measuring.
ALPHA = 0.05
#: The power at which an INCONCLUSIVE verdict states the replicates that would decide.
POWER = 0.8


def t_quantile(q: float, df: float) -> float:
    """Student t quantile (the normal one for infinite df)."""
    from scipy.stats import t

    return float(t.ppf(q, df)) if math.isfinite(df) else _z(q)


def _z(q: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(q))


@dataclass(frozen=True)
class Test:
    """One tested mean: ``label``'s replicates against ``threshold``.

    Parameters
    ----------
    label : str
        What is measured (e.g. ``"NLL of Laplace − NLL of FSP-Laplace"``).
    values : tuple of float
        The statistic per replicate (empty when ``mean``/``se`` are given directly).
    threshold : float
        The value the claim compares the mean with.
    side : {+1, −1}
        The claim needs the mean above (+1) or below (−1) the threshold.
    mean, se, df : float
        The estimate, its standard error and degrees of freedom (from ``values`` by default;
        a claim with a standard error of its own, a bootstrap or a binomial one, gives them).
    """

    label: str
    values: tuple[float, ...]
    threshold: float
    side: int
    mean: float
    se: float
    df: float

    @property
    def n(self) -> int:
        """The number of replicates (0 when the estimate was given)."""
        return len(self.values)

    @property
    def effect(self) -> float:
        """The estimate in the claimed direction: side × (mean − threshold)."""
        return self.side * (self.mean - self.threshold)

    def bound(self, alpha: float, *, toward: int) -> float:
        """The one-sided (1 − alpha) confidence bound of the mean: the lower bound for
        ``toward = +1``, the upper one for ``toward = −1``."""
        if self.se == 0.0:
            return self.mean
        return self.mean - toward * t_quantile(1.0 - alpha, self.df) * self.se

    def significant(self, alpha: float, *, direction: int) -> bool:
        """The mean lies beyond the threshold in ``direction`` (+1 above, −1 below) at level
        alpha (one-sided)."""
        b = self.bound(alpha, toward=direction)
        return b > self.threshold if direction > 0 else b < self.threshold

    def detectable(self, alpha: float) -> float:
        """The smallest |mean − threshold| this test detects with :data:`POWER` at level
        alpha (inf without a standard error)."""
        if not math.isfinite(self.se):
            return math.inf
        return (t_quantile(1.0 - alpha, self.df) + t_quantile(POWER, self.df)) * self.se

    def replicates_needed(self, alpha: float, *, distance: float | None = None) -> float:
        """Replicates that detect the observed |mean − threshold| (or ``distance``) with
        :data:`POWER` at level alpha at the observed variance; inf when the distance is 0.

        For a test given by its estimate and standard error (no replicates), the number is a
        multiple of the sample behind that standard error (1 = the current one)."""
        gap = abs(self.mean - self.threshold) if distance is None else abs(distance)
        sd = self.se * math.sqrt(max(self.n, 1))
        if gap == 0.0 or not math.isfinite(sd):
            return math.inf
        if sd == 0.0:
            return float(max(self.n, 2))
        return float(math.ceil(((_z(1.0 - alpha) + _z(POWER)) * sd / gap) ** 2))

    def text(self, alpha: float, fmt: str = ".3g") -> str:
        """``label mean [one-sided bounds at alpha] (n = N), needed > threshold``."""
        lo, hi = self.bound(alpha, toward=+1), self.bound(alpha, toward=-1)
        rel = ">" if self.side > 0 else "<"
        n = f"n = {self.n}" if self.n else f"se {self.se:{fmt}}"
        return (
            f"{self.label} {self.mean:{fmt}} [{lo:{fmt}}, {hi:{fmt}}] ({n}), "
            f"needed {rel} {self.threshold:{fmt}}"
        )


def proportion(label: str, successes: int, n: int, *, threshold: float, side: int = +1) -> Test:
    """A :class:`Test` of a probability from ``successes`` of ``n`` independent trials: the
    score test, whose standard error sqrt(p₀(1 − p₀)/n) is taken at the threshold p₀.

    Indicators averaged by a t test have a standard error of 0 when every trial succeeds (or
    none does), which would make any number of trials certain; the score test's does not.

    References
    ----------
    .. [1] A. Agresti and B. A. Coull, "Approximate is better than 'exact' for interval
       estimation of binomial proportions", The American Statistician 52(2), 1998.
    """
    if not (isinstance(n, int | np.integer) and n >= 1):
        raise ValueError(f"n must be a positive integer; got n={n!r}")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must lie in [0, {n}]; got successes={successes!r}")
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be a probability in (0, 1]; got {threshold!r}")
    se = math.sqrt(threshold * (1.0 - threshold) / n)
    return test(label, threshold=threshold, side=side, mean=successes / n, se=se)


def cross_validated(
    label: str,
    values: Sequence[float],
    *,
    test_over_train: float,
    threshold: float = 0.0,
    side: int = +1,
) -> Test:
    """A :class:`Test` of a mean over the test folds of (repeated) cross-validation, with the
    corrected resampled standard error of Nadeau and Bengio (2003).

    The folds of one data set share their training rows, so their scores are correlated and
    the plain standard error s/√J understates the uncertainty; the corrected variance of the
    mean is (1/J + n_test/n_train)·s², with J − 1 degrees of freedom. ``test_over_train`` is
    n_test/n_train of one fold.

    References
    ----------
    .. [1] C. Nadeau and Y. Bengio, "Inference for the Generalization Error", Machine
       Learning 52 (2003) 239–281, §4 (the corrected resampled t-test).
    """
    vals = np.asarray(values, dtype=float).ravel()
    if vals.size < 2 or not np.all(np.isfinite(vals)):
        raise ValueError(f"values of {label!r} must be at least 2 finite folds; got {vals}")
    if not (math.isfinite(test_over_train) and test_over_train > 0):
        raise ValueError(f"test_over_train must be > 0; got {test_over_train!r}")
    var = float(np.var(vals, ddof=1))
    se = math.sqrt((1.0 / vals.size + test_over_train) * var)
    return test(
        label,
        mean=float(vals.mean()),
        se=se,
        df=float(vals.size - 1),
        threshold=threshold,
        side=side,
    )


def test(
    label: str,
    values: Sequence[float] | None = None,
    *,
    threshold: float = 0.0,
    side: int = +1,
    mean: float | None = None,
    se: float | None = None,
    df: float = math.inf,
) -> Test:
    """A :class:`Test` from replicates (``values``) or from an estimate (``mean``, ``se``)."""
    if side not in (-1, 1):
        raise ValueError(f"side must be +1 or -1; got side={side!r}")
    if values is not None:
        vals = tuple(float(v) for v in np.asarray(values, dtype=float).ravel())
        if len(vals) < 2:
            raise ValueError(f"values must hold at least 2 replicates; got {len(vals)}")
        if not all(math.isfinite(v) for v in vals):
            raise ValueError(f"values of {label!r} must be finite; got {vals}")
        m = float(np.mean(vals))
        s = float(np.std(vals, ddof=1)) / math.sqrt(len(vals))
        return Test(label, vals, float(threshold), side, m, s, float(len(vals) - 1))
    if mean is None or se is None:
        raise ValueError("test needs values, or both mean and se")
    if not (math.isfinite(mean) and math.isfinite(se) and se >= 0):
        raise ValueError(f"mean and se must be finite, se >= 0; got mean={mean}, se={se}")
    return Test(label, (), float(threshold), side, float(mean), float(se), float(df))
