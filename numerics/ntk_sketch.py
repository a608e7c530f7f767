"""JVP sketches of the neural tangent kernel and their exact variances.

L. A. Ortega, S. Rodríguez-Santana, D. Hernández-Lobato, "Scalable Linearized Laplace
Approximation via Surrogate Neural Kernel", arXiv:2601.21835 (2026), §2.2: for a random
probe v with E[v] = 0 and E[v vᵀ] = I,
``z_v(x) = J(x) v`` (one Jacobian–vector product) gives the unbiased estimate
``E_v[J(x) v vᵀ J(x')ᵀ] = J(x) J(x')ᵀ`` (eq. 4). The paper's variances (eqs. 5–6),
``Var_Gauss = 2 tr(JᵀJ)²`` and ``Var_Rad = 2 tr(JᵀJ)² − 2‖diag(JᵀJ)‖²``, hold for one output
(C = 1); for C > 1 they hold as the variance of the scalar ‖Jv‖² with tr((JᵀJ)²), not
entrywise. For C > 1 the variance of entry (a, b) of the C × C' estimate, with rows
``u = J_a`` and ``w = J'_b``, follows from the fourth moments E[v_i v_j v_k v_l]
(docs/mathematics.md, "NTK sketch variance")::

    Gaussian:    Var = (u·w)² + ‖u‖² ‖w‖²
    Rademacher:  Var = (u·w)² + ‖u‖² ‖w‖² − 2 Σ_i u_i² w_i²

(Rademacher has E[v_i⁴] = 1 instead of 3). Averaging over s probes divides by s.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from array_api_compat import array_namespace

from laplace_lab._checks import positive_int
from laplace_lab._random import as_generator
from laplace_lab.numerics._arrays import Space, to_host
from laplace_lab.numerics.backend import as_float

__all__ = ["jvp_ntk_estimate", "ntk_estimate_variance", "paper_ntk_variance"]

Array = Any
Dist = Literal["rademacher", "gaussian"]

#: Probes drawn per block (bounds the p × block probe matrix in memory).
_PROBE_BLOCK = 256


def _jacobian(J: Array, name: str) -> Array:
    J = as_float(J, name)
    if J.ndim not in (1, 2) or 0 in tuple(J.shape):
        raise ValueError(f"{name} must be a non-empty (C, p) or (p,) array; got {tuple(J.shape)}")
    return array_namespace(J).reshape(J, (1, -1)) if J.ndim == 1 else J


def _pair(J1: Array, J2: Array | None) -> tuple[Array, Array]:
    J1 = _jacobian(J1, "J1")
    J2 = J1 if J2 is None else _jacobian(J2, "J2")
    if int(J1.shape[1]) != int(J2.shape[1]):
        raise ValueError(
            f"J1 and J2 must have the same number of parameters p; got {J1.shape[1]} and "
            f"{J2.shape[1]}"
        )
    return J1, J2


def _check_dist(dist: str) -> None:
    if dist not in ("rademacher", "gaussian"):
        raise ValueError(f"dist must be 'rademacher' or 'gaussian'; got {dist!r}")


def jvp_ntk_estimate(
    J1: Array,
    J2: Array | None,
    num_probes: int,
    *,
    rng: np.random.Generator | int,
    dist: Dist = "rademacher",
) -> Array:
    """The JVP estimate ``(1/s) Σ_k (J1 v_k)(J2 v_k)ᵀ`` of the NTK block ``J1 J2ᵀ``.

    Eq. (4) of [1]_ (and eq. (3)'s training target): unbiased for any probe distribution
    with zero mean and identity covariance.

    Parameters
    ----------
    J1 : array, shape (C1, p) or (p,)
        Jacobian J(x) (rows: outputs).
    J2 : array, shape (C2, p) or (p,), or None
        Jacobian J(x'); None means ``J2 = J1`` (the same probes hit both).
    num_probes : int
        s ≥ 1, the number of probes averaged.
    rng : numpy.random.Generator or int
        Source of the probes (drawn on the host, moved to the backend of J1).
    dist : {"rademacher", "gaussian"}
        Probe distribution: v_i ∈ {−1, +1} uniformly, or v ~ N(0, I).

    Returns
    -------
    array, shape (C1, C2)

    References
    ----------
    .. [1] L. A. Ortega, S. Rodríguez-Santana, D. Hernández-Lobato, "Scalable Linearized Laplace
       Approximation via Surrogate Neural Kernel", arXiv:2601.21835 (2026), §2.2, eqs. (3)–(4).
    """
    J1, J2 = _pair(J1, J2)
    _check_dist(dist)
    num_probes = positive_int(num_probes, "num_probes")
    rng = as_generator(rng)
    p = int(J1.shape[1])
    space = Space(p, None, J1)
    total = None
    for start in range(0, int(num_probes), _PROBE_BLOCK):
        s = min(_PROBE_BLOCK, int(num_probes) - start)
        if dist == "rademacher":
            host = rng.integers(0, 2, size=(p, s)).astype(np.float64) * 2.0 - 1.0
        else:
            host = rng.standard_normal((p, s))
        V = space.asarray(host)
        Z1 = J1 @ V
        part = Z1 @ (J2 @ V).T if J2 is not J1 else Z1 @ Z1.T
        total = part if total is None else total + part
    return total / float(num_probes)


def ntk_estimate_variance(
    J1: Array, J2: Array | None = None, *, dist: Dist = "rademacher", num_probes: int = 1
) -> Array:
    """Exact entrywise variance of :func:`jvp_ntk_estimate`, for any number C of outputs.

    ``Var[K̂_ab] = ((u·w)² + ‖u‖²‖w‖² − 2·[Rademacher] Σ_i u_i² w_i²) / s`` with
    ``u = J1[a]``, ``w = J2[b]``, from the fourth moments of the probes (module docstring).
    For C = 1 and J2 = J1 this reduces to eqs. (5) and (6) of [1]_; for C > 1 those
    formulas do not give the entries' variances.

    Returns
    -------
    array, shape (C1, C2)

    References
    ----------
    .. [1] L. A. Ortega, S. Rodríguez-Santana, D. Hernández-Lobato, "Scalable Linearized Laplace
       Approximation via Surrogate Neural Kernel", arXiv:2601.21835 (2026), §2.2, eqs. (4)–(6).
    """
    J1, J2 = _pair(J1, J2)
    _check_dist(dist)
    num_probes = positive_int(num_probes, "num_probes")
    xp = array_namespace(J1)
    K = J1 @ J2.T
    n1 = xp.sum(J1 * J1, axis=1)
    n2 = xp.sum(J2 * J2, axis=1)
    var = K * K + n1[:, None] * n2[None, :]
    if dist == "rademacher":
        var = var - 2.0 * ((J1 * J1) @ (J2 * J2).T)
    return var / float(num_probes)


def paper_ntk_variance(J: Array, *, dist: Dist = "rademacher") -> float:
    """The paper's variance formula, eqs. (5)–(6) of [1]_, verbatim.

    ``2 tr(JᵀJ)²`` (Gaussian), minus ``2‖diag(JᵀJ)‖²`` (Rademacher): one number per Jacobian
    J(x) ∈ ℝ^{C×p}, with tr(JᵀJ)² read as (tr JᵀJ)². Correct for C = 1; for C > 1 compare
    with :func:`ntk_estimate_variance` (entrywise).

    References
    ----------
    .. [1] L. A. Ortega, S. Rodríguez-Santana, D. Hernández-Lobato, "Scalable Linearized Laplace
       Approximation via Surrogate Neural Kernel", arXiv:2601.21835 (2026), §2.2, eqs. (5)–(6).
    """
    J = _jacobian(J, "J")
    _check_dist(dist)
    Jh = to_host(J)
    tr = float(np.sum(Jh * Jh))
    out = 2.0 * tr**2
    if dist == "rademacher":
        out -= 2.0 * float(np.sum(np.sum(Jh * Jh, axis=0) ** 2))
    return out
