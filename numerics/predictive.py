"""Linearized-Laplace predictive variances, full and sub-network, and their metrics.

All variances are epistemic, gᵀΩ⁻¹g (callers add σ0² for y*): eq. (3) of S. Raha, K. Khare,
R. K. Patra, "Optimality of Sub-network Laplace Approximations: New Results and Methods",
arXiv:2605.09075 (2026). Full Ω⁻¹ via Woodbury when N' < p (docs/mathematics.md, "Woodbury
predictive"):

    gᵀΩ⁻¹g = gᵀDg − ‖L⁻¹ J_w D g‖²,   L = chol(I + J_w D J_wᵀ),   D = V⁻¹,

and a dense Cholesky otherwise; never an explicit inverse, never a p×p matrix when N' < p.
A sub-network S uses Ω_SS = J_w[:, S]ᵀ J_w[:, S] + V_S the same way (Woodbury when N' < |S|).
Nested prefixes S_k = order[:k] share one Cholesky: PV(S_k) = Σ_{i≤k} z_i², z = L⁻¹ g_order
(docs/mathematics.md, "Nested prefixes").

Test gradients ``G_test`` are (M, p) for one output or (M, C, p) for C classes; the
multiclass result is the per-class diagonal of J Ω⁻¹ Jᵀ, shape (M, C).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import array_api_compat
import numpy as np

from laplace_lab._checks import nonnegative_float, positive_float, subset, subset_size
from laplace_lab.numerics.backend import (
    TILE,
    add_diagonal,
    as_float,
    cholesky,
    gram_blocks,
    namespace,
    solve_triangular,
    tiles,
    weighted_gram,
)
from laplace_lab.numerics.ggn import GGN

__all__ = [
    "coverage",
    "marginal_variance",
    "predictive_variance",
    "streamed_predictive_variance",
    "subnetwork_variance",
    "subnetwork_variance_path",
    "wasserstein_gap",
]

Array = Any


def _check_ggn(ggn: Any) -> GGN:
    if not isinstance(ggn, GGN):
        raise TypeError(f"ggn must be a GGN; got {type(ggn).__name__}")
    return ggn


def _test_rows(ggn: GGN, G_test: Any) -> tuple[Array, tuple[int, ...]]:
    """G_test as (R, p) rows in the GGN's namespace and dtype, plus the output shape."""
    G = as_float(G_test, "G_test")
    if G.ndim not in (2, 3) or G.shape[-1] != ggn.p or G.shape[0] == 0:
        raise ValueError(
            f"G_test must have shape (M, p) or (M, C, p) with p={ggn.p}; got {tuple(G.shape)}"
        )
    xp = ggn.xp
    if namespace(G) is not xp:
        raise TypeError("G_test must be an array of the same backend as the GGN's Jw")
    G = xp.astype(G, ggn.Jw.dtype, copy=False)
    out_shape = tuple(G.shape[:-1])
    return xp.reshape(G, (-1, ggn.p)), out_shape


def _epistemic(Jw: Array, V: Array, G: Array) -> Array:
    """Row-wise gᵀ(J_wᵀJ_w + diag V)⁻¹g for the rows g of G (R × p) → (R,), in G's dtype.

    Woodbury subtracts ‖L⁻¹J_wDg‖² from gᵀDg, which cancels when g lies near the row space
    of J_w (training-like points, weak priors): every product is therefore accumulated in
    float64 and the result cast back (in float32 no digit survives at weak priors on
    training rows; docs/numerical-hazards.md, "Float32 Woodbury cancellation"). Float32
    inputs are converted one column tile (or row block) at a time, never as a whole, so the
    float64 arrays are the n × n kernel and the n × R solves only.
    """
    xp = namespace(Jw)
    wide = xp.float64
    n, p = Jw.shape
    V = xp.astype(V, wide, copy=False)
    if n < p:  # Woodbury on the n × n kernel
        D = 1.0 / V
        L = cholesky(add_diagonal(weighted_gram(Jw, D), 1.0), overwrite=True)
        Ut, q = None, None  # (J_w D Gᵀ)ᵀ, (R, n): its transpose is column-major for LAPACK
        for a, b in tiles(p):
            Gt = xp.astype(G[:, a:b], wide, copy=False)
            GD = Gt * D[a:b]
            # vecdot: row-wise dot products without an (R × p) temporary (docs/performance.md)
            part, qt = GD @ xp.astype(Jw[:, a:b], wide, copy=False).T, xp.vecdot(Gt, GD, axis=-1)
            Ut, q = (part, qt) if Ut is None else (Ut + part, q + qt)
        Z = solve_triangular(L, Ut.T, overwrite_b=True)
        out = q - xp.vecdot(Z, Z, axis=-2)
    else:
        L = cholesky(gram_blocks(Jw, diag=V, dtype=wide), overwrite=True)
        Z = solve_triangular(L, xp.astype(G.T, wide), overwrite_b=True)
        out = xp.vecdot(Z, Z, axis=-2)
    return xp.astype(out, G.dtype, copy=False)


def predictive_variance(ggn: GGN, G_test: Any) -> Array:
    """Full linearized-Laplace epistemic variance g(x*)ᵀ Ω⁻¹ g(x*) (eq. 3 of [1]_).

    Parameters
    ----------
    ggn : GGN
        Ω = J_wᵀJ_w + V.
    G_test : (M, p) or (M, C, p) array
        Test gradients g(x*) (per class for C outputs).

    Returns
    -------
    (M,) or (M, C) array
        Woodbury when N' < p (memory O(N'p + N'² + Mp)), dense Cholesky otherwise.

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), §2.1 eq. (3).

    Examples
    --------
    Three observations of two parameters (σ0² = 1, V = I) give Ω = diag(2, 3), so
    g = (1, 1) has the variance 1/2 + 1/3:

    >>> import numpy as np
    >>> from laplace_lab.numerics import GGN, predictive_variance
    >>> J = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    >>> ggn = GGN.regression(J, noise_var=1.0, prior_precision=1.0)
    >>> np.round(ggn.dense(), 4)
    array([[2., 0.],
           [0., 3.]])
    >>> np.round(predictive_variance(ggn, np.array([[1.0, 1.0]])), 6)
    array([0.833333])
    """
    ggn = _check_ggn(ggn)
    G, shape = _test_rows(ggn, G_test)
    return ggn.xp.reshape(_epistemic(ggn.Jw, ggn.prior_precision, G), shape)


def marginal_variance(ggn: GGN) -> Array:
    """diag(Ω⁻¹) (p,) by Woodbury, D − colsum((L⁻¹ J_w D)²), in column tiles.

    The exact marginal variances of Daxberger's Wasserstein rule (eq. 23 of [1]_); no p×p
    matrix when N' < p (docs/mathematics.md, "Woodbury predictive").

    References
    ----------
    .. [1] E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato,
       "Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §5 eq. (23).
    """
    ggn = _check_ggn(ggn)
    xp, Jw, V = ggn.xp, ggn.Jw, ggn.prior_precision
    dev = array_api_compat.device(Jw)
    n, p = Jw.shape
    if n >= p:
        L = cholesky(ggn.dense())
        Linv = solve_triangular(L, xp.eye(p, dtype=Jw.dtype, device=dev))
        return xp.sum(Linv * Linv, axis=0)
    D = 1.0 / V
    return D - D * D * woodbury_column_squares(ggn)


def woodbury_column_squares(ggn: GGN) -> Array:
    """‖L⁻¹ J_w e_i‖² for every parameter i (p,), L Lᵀ = I + J_w D J_wᵀ, D = V⁻¹, in column
    tiles: diag(Ω⁻¹) = D − D² · this (Woodbury), and 1 − v_i[Ω⁻¹]_ii = d_i · this — squares
    only, so nothing cancels when J_wᵀJ_w ≪ V."""
    xp, Jw = ggn.xp, ggn.Jw
    n = Jw.shape[0]
    dev = array_api_compat.device(Jw)
    L = cholesky(
        weighted_gram(Jw, 1.0 / ggn.prior_precision) + xp.eye(n, dtype=Jw.dtype, device=dev)
    )
    parts = []
    for a, b in ggn._col_tiles():
        Z = solve_triangular(L, Jw[:, a:b])
        parts.append(xp.sum(Z * Z, axis=0))
    return xp.concat(parts)


def subnetwork_variance(ggn: GGN, G_test: Any, S: Any) -> Array:
    """Sub-network epistemic variance g_S(x*)ᵀ Ω_SS⁻¹ g_S(x*) (PV(S), eq. 5 of [1]_).

    The surrogate [Ω_SS]⁰ has pseudo-inverse Ω_SS⁻¹ on S × S and 0 elsewhere. Cholesky of
    Ω_SS when |S| ≤ N', Woodbury on J_w[:, S] otherwise.

    Parameters
    ----------
    ggn : GGN
    G_test : (M, p) or (M, C, p) array
    S : sequence of int
        Distinct indices in [0, p).

    Returns
    -------
    (M,) or (M, C) array

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), §3 (pseudo-inverse of [Ω_SS]⁰) and §4 eq.
       (5).
    """
    ggn = _check_ggn(ggn)
    G, shape = _test_rows(ggn, G_test)
    xp = ggn.xp
    S = subset(S, ggn.p, "S", nonempty=True)
    if np.array_equal(S, np.arange(ggn.p)):  # every column in order: no copy of J_w
        out = _epistemic(ggn.Jw, ggn.prior_precision, G)
        return xp.reshape(out, shape)
    ix = xp.asarray(S, device=array_api_compat.device(ggn.Jw))
    JS = xp.take(ggn.Jw, ix, axis=1)
    out = _epistemic(JS, xp.take(ggn.prior_precision, ix), xp.take(G, ix, axis=1))
    return xp.reshape(out, shape)


def subnetwork_variance_path(ggn: GGN, G_test: Any, order: Any, ks: Any) -> Array:
    """PV(order[:k]) for every k in ``ks``: nested prefixes share their work.

    Prefixes with k ≤ N′ come from one Cholesky factor: with L = chol(Ω_oo),
    o = order[:k_max], and z = L⁻¹ g_o(x*), PV(o[:k]) = Σ_{i≤k} z_i², because the leading
    k × k block of L is the Cholesky factor of Ω_{o[:k],o[:k]} (docs/mathematics.md,
    "Nested prefixes"). Prefixes with k > N′ use Woodbury on the N′ × N′ kernel
    I + J_S D J_Sᵀ, whose Gram and cross term J_S D G_Sᵀ are accumulated along the order in
    column tiles of at most ``TILE`` (each column is touched once for every larger k): cost
    O(N′² k_max + N′ k_max M) plus one N′ × N′ Cholesky per k; nothing of size k × k.

    Parameters
    ----------
    ggn : GGN
    G_test : (M, p) or (M, C, p) array
    order : sequence of int
        Distinct indices in [0, p), in selection order.
    ks : sequence of int
        Prefix lengths in [1, len(order)], any order.

    Returns
    -------
    (len(ks), M) or (len(ks), M, C) array
        Row i is the sub-network variance for the prefix of length ks[i].

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), §4 eq. (5).
    """
    ggn = _check_ggn(ggn)
    G, shape = _test_rows(ggn, G_test)
    xp = ggn.xp
    dev = array_api_compat.device(ggn.Jw)
    o = subset(order, ggn.p, "order", nonempty=True)
    k_arr = np.asarray(ks)
    if k_arr.ndim != 1 or k_arr.size == 0 or not np.issubdtype(k_arr.dtype, np.integer):
        raise ValueError(f"ks must be a non-empty 1-D sequence of integer sizes; got {ks!r}")
    k_list = [subset_size(int(k), o.size, "ks", low=1, bound="len(order)") for k in k_arr]
    n = ggn.n_rows
    rows: dict[int, Array] = {}
    small = sorted({k for k in k_list if k <= n})
    if small:
        os_ = xp.asarray(o[: small[-1]], device=dev)
        L = cholesky(ggn.submatrix(os_))
        Z = solve_triangular(L, xp.take(G, os_, axis=1).T)
        cum = xp.cumulative_sum(Z * Z, axis=0)
        for k in small:
            rows[k] = cum[k - 1, ...]
    big = sorted({k for k in k_list if k > n})
    if big:
        rows.update(zip(big, _woodbury_prefixes(ggn, G, o, big), strict=True))
    out = xp.stack([rows[k] for k in k_list])
    return xp.reshape(out, (len(k_list), *shape))


class _Woodbury:
    """Accumulates I + Σ_b J_b D_b J_bᵀ, Σ_b J_b D_b G_bᵀ and Σ_b (G_b ∘ G_b) D_b over column
    blocks b of J_w (D = V⁻¹), then gᵀΩ⁻¹g = gᵀDg − ‖L⁻¹ J_w D g‖², L = chol(I + J_w D J_wᵀ).

    float32 blocks are accumulated in float64: Woodbury cancels (see ``_epistemic``).
    """

    def __init__(self, xp: Any, n: int, m: int, dtype: Any, device: Any) -> None:
        self.xp, self.out_dtype = xp, dtype
        self.dtype = xp.float64 if dtype == xp.float32 else dtype
        self.K = xp.eye(n, dtype=self.dtype, device=device)
        self.R = xp.zeros((n, m), dtype=self.dtype, device=device)
        self.gdg = xp.zeros((m,), dtype=self.dtype, device=device)

    def add(self, J: Array, V: Array, G: Array) -> None:
        xp = self.xp
        J, V, G = (xp.astype(a, self.dtype) for a in (J, V, G))
        D = 1.0 / V
        JD = J * D
        self.K = self.K + JD @ J.T
        self.R = self.R + JD @ G.T
        self.gdg = self.gdg + (G * G) @ D

    def variance(self) -> Array:
        Z = solve_triangular(cholesky(self.K), self.R)
        return self.xp.astype(self.gdg - self.xp.sum(Z * Z, axis=0), self.out_dtype)


def _woodbury_prefixes(ggn: GGN, G: Array, order: np.ndarray, ks: list[int]) -> list[Array]:
    """PV(order[:k]) for increasing ks > N′ by Woodbury, accumulated along the order."""
    xp = ggn.xp
    dev = array_api_compat.device(ggn.Jw)
    acc = _Woodbury(xp, ggn.n_rows, int(G.shape[0]), ggn.Jw.dtype, dev)
    out, done = [], 0
    for k in ks:
        for a in range(done, k, TILE):
            idx = xp.asarray(order[a : min(a + TILE, k)], device=dev)
            acc.add(
                xp.take(ggn.Jw, idx, axis=1),
                xp.take(ggn.prior_precision, idx),
                xp.take(G, idx, axis=1),
            )
        done = k
        out.append(acc.variance())
    return out


def streamed_predictive_variance(blocks: Iterable[tuple[Any, Any, Any]]) -> Array:
    """g(x*)ᵀ Ω⁻¹ g(x*) from column blocks of J_w, V and G that never coexist in memory.

    For networks whose weighted Jacobian J_w (N′ × p) does not fit in memory: each block is
    (J_w[:, B], V[B], G[:, B]) for a set B of parameters (blocks partition the p parameters;
    e.g. one layer at a time from ``per_sample_jacobian(model, X, subset=B)``). Woodbury on
    the N′ × N′ kernel accumulated block by block: memory O(N′² + N′M + one block), time
    O(N′² p + N′ p M) plus one N′ × N′ Cholesky. Equal to :func:`predictive_variance` on the
    assembled J_w.

    Parameters
    ----------
    blocks : iterable of (array (N′, b), array (b,), array (M, b))
        Column blocks on one backend; the blocks must cover every parameter exactly once.

    Returns
    -------
    (M,) array

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), §2.1 eq. (3).
    """
    acc = None
    for i, (J, V, G) in enumerate(blocks):
        J, V, G = as_float(J, "J_w block"), as_float(V, "prior block"), as_float(G, "G block")
        if J.ndim != 2 or V.ndim != 1 or G.ndim != 2:
            raise ValueError(
                f"block {i} must be (J_w (N', b), V (b,), G (M, b)); got shapes "
                f"{tuple(J.shape)}, {tuple(V.shape)}, {tuple(G.shape)}"
            )
        b = int(J.shape[1])
        if int(V.shape[0]) != b or int(G.shape[1]) != b:
            raise ValueError(f"block {i} has {b} columns in J_w but {V.shape} V, {G.shape} G")
        if acc is None:
            xp = namespace(J, V, G)
            acc = _Woodbury(
                xp, int(J.shape[0]), int(G.shape[0]), J.dtype, array_api_compat.device(J)
            )
            rows, tests = int(J.shape[0]), int(G.shape[0])
        elif int(J.shape[0]) != rows or int(G.shape[0]) != tests:
            raise ValueError(
                f"block {i} has {J.shape[0]} rows and {G.shape[0]} test points; the first "
                f"had {rows} and {tests}"
            )
        acc.add(J, V, G)
    if acc is None:
        raise ValueError("blocks must contain at least one block")
    return acc.variance()


def _std(var: Array, name: str) -> Array:
    """√var after checking var ≥ 0 up to roundoff (tiny negatives from Woodbury are clipped)."""
    xp = namespace(var)
    scale = max(1.0, float(xp.max(xp.abs(var))))
    tol = float(xp.finfo(var.dtype).eps) ** 0.5 * scale
    if float(xp.min(var)) < -tol:
        raise ValueError(f"{name} must be non-negative variances; min is {float(xp.min(var)):.3g}")
    return xp.sqrt(xp.clip(var, 0.0, None))


def wasserstein_gap(var_full: Any, var_sub: Any, *, noise_var: float = 0.0) -> Array:
    """Per-point W2(x*) = |σ_full(x*) − σ_S(x*)|, σ² = noise_var + variance.

    Use ``noise_var = σ0²`` for the regression target y* and 0 for logits. For (M, C)
    multiclass variances the result is the mean over classes of |σ_full,c − σ_S,c|. The
    paper's metric is the mean of the returned (M,) array over test points.

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), §5.1 and App. C.1 (regression, binary), App.
       C.5 (multiclass).
    """
    vf = as_float(var_full, "var_full")
    vs = as_float(var_sub, "var_sub")
    if tuple(vf.shape) != tuple(vs.shape) or vf.ndim not in (1, 2):
        raise ValueError(
            f"var_full and var_sub must have the same shape (M,) or (M, C); got "
            f"{tuple(vf.shape)} and {tuple(vs.shape)}"
        )
    noise_var = nonnegative_float(noise_var, "noise_var")
    xp = namespace(vf, vs)
    gap = xp.abs(_std(vf + noise_var, "var_full") - _std(vs + noise_var, "var_sub"))
    return xp.mean(gap, axis=1) if gap.ndim == 2 else gap


def coverage(f_ref: Any, f_map: Any, variance: Any, *, z: float = 1.96) -> float:
    """Empirical credible-interval coverage: mean of 1{|f_ref − f_MAP| ≤ z σ}.

    App. C.1 of [1]_ (z = 1.96 for 95%, epistemic σ = √variance).

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), App. C.1, "Oracle for the coverage panel".
    """
    a = as_float(f_ref, "f_ref")
    b = as_float(f_map, "f_map")
    v = as_float(variance, "variance")
    if not (tuple(a.shape) == tuple(b.shape) == tuple(v.shape)) or a.ndim == 0:
        raise ValueError(
            "f_ref, f_map and variance must have the same non-scalar shape; got "
            f"{tuple(a.shape)}, {tuple(b.shape)}, {tuple(v.shape)}"
        )
    z = positive_float(z, "z")
    xp = namespace(a, b, v)
    inside = xp.abs(a - b) <= z * _std(v, "variance")
    return float(xp.mean(xp.astype(inside, xp.float64)))
