"""Low-dimensional test functions of Bayesian optimisation with known global minima.

The closed forms follow Li, Rudner & Wilson (ICLR 2024), whose set-up the Bayesian-optimisation
experiment of Cinquin et al. (FSP-Laplace, arXiv:2407.13711, §4 and App. B.2) derives from:
Branin (2-D), Hartmann-3 (3-D) and Ackley (any dimension). Each function is minimised on its
box; Bayesian optimisation maximises the reward −f.

References
----------
.. [1] T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace: Function-Space
   Priors for the Laplace Approximation in Bayesian Deep Learning", NeurIPS 2024,
   arXiv:2407.13711, §4 ("Bayesian optimization"), Fig. 3 and App. B.2.
.. [2] Y. L. Li, T. G. J. Rudner, A. G. Wilson, "A Study of Bayesian Neural Network Surrogates
   for Bayesian Optimization", ICLR 2024.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from laplace_lab._checks import real_array

__all__ = ["ACKLEY2", "BRANIN", "HARTMANN3", "OBJECTIVES", "Objective"]


@dataclass(frozen=True)
class Objective:
    """A function to minimise on the box [low, high] ⊂ ℝ^d.

    Parameters
    ----------
    name : str
    low, high : tuple of float
        Corners of the search box.
    minimum : float
        The global minimum f*.
    minimisers : tuple of tuples
        Points where f = f*.
    formula : callable
        (n, d) array in the box ↦ (n,) values.
    """

    name: str
    low: tuple[float, ...]
    high: tuple[float, ...]
    minimum: float
    minimisers: tuple[tuple[float, ...], ...]
    formula: Callable[[np.ndarray], np.ndarray]

    @property
    def dim(self) -> int:
        """d."""
        return len(self.low)

    def __call__(self, X: Any) -> np.ndarray:
        """f at the rows of X, an (n, d) array (a (d,) array is one point)."""
        X = np.asarray(real_array(X, "X"), dtype=np.float64)
        X = X[None, :] if X.ndim == 1 else X
        if X.ndim != 2 or X.shape[1] != self.dim or not np.all(np.isfinite(X)):
            raise ValueError(
                f"X must be a finite (n, {self.dim}) array for {self.name}; got shape {X.shape}"
            )
        return np.asarray(self.formula(X), dtype=np.float64)

    def from_unit(self, U: Any) -> np.ndarray:
        """Points of the unit cube [0, 1]^d mapped affinely onto the box."""
        lo, hi = np.asarray(self.low), np.asarray(self.high)
        return lo + np.asarray(U, dtype=np.float64) * (hi - lo)


def _branin(X: np.ndarray) -> np.ndarray:
    x1, x2 = X[:, 0], X[:, 1]
    b, c, t = 5.1 / (4 * np.pi**2), 5 / np.pi, 1 / (8 * np.pi)
    return (x2 - b * x1**2 + c * x1 - 6) ** 2 + 10 * (1 - t) * np.cos(x1) + 10


_H3_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
_H3_A = np.array([[3.0, 10, 30], [0.1, 10, 35], [3.0, 10, 30], [0.1, 10, 35]])
_H3_P = 1e-4 * np.array(
    [[3689, 1170, 2673], [4699, 4387, 7470], [1091, 8732, 5547], [381, 5743, 8828]]
)


def _hartmann3(X: np.ndarray) -> np.ndarray:
    inner = np.einsum("ij,nij->ni", _H3_A, (X[:, None, :] - _H3_P[None]) ** 2)
    return -np.exp(-inner) @ _H3_ALPHA


def _ackley(X: np.ndarray) -> np.ndarray:
    d = X.shape[1]
    r = np.sqrt(np.sum(X * X, axis=1) / d)
    return -20 * np.exp(-0.2 * r) - np.exp(np.mean(np.cos(2 * np.pi * X), axis=1)) + 20 + np.e


#: Branin–Hoo on [−5, 10] × [0, 15]: f* = 5/(4π) ≈ 0.397887 at three points.
BRANIN = Objective(
    "branin",
    (-5.0, 0.0),
    (10.0, 15.0),
    5 / (4 * np.pi),
    ((-np.pi, 12.275), (np.pi, 2.275), (3 * np.pi, 2.475)),
    _branin,
)
#: Hartmann-3 on [0, 1]³: f* = −3.86278 at (0.114614, 0.555649, 0.852547).
HARTMANN3 = Objective(
    "hartmann3",
    (0.0, 0.0, 0.0),
    (1.0, 1.0, 1.0),
    -3.86278214782076,
    ((0.114614, 0.555649, 0.852547),),
    _hartmann3,
)
#: Ackley in 2-D on [−32.768, 32.768]²: f* = 0 at the origin.
ACKLEY2 = Objective("ackley2", (-32.768,) * 2, (32.768,) * 2, 0.0, ((0.0, 0.0),), _ackley)

#: The shipped objectives by name.
OBJECTIVES = {f.name: f for f in (BRANIN, HARTMANN3, ACKLEY2)}
