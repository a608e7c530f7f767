"""Greedy-Laplace kernels: diagonally pivoted partial Cholesky of Ω_KK.

Greedy-Laplace (Alg. 2 of Raha, Khare & Patra, arXiv:2605.09075) deletes, at each step, the
coordinate with the largest diagonal of the current Schur complement. That is exactly a
diagonally pivoted partial Cholesky of Ω_KK (docs/mathematics.md, "Greedy-Laplace is
diagonally pivoted partial Cholesky"), here written in the GGN factor: Ω_KK = A_Kᵀ A_K with
A = [J_w; V^{1/2}], and the Schur complement after the pivots T is
J_Rᵀ M_T J_R + V_R with M_T = I − Σ_t y_t y_tᵀ (N' × N'), y_t = M_{t−1} j_{s_t} / √d_{s_t}.
Only the diagonal d must be current for all m candidates; it is kept exactly current on a
working set of the largest entries (where the next pivots must lie, because d only
decreases) and updated everywhere else once per block by one BLAS-3 product (see
``factor_pivots``), so the pivots are exactly the sequential algorithm's; Ω_KK is never
stored: memory O(N'm + N'² + 64·m). When Ω_KK fits 512 MiB (m ≲ 8000 in float64) and N'
is not ≪ m, it is formed once by a tiled syrk and factored by a blocked, diagonally pivoted
partial Cholesky in LAPACK dpstrf style instead (``stored_pivots``): fewer, larger BLAS-3
calls.

Both kernels return pivot positions (into the candidate list K) in selection order; ties go
to the lowest position. :func:`laplace_lab.numerics.selection.greedy_laplace` chooses between them
with :func:`store_omega`.
"""

from __future__ import annotations

from typing import Any

import array_api_compat
import numpy as np

from laplace_lab.numerics.backend import namespace, serial_blas, subtract_gram_lower, to_numpy

__all__ = ["factor_pivots", "store_omega", "stored_pivots"]

#: Greedy-Laplace blocking: at most _BLOCK pivots per block; each block adds the _BATCH largest
#: diagonal entries to the working set, which keeps at most _CAP entries.
_BLOCK, _BATCH, _CAP = 64, 128, 512
#: Greedy-Laplace stores Ω_KK (m × m) when it takes at most _STORED_BYTES and the cost model of
#: :func:`store_omega` favours it; the stored kernel pivots in blocks of _STORED_BLOCK columns.
_STORED_BYTES, _STORED_BLOCK = 512 * 2**20, 64


def store_omega(n_rows: int, m: int, k: int, itemsize: int) -> bool:
    """Whether Greedy-Laplace forms Ω_KK: it fits ``_STORED_BYTES`` and costs fewer flops.

    Flops: forming Ω_KK by syrk N'm² plus the trailing updates Σ_t (m − t)² ≈ (m³ − (m−k)³)/3
    (:func:`stored_pivots`), against 2N'mk for the l_t = J_Kᵀ y_t of :func:`factor_pivots`,
    whose skinny panels ran ≈ 6× fewer flops per second here (N' = 1500, m = 3000, k = 1500):
    the factor 3 keeps the J_w kernel wherever N' ≪ m (e.g. few data, many candidates).
    """
    if m * m * itemsize > _STORED_BYTES:
        return False
    stored = n_rows * m * m + (m**3 - (m - k) ** 3) / 3
    return stored <= 3.0 * (2.0 * n_rows * m * k)


def stored_pivots(A: Any, d: Any, k: int) -> np.ndarray:
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
    dead, spare = 0, None
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
            if isinstance(A, np.ndarray) and A.flags.c_contiguous:
                A, spare = _compact_in_place(A, live, spare)
            else:
                A = xp.take(xp.take(A, ix, axis=0), ix, axis=1)
            d, pos, dead = xp.take(d, ix), pos[live], 0
    return np.asarray(chosen, dtype=np.int64)


def _compact_in_place(
    A: np.ndarray, live: np.ndarray, spare: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """A[live][:, live] written over A's own memory (NumPy), through the buffer ``spare``.

    Fresh m × m allocations cost page faults on every compaction; this reuses A's pages and
    one spare buffer (allocated once, at most m² entries). ``mode="clip"`` keeps
    ``numpy.take`` from buffering its output (the indices are valid).
    """
    n2, n = live.size, A.shape[0]
    if spare is None or spare.size < n2 * n:
        spare = np.empty(n2 * n, dtype=A.dtype)
    rows = spare[: n2 * n].reshape(n2, n)
    np.take(A, live, axis=0, out=rows, mode="clip")
    out = A.reshape(-1)[: n2 * n2].reshape(n2, n2)  # a view of A's memory (A is dead now)
    np.take(rows, live, axis=1, out=out, mode="clip")
    return out, spare


def factor_pivots(JK: Any, d: Any, k: int) -> np.ndarray:
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
    :func:`factor_pivots` for the stopping rule that keeps the pivots exact.
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
