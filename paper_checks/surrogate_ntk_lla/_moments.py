"""Exact moments of the JVP sketch z_v = J v, computed without the variance formulas.

The claims of Ortega et al. (arXiv:2601.21835, §2.2) are about the first and second moments
of ``z_v(x) z_v(x')ᵀ`` over random probes v. Both are computed here from the probe law itself:

- a discrete probe law (Rademacher: v_i ∈ {−1, +1}) by enumerating all sign vectors, with
  their probabilities (:func:`discrete_moments`);
- the Gaussian law by tensor Gauss–Hermite quadrature in the span of the Jacobian rows:
  z = J v ~ N(0, J Jᵀ) depends on v only through k ≤ C coordinates, and 3 nodes per
  coordinate integrate every polynomial of degree ≤ 5 in each exactly (:func:`gaussian_moments`).

Neither route uses the fourth-moment formulas of :mod:`laplace_lab.numerics.ntk_sketch`, so
they can measure those formulas.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import numpy as np

__all__ = ["RADEMACHER", "Moments", "ProbeLaw", "discrete_moments", "gaussian_moments"]


class ProbeLaw(NamedTuple):
    """A discrete law of each probe coordinate v_i (values and their probabilities)."""

    values: tuple[float, ...]
    probs: tuple[float, ...]


#: The Rademacher law of the paper: v_i ∈ {−1, +1} uniformly.
RADEMACHER = ProbeLaw((-1.0, 1.0), (0.5, 0.5))


class Moments(NamedTuple):
    """Exact moments of the estimate z_v(x) z_v(x')ᵀ and of the scalar ‖z_v(x)‖²."""

    mean: np.ndarray  #: E[z zᵀ'] (C × C')
    var: np.ndarray  #: entrywise Var[z_a z'_b] (C × C')
    trace_var: float  #: Var[‖J1 v‖²] = Var[tr(z zᵀ)] (J1 only)


def _moments(Z1: np.ndarray, Z2: np.ndarray, w: np.ndarray) -> Moments:
    """Moments from probe samples (columns of Z1 = J1 V, Z2 = J2 V) with weights w."""
    prod = np.einsum("as,bs->sab", Z1, Z2)
    mean = np.einsum("s,sab->ab", w, prod)
    var = np.einsum("s,sab->ab", w, (prod - mean) ** 2)
    sq = np.sum(Z1 * Z1, axis=0)
    trace_var = float(w @ (sq - w @ sq) ** 2)
    return Moments(mean, var, trace_var)


def discrete_moments(J1: np.ndarray, J2: np.ndarray, law: ProbeLaw | None = None) -> Moments:
    """Exact moments over every probe vector of a discrete law (``|values|^p`` of them).

    ``law`` defaults to :data:`RADEMACHER`, read when called.
    """
    law = RADEMACHER if law is None else law
    p = J1.shape[1]
    V = np.array(list(itertools.product(law.values, repeat=p))).T
    w = np.prod(np.array(list(itertools.product(law.probs, repeat=p))), axis=1)
    return _moments(J1 @ V, J2 @ V, w)


def gaussian_moments(J1: np.ndarray, J2: np.ndarray) -> Moments:
    """Exact moments for v ~ N(0, I) by Gauss–Hermite quadrature on z = [J1; J2] v.

    With the thin SVD [J1; J2] = U S Wᵀ, z = U S g for g = Wᵀv ~ N(0, I_k), k = rank; the
    moments are polynomials of degree ≤ 4 in g, integrated exactly by 3 nodes per coordinate.
    """
    stacked = np.vstack([J1, J2])
    U, s, _ = np.linalg.svd(stacked, full_matrices=False)
    keep = s > s[0] * 1e-14 if s.size and s[0] > 0 else np.zeros(s.size, bool)
    B = U[:, keep] * s[keep]
    nodes, weights = np.polynomial.hermite_e.hermegauss(3)
    weights = weights / weights.sum()
    k = B.shape[1]
    w = np.prod(np.array(list(itertools.product(weights, repeat=k))), axis=1).reshape(-1)
    G = np.array(list(itertools.product(nodes, repeat=k))).T.reshape(k, w.size)
    Z = B @ G
    c = J1.shape[0]
    return _moments(Z[:c], Z[c:], w)
