"""Sub-network selection: Gradient-Laplace, Greedy-Laplace and the baselines (SPEC §4).

Every method returns a host ``numpy.ndarray`` of int64: distinct parameter indices in
selection order (so prefixes of one call are the nested subsets of smaller k where the
method is nested: Gradient-Laplace, Subnet-Diagonal, Last-k, Random, largest magnitude).
Ties always go to the lowest index (or, inside Greedy-Laplace, the lowest candidate
position).

Greedy-Laplace (subnetwork-laplace-optimality.txt Alg. 2) is computed as a diagonally
pivoted partial Cholesky of Ω_KK (SPEC §4) written in the GGN factor: Ω_KK = A_Kᵀ A_K with
A = [J_w; V^{1/2}], and the Schur complement after the pivots T is
J_Rᵀ M_T J_R + V_R with M_T = I − Σ_t y_t y_tᵀ (N' × N'), y_t = M_{t−1} j_{s_t} / √d_{s_t}.
Only the diagonal d must be current for all m candidates; it is kept exactly current on a
working set of the largest entries (where the next pivots must lie, because d only
decreases) and updated everywhere else once per block by one BLAS-3 product (see
``_pivoted_cholesky``), so the pivots are exactly the sequential algorithm's; Ω_KK is never
stored: memory O(N'm + N'² + 64·m). When Ω_KK fits 512 MiB (m ≲ 8000 in float64) and N'
is not ≪ m, it is formed once by a tiled syrk and factored by a blocked, diagonally pivoted
partial Cholesky in LAPACK dpstrf style instead (``_stored_pivots``): fewer, larger BLAS-3
calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import array_api_compat
import numpy as np

from numerics.backend import (
    as_float,
    gram_blocks,
    namespace,
    serial_blas,
    subtract_gram_lower,
    to_numpy,
)
from numerics.ggn import GGN
from numerics.predictive import marginal_variance
from theory._validation import subset_size

__all__ = [
    "gradient_laplace",
    "greedy_laplace",
    "greedy_laplace_reference",
    "largest_diag_variance",
    "largest_magnitude",
    "largest_marginal_variance",
    "last_k",
    "neural_linear",
    "random_subset",
    "subnet_diagonal",
]

#: Greedy-Laplace blocking: at most _BLOCK pivots per block; each block adds the _BATCH largest
#: diagonal entries to the working set, which keeps at most _CAP entries.
_BLOCK, _BATCH, _CAP = 64, 128, 512
#: Greedy-Laplace stores Ω_KK (m × m) when it takes at most _STORED_BYTES and the cost model of
#: :func:`_store_omega` favours it; the stored kernel pivots in blocks of _STORED_BLOCK columns.
_STORED_BYTES, _STORED_BLOCK = 512 * 2**20, 64


def _host_vector(x: Any, name: str) -> np.ndarray:
    """A finite 1-D float64 host copy of ``x`` (any backend)."""
    arr = to_numpy(as_float(x, name)) if not isinstance(x, list | tuple) else np.asarray(x)
    arr = np.asarray(arr, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array; got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite; it contains NaN or Inf")
    return arr


def _top(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest values, in decreasing order, ties to the lowest index."""
    return np.argsort(-values, kind="stable")[:k].astype(np.int64)


def gradient_laplace(scores: Any, k: int) -> np.ndarray:
    """Gradient-Laplace (Alg. 1): the k largest scores s_i, in decreasing order of s.

    Parameters
    ----------
    scores : (p,) array
        s_i = (1/|R|) Σ_{x∈R} w(x) g_i(x)² (SPEC §4); e.g. :meth:`GGN.scores`.
    k : int
        Subset size, 1 ≤ k ≤ p.
    """
    s = _host_vector(scores, "scores")
    return _top(s, subset_size(k, s.size, low=1))


def subnet_diagonal(ggn: GGN, k: int) -> np.ndarray:
    """Subnet-Diagonal (App. B): the k smallest diagonal entries of Ω, ascending.

    Equal to the k largest diagonal-Laplace marginal variances 1/Ω_ii (Daxberger et al.).
    """
    d = to_numpy(ggn.diagonal()).astype(np.float64)
    return _top(-d, subset_size(k, d.size, low=1))


def largest_diag_variance(ggn: GGN, k: int) -> np.ndarray:
    """laplace-torch's LargestVarianceDiagLaplaceSubnetMask: the k largest 1/Ω_ii.

    The same rule as :func:`subnet_diagonal` (SPEC §4: one implementation, two names).
    """
    return subnet_diagonal(ggn, k)


def largest_marginal_variance(ggn: GGN, k: int) -> np.ndarray:
    """Daxberger's Wasserstein rule with exact marginals: the k largest entries of diag(Ω⁻¹).

    subnetwork-inference.txt eq. (23); diag(Ω⁻¹) by Woodbury without a p×p matrix (SPEC §4).
    """
    var = to_numpy(marginal_variance(ggn)).astype(np.float64)
    return _top(var, subset_size(k, var.size, low=1))


def last_k(p: int, k: int) -> np.ndarray:
    """Last-k (App. B): the final k indices of the flat parameter vector, last one first.

    Ordered p−1, p−2, …, p−k so that prefixes are the Last-k subsets of smaller k.
    """
    p = subset_size(p, 1 << 62, "p", low=1)
    return np.arange(p - 1, p - 1 - subset_size(k, p, low=1), -1, dtype=np.int64)


def neural_linear(layout: Sequence[int]) -> np.ndarray:
    """NeuralLinear (App. B): all parameters (weights and bias) of the last layer.

    Parameters
    ----------
    layout : sequence of int
        Parameter counts per layer, first layer first (weights + bias of each layer), e.g.
        ``[91*200, 201*200, 201*200, 201]`` for the 3×200 MLP on 90 inputs.
    """
    sizes = np.asarray(layout)
    if sizes.ndim != 1 or sizes.size == 0 or not np.issubdtype(sizes.dtype, np.integer):
        raise ValueError(f"layout must be a non-empty sequence of integers; got {layout!r}")
    if np.any(sizes <= 0):
        raise ValueError("layout must contain positive parameter counts")
    p = int(sizes.sum())
    return np.arange(p - int(sizes[-1]), p, dtype=np.int64)


def random_subset(p: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """Random: the first k entries of a uniformly random permutation of range(p)."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator; got {type(rng).__name__}")
    p = subset_size(p, 1 << 62, "p", low=1)
    return rng.permutation(p)[: subset_size(k, p, low=1)].astype(np.int64)


def largest_magnitude(theta: Any, k: int) -> np.ndarray:
    """laplace-torch's LargestMagnitudeSubnetMask: the k largest |θ̂_i|, decreasing."""
    t = _host_vector(theta, "theta")
    return _top(np.abs(t), subset_size(k, t.size, low=1))


def _n_candidates(n_candidates: int | None, k: int, p: int) -> int:
    if n_candidates is None:
        return min(2 * k, p)
    return subset_size(n_candidates, p, "n_candidates", low=k)


def greedy_laplace_reference(
    omega: Any, scores: Any, k: int, *, n_candidates: int | None = None
) -> np.ndarray:
    """The literal Algorithm 2 (Greedy-Laplace) with row/column deletion: the test oracle.

    K = Gradient-Laplace top-m by ``scores`` (m = ``n_candidates``, default min(2k, p));
    Ω⁽¹⁾ = Ω_KK; for t = 1..k: s* = argmax diag(Ω⁽ᵗ⁾) (ties: lowest candidate position),
    Ω⁽ᵗ⁺¹⁾ = Ω⁽ᵗ⁾_{−s*,−s*} − Ω⁽ᵗ⁾_{−s*,s*} Ω⁽ᵗ⁾_{s*,−s*} / Ω⁽ᵗ⁾_{s*s*}
    (subnetwork-laplace-optimality.txt Alg. 2). Cost O(m²k) flops plus an O(m²) copy per
    step; kept literal on purpose. NumPy float64.
    """
    A = np.asarray(to_numpy(as_float(omega, "omega")), dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"omega must be a square matrix; got shape {A.shape}")
    s = _host_vector(scores, "scores")
    if s.size != A.shape[0]:
        raise ValueError(f"scores must have length p={A.shape[0]}; got {s.size}")
    k = subset_size(k, s.size, low=1)
    K = _top(s, _n_candidates(n_candidates, k, s.size))
    W = A[np.ix_(K, K)]
    remaining = list(K)
    S = []
    for _ in range(k):
        i = int(np.argmax(np.diag(W)))
        S.append(remaining.pop(i))
        col = W[:, i]
        keep = np.arange(W.shape[0]) != i
        W = W[np.ix_(keep, keep)] - np.outer(col[keep], col[keep]) / col[i]
    return np.asarray(S, dtype=np.int64)


def greedy_laplace(
    ggn: GGN, k: int, *, n_candidates: int | None = None, scores: Any = None
) -> np.ndarray:
    """Greedy-Laplace (Alg. 2) as a blocked, diagonally pivoted partial Cholesky (SPEC §4).

    Returns exactly the ordered S of :func:`greedy_laplace_reference` on Ω = ``ggn``: the
    candidates K are the top-m ``scores`` (default :meth:`GGN.scores`, m = ``n_candidates``,
    default min(2k, p); the paper's experiments use min(2k + 1000, p − 1) capped at 30 000),
    then k pivots by the largest Schur-complement diagonal, ties to the lowest candidate
    position. Two exact kernels: if Ω_KK fits 512 MiB and the flop model of ``_store_omega``
    favours it, Ω_KK is formed once (tiled syrk, N'm² flops) and factored by a blocked
    pivoted partial Cholesky ((m³ − (m−k)³)/3 flops, BLAS-3 trailing updates); otherwise
    Ω_KK is never formed and Schur columns come from J_w (module docstring): O(N'mk +
    N'²(k + f)) flops, mostly BLAS-3 (f ≈ 1.5k fetched working-set columns on random
    Jacobians), memory O(N'm + N'² + 64·m + 512·N'), on one BLAS thread on NumPy (skinny
    panels). Exactly reproducible: the same S for either kernel and every block size
    (up to roundoff at exact near-ties). In float32 the S is the exact greedy order of the
    float32-rounded Ω, which can leave the float64 order at near-ties.

    Parameters
    ----------
    ggn : GGN
        The precision Ω = J_wᵀJ_w + V.
    k : int
        Subset size, 1 ≤ k ≤ p.
    n_candidates : int, optional
        m, the Gradient-Laplace pre-selection size, k ≤ m ≤ p.
    scores : (p,) array, optional
        Scores ranking the candidates (e.g. over a test reference set).
    """
    if not isinstance(ggn, GGN):
        raise TypeError(f"ggn must be a GGN; got {type(ggn).__name__}")
    p = ggn.p
    k = subset_size(k, p, low=1)
    s = _host_vector(ggn.scores() if scores is None else scores, "scores")
    if s.size != p:
        raise ValueError(f"scores must have length p={p}; got {s.size}")
    m = _n_candidates(n_candidates, k, p)
    K = _top(s, m)
    xp = ggn.xp
    dev = array_api_compat.device(ggn.Jw)
    JK = xp.take(ggn.Jw, xp.asarray(K, device=dev), axis=1)
    d = xp.sum(JK * JK, axis=0) + xp.take(ggn.prior_precision, xp.asarray(K, device=dev))
    if _store_omega(ggn.n_rows, m, k, xp.finfo(JK.dtype).bits // 8):
        chosen = _stored_pivots(gram_blocks(JK), d, k)
    else:
        with serial_blas(xp):  # skinny panels: threads gain little, oversubscription costs a lot
            chosen = _pivoted_cholesky(JK, d, k)
    return K[chosen]


def _store_omega(n_rows: int, m: int, k: int, itemsize: int) -> bool:
    """Whether Greedy-Laplace forms Ω_KK: it fits ``_STORED_BYTES`` and costs fewer flops.

    Flops: forming Ω_KK by syrk N'm² plus the trailing updates Σ_t (m − t)² ≈ (m³ − (m−k)³)/3
    (:func:`_stored_pivots`), against 2N'mk for the l_t = J_Kᵀ y_t of :func:`_pivoted_cholesky`,
    whose skinny panels ran ≈ 4.8× fewer flops per second here (N' = 1500, m = 3000, k = 1500):
    the factor 3 keeps the J_w kernel wherever N' ≪ m (e.g. few data, many candidates).
    """
    if m * m * itemsize > _STORED_BYTES:
        return False
    stored = n_rows * m * m + (m**3 - (m - k) ** 3) / 3
    return stored <= 3.0 * (2.0 * n_rows * m * k)


def _stored_pivots(A: Any, d: Any, k: int) -> np.ndarray:
    """Pivot positions of the greedy partial Cholesky of Ω_KK stored in A (LAPACK dpstrf style).

    ``A`` holds Ω_KK off its diagonal (the lower triangle suffices; it is overwritten) and
    ``d`` its diagonal. Blocks of ``_STORED_BLOCK`` pivots: inside a block the pivot column of
    the Schur complement is A[:, s] − Σ_{i<j} l_i l_i[s] (only the block's own l_i, BLAS-2),
    and the whole diagonal is kept current, d ← d − l², so every pivot is the sequential
    argmax (ties: the lowest row, i.e. the lowest candidate position, as rows stay in
    candidate order). At the block end one BLAS-3 rank update A ← A − L_bᵀL_b brings the
    trailing matrix current; selected rows stay (with d = −∞) until an eighth of the rows
    is dead, then A is compacted. Cost ≈ (m³ − (m−k)³)/3 flops, memory one m × m matrix.
    """
    xp = namespace(A)
    dev = array_api_compat.device(A)
    neg_inf = -float("inf")
    pos = np.arange(A.shape[0], dtype=np.int64)  # candidate position of each row of A
    chosen: list[int] = []
    dead = 0
    while len(chosen) < k:
        n = A.shape[0]
        Lb = xp.zeros((min(_STORED_BLOCK, k - len(chosen)), n), dtype=A.dtype, device=dev)
        with serial_blas(xp):  # vector work: threads only add latency
            for j in range(Lb.shape[0]):
                c = int(xp.argmax(d))
                dc = float(d[c])
                inv = 1.0 / dc**0.5 if dc > 0.0 else 0.0  # dc ≤ 0 only after total roundoff
                col = xp.concat([A[c, :c], A[c:, c]])  # column c from the lower triangle
                if j:
                    col = col - Lb[:j, c] @ Lb[:j, :]
                lc = col * inv
                d = d - lc * lc
                d[c] = neg_inf
                Lb[j, :] = lc
                chosen.append(int(pos[c]))
        dead += Lb.shape[0]
        if len(chosen) == k:
            break
        A = subtract_gram_lower(A, Lb)
        if dead >= n // 8:
            live = np.flatnonzero(np.isfinite(to_numpy(d)))
            ix = xp.asarray(live, device=dev)
            A = xp.take(xp.take(A, ix, axis=0), ix, axis=1)
            d, pos, dead = xp.take(d, ix), pos[live], 0
    return np.asarray(chosen, dtype=np.int64)


def _pivoted_cholesky(JK: Any, d: Any, k: int) -> np.ndarray:
    """Pivot positions of the greedy partial Cholesky of JKᵀJK + diag(d − colsum(JK²)).

    Exactness: the Schur-complement diagonal only decreases (d ← d − l²). A block starts
    from the working set ws = the ``_BATCH`` largest d (ties: lowest position) and the
    threshold τ = the largest d outside ws. Inside the block only d_ws is kept current, from
    the B × B Schur block G = J_wsᵀ M_T J_ws; while max d_ws > τ (or = τ at a lower position
    than every outside entry at τ) the global argmax lies in ws, so the pivots are exactly
    the sequential ones. At the block end the whole diagonal gets the deferred update
    d ← d − colsum(L²), L = Y J_K (one BLAS-3 product with the block's y vectors), and the
    working set is carried over: W = M_T J_ws and G are updated by the block's rank-j term,
    and only entries new to the top-B are projected from J (BLAS-3).
    """
    xp = namespace(JK)
    dev = array_api_compat.device(JK)
    n_rows, m = JK.shape
    dtype = JK.dtype
    neg_inf = -float("inf")
    # M_T X costs 2N't per column from the rows y_t (Yall) and N'² from M_T itself, which then
    # needs N'² per pivot to update: with ~1.4 fetched columns per pivot, M wins past t ≈ 0.85N'
    Yall = xp.zeros((0, n_rows), dtype=dtype, device=dev)  # rows y_t while t < 0.85 N'
    M = None  # M_T = I − Σ y_t y_tᵀ afterwards

    def project(X: Any) -> Any:  # M_T X
        return M @ X if M is not None else X - Yall.T @ (Yall @ X)

    def dev_index(a: np.ndarray) -> Any:
        return xp.asarray(a.astype(np.int64), device=dev)

    members = np.zeros(0, dtype=np.int64)  # ws positions in J_K, ascending
    Jws = W = G = None
    chosen: list[int] = []
    while len(chosen) < k:
        dh = to_numpy(d)
        top = np.argsort(-dh, kind="stable")[: min(_BATCH, m - len(chosen))]
        ws = np.union1d(members[np.isfinite(dh[members])], top)  # keep the live old entries
        if ws.size > _CAP:  # drop the smallest d (ties: the highest position)
            ws = np.sort(ws[np.argsort(-dh[ws], kind="stable")[:_CAP]])
        outside = dh.copy()
        outside[ws] = neg_inf
        tau_pos = int(np.argmax(outside))  # the lowest position with the largest outside d
        tau = float(outside[tau_pos])
        # carry the working set over: kept entries are current, new ones are projected
        kept = np.isin(ws, members)
        new = ws[~kept]
        Jn = xp.take(JK, dev_index(new), axis=1)
        Wn = project(Jn)
        if kept.any():
            old = dev_index(np.searchsorted(members, ws[kept]))
            Jk, Wk = xp.take(Jws, old, axis=1), xp.take(W, old, axis=1)
            Gkk = xp.take(xp.take(G, old, axis=0), old, axis=1)
            Gkn = Jk.T @ Wn
            G = xp.concat([xp.concat([Gkk, Gkn], axis=1), xp.concat([Gkn.T, Jn.T @ Wn], axis=1)])
            perm = dev_index(np.argsort(np.concatenate([ws[kept], new]), kind="stable"))
            Jws = xp.take(xp.concat([Jk, Jn], axis=1), perm, axis=1)
            W = xp.take(xp.concat([Wk, Wn], axis=1), perm, axis=1)
            G = xp.take(xp.take(G, perm, axis=0), perm, axis=1)
        else:
            Jws, W, G = Jn, Wn, Jn.T @ Wn
        members = ws
        ix = dev_index(ws)
        dws = xp.take(d, ix)
        Lb = xp.zeros((_BLOCK, ws.size), dtype=dtype, device=dev)
        Yb = xp.zeros((_BLOCK, n_rows), dtype=dtype, device=dev)
        j = _block_pivots(xp, G, W, dws, ws, tau, tau_pos, Lb, Yb, k, chosen)
        Y = Yb[:j, :]
        L = Y @ JK  # rows l_t = J_Kᵀ y_t of the block (j × m)
        d = d - xp.sum(L * L, axis=0)
        for s in chosen[len(chosen) - j :]:
            d[s] = neg_inf
        Lws = xp.take(L, ix, axis=1)
        W = W - Y.T @ Lws
        G = G - Lws.T @ Lws
        if M is not None:
            M = M - Y.T @ Y
        else:
            Yall = xp.concat([Yall, Y], axis=0)
            if Yall.shape[0] >= 0.85 * n_rows:
                M = xp.eye(n_rows, dtype=dtype, device=dev) - Yall.T @ Yall
    return np.asarray(chosen, dtype=np.int64)


def _block_pivots(
    xp: Any,
    G: Any,
    W: Any,
    dws: Any,
    ws: np.ndarray,
    tau: float,
    tau_pos: int,
    Lb: Any,
    Yb: Any,
    k: int,
    chosen: list[int],
) -> int:
    """The pivots of one block (appended to ``chosen``); returns their number j.

    Fills Lb[:j] (the block's l vectors on ws) and Yb[:j] (its y vectors); see
    :func:`_pivoted_cholesky` for the stopping rule that keeps the pivots exact.
    """
    neg_inf = -float("inf")
    j = 0
    while j < Lb.shape[0] and len(chosen) < k:
        c = int(xp.argmax(dws))
        ds = float(dws[c])
        if not (ds > tau or (ds == tau and int(ws[c]) < tau_pos)):
            break
        inv = 1.0 / ds**0.5 if ds > 0.0 else 0.0  # ds ≤ 0 only after total roundoff
        col, u = G[:, c], W[:, c]
        if j:
            col = col - Lb[:j, c] @ Lb[:j, :]
            u = u - Lb[:j, c] @ Yb[:j, :]  # Lb[i, c] = y_iᵀ j_c
        lws = col * inv
        dws = dws - lws * lws
        dws[c] = neg_inf
        Lb[j, :] = lws
        Yb[j, :] = u * inv
        chosen.append(int(ws[c]))
        j += 1
    return j
