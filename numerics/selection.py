"""Sub-network selection: Gradient-Laplace, Greedy-Laplace and the baselines.

Every method returns a host ``numpy.ndarray`` of int64: distinct parameter indices in
selection order (so prefixes of one call are the nested subsets of smaller k where the
method is nested: Gradient-Laplace, Subnet-Diagonal, Last-k, Random, largest magnitude).
Ties always go to the lowest index (or, inside Greedy-Laplace, the lowest candidate
position).

The methods are those of S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace
Approximations: New Results and Methods", arXiv:2605.09075 (2026), §3 and App. B, plus
laplace-torch's and Daxberger et al.'s rules (docs/mathematics.md, "Sub-network
selection"). Greedy-Laplace (Alg. 2) is computed as a diagonally pivoted partial Cholesky of
Ω_KK — the same selected sequence as the algorithm box, at O(mk²) instead of O(m²k) plus
copies (docs/mathematics.md, "Greedy-Laplace is diagonally pivoted partial Cholesky") — by
the kernels in :mod:`laplace_lab.numerics.pivoted_cholesky`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import array_api_compat
import numpy as np

from laplace_lab._checks import positive_int, subset_size
from laplace_lab._random import as_generator
from laplace_lab.numerics import pivoted_cholesky
from laplace_lab.numerics.backend import as_float, gram_blocks, serial_blas, to_numpy
from laplace_lab.numerics.ggn import GGN
from laplace_lab.numerics.network_ggn import NetworkGGN
from laplace_lab.numerics.predictive import marginal_variance

__all__ = [
    "gradient_laplace",
    "greedy_laplace",
    "greedy_laplace_reference",
    "largest_magnitude",
    "largest_marginal_variance",
    "largest_variances",
    "last_k",
    "neural_linear",
    "random_subset",
    "subnet_diagonal",
]


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
        s_i = (1/|R|) Σ_{x∈R} w(x) g_i(x)² over a reference set R, with w = 1
        (regression) or p(1 − p) (binary); for C classes the squared column norms of the
        weighted Jacobian; e.g. :meth:`GGN.scores`.
    k : int
        Subset size, 1 ≤ k ≤ p.

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), §3, Alg. 1.
    """
    if isinstance(scores, GGN | NetworkGGN):
        raise TypeError(
            f"scores must be the (p,) array of Gradient-Laplace scores, not a "
            f"{type(scores).__name__}: pass its scores, gradient_laplace(ggn.scores(), k)"
        )
    s = _host_vector(scores, "scores")
    return _top(s, subset_size(k, s.size, low=1))


def _precision(ggn: Any) -> GGN | NetworkGGN:
    if not isinstance(ggn, GGN | NetworkGGN):
        raise TypeError(f"ggn must be a GGN or a NetworkGGN; got {type(ggn).__name__}")
    return ggn


def subnet_diagonal(ggn: GGN | NetworkGGN, k: int) -> np.ndarray:
    """Subnet-Diagonal (App. B): the k smallest diagonal entries of Ω, ascending.

    Equal to the k largest diagonal-Laplace marginal variances 1/Ω_ii (Daxberger et al.), so
    it is also laplace-torch's ``LargestVarianceDiagLaplaceSubnetMask``: one rule, one name.

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), App. B (Subnet diagonal).
    .. [2] E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato,
       "Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §5.
    """
    d = to_numpy(_precision(ggn).diagonal()).astype(np.float64)
    return _top(-d, subset_size(k, d.size, low=1))


def largest_variances(variances: Any, k: int) -> np.ndarray:
    """Daxberger's Wasserstein rule: the k weights of largest marginal variance, largest first.

    The minimiser of eq. (23) of [1]_, Σ_{d∉S} σ_d², for any per-weight variances σ_d²: the
    exact marginals diag(Ω⁻¹) (:func:`largest_marginal_variance`), the diagonal Laplace
    approximation diag(Ω)⁻¹, or SWAG's diagonal (§5 of [1]_). Ties go to the lower index.

    Parameters
    ----------
    variances : (p,) array
        σ_d² ≥ 0, finite.
    k : int
        Subset size, 1 ≤ k ≤ p.

    References
    ----------
    .. [1] E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato,
       "Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §5 eq. (23).
    """
    var = np.asarray(to_numpy(as_float(variances, "variances")), dtype=np.float64)
    if var.ndim != 1 or var.size == 0:
        raise ValueError(f"variances must be a non-empty 1-D array; got shape {var.shape}")
    if np.any(var < 0):
        raise ValueError("variances must be non-negative")
    return _top(var, subset_size(k, var.size, low=1))


def largest_marginal_variance(ggn: GGN, k: int) -> np.ndarray:
    """Daxberger's Wasserstein rule with exact marginals: the k largest entries of diag(Ω⁻¹).

    Minimises eq. (23) of [1]_ with exact marginals (:func:`largest_variances`); diag(Ω⁻¹) by
    Woodbury without a p×p matrix (docs/mathematics.md, "Woodbury predictive").

    References
    ----------
    .. [1] E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato,
       "Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §5 eq. (23).
    """
    return largest_variances(marginal_variance(ggn), k)


def last_k(p: int, k: int) -> np.ndarray:
    """Last-k (App. B): the final k indices of the flat parameter vector, last one first.

    Ordered p−1, p−2, …, p−k so that prefixes are the Last-k subsets of smaller k. App. B
    (and App. C.3) of [1]_ define Last-k as the trailing k parameters; the sentence in §4
    that says {1, …, k} is not followed (docs/mathematics.md, "Corrections to the papers").

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), App. B.
    """
    p = positive_int(p, "p")
    return np.arange(p - 1, p - 1 - subset_size(k, p, low=1), -1, dtype=np.int64)


def neural_linear(layout: Sequence[int]) -> np.ndarray:
    """NeuralLinear (App. B): all parameters (weights and bias) of the last layer.

    Parameters
    ----------
    layout : sequence of int
        Parameter counts per layer, first layer first (weights + bias of each layer), e.g.
        ``[91*200, 201*200, 201*200, 201]`` for the 3×200 MLP on 90 inputs.

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), App. B.
    """
    sizes = np.asarray(layout)
    if sizes.ndim != 1 or sizes.size == 0 or not np.issubdtype(sizes.dtype, np.integer):
        raise ValueError(f"layout must be a non-empty sequence of integers; got {layout!r}")
    if np.any(sizes <= 0):
        raise ValueError("layout must contain positive parameter counts")
    p = int(sizes.sum())
    return np.arange(p - int(sizes[-1]), p, dtype=np.int64)


def random_subset(p: int, k: int, *, rng: np.random.Generator | int) -> np.ndarray:
    """Random: the first k entries of a uniformly random permutation of range(p)."""
    rng = as_generator(rng)
    p = positive_int(p, "p")
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
    (Alg. 2 of [1]_). Cost O(m²k) flops plus an O(m²) copy per step; kept literal on
    purpose. NumPy float64.

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), §3, Alg. 2.
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
    ggn: GGN | NetworkGGN, k: int, *, n_candidates: int | None = None, scores: Any = None
) -> np.ndarray:
    """Greedy-Laplace (Alg. 2 of [1]_) as a blocked, diagonally pivoted partial Cholesky.

    Returns exactly the ordered S of :func:`greedy_laplace_reference` on Ω = ``ggn``: the
    candidates K are the top-m ``scores`` (default :meth:`GGN.scores`, m = ``n_candidates``,
    default min(2k, p); the paper's experiments use min(2k + 1000, p − 1) capped at 30 000),
    then k pivots by the largest Schur-complement diagonal, ties to the lowest candidate
    position. Two exact kernels (:mod:`laplace_lab.numerics.pivoted_cholesky`): if Ω_KK fits 512
    MiB and the flop model of ``store_omega`` favours it, Ω_KK is formed once (tiled syrk, N'm²
    flops) and factored by a blocked pivoted partial Cholesky ((m³ − (m−k)³)/3 flops,
    BLAS-3 trailing updates); otherwise Ω_KK is never formed and Schur columns come from
    J_w: O(N'mk + N'²(k + f)) flops, mostly BLAS-3 (f ≈ 1.5k fetched working-set columns
    on random Jacobians), memory O(N'm + N'² + 64·m + 512·N'), on one BLAS thread on NumPy
    (skinny panels). Exactly reproducible: the same S for either kernel and every block
    size (up to roundoff at exact near-ties). On a :class:`NetworkGGN` the stored kernel takes
    Ω_KK from :meth:`NetworkGGN.subset_gram` (streamed; the N′ × m columns are never stored).
    In float32 the S is the exact greedy order of
    the float32-rounded Ω, which can leave the float64 order at near-ties.

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

    Notes
    -----
    Eliminating pivot s from the current matrix is one step of Cholesky with pivot s, and
    the Schur complement's diagonal is the old one minus the square of the new Cholesky
    column, so "largest diagonal of the Schur complement" is "largest remaining d" — the
    selected sequence is identical to the box's (docs/mathematics.md, "Greedy-Laplace is
    diagonally pivoted partial Cholesky"). The algorithm box, not the paper's prose about
    "greatest variability", is followed: the box picks the largest precision diagonal.

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), §3, Alg. 2; candidate count m: App. C.3.

    Examples
    --------
    Ω = JᵀJ + I below has the diagonal (2, 2, 6). Greedy-Laplace takes index 2 first; the
    Schur complement then leaves 2 − 2²/6 for index 0 and 2 − 1²/6 for index 1, so index 1
    comes second, although indices 0 and 1 tie on the diagonal of Ω:

    >>> import numpy as np
    >>> from laplace_lab.numerics import GGN, greedy_laplace
    >>> J = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 1.0]])
    >>> ggn = GGN.regression(J, noise_var=1.0, prior_precision=1.0)
    >>> np.round(ggn.dense(), 4)
    array([[2., 0., 2.],
           [0., 2., 1.],
           [2., 1., 6.]])
    >>> greedy_laplace(ggn, 2).tolist()
    [2, 1]
    """
    ggn = _precision(ggn)
    p = ggn.p
    k = subset_size(k, p, low=1)
    s = _host_vector(ggn.scores() if scores is None else scores, "scores")
    if s.size != p:
        raise ValueError(f"scores must have length p={p}; got {s.size}")
    m = _n_candidates(n_candidates, k, p)
    K = _top(s, m)
    if isinstance(ggn, NetworkGGN) and pivoted_cholesky.store_omega(ggn.n_rows, m, k, 8):
        # Ω_KK streamed from the network: the N′ × m columns are never stored
        A = ggn.subset_gram(K)
        d = np.diagonal(A) + ggn.prior_precision[K]
        return K[pivoted_cholesky.stored_pivots(A, d, k)]
    JK = ggn.weighted_columns(K)
    xp = array_api_compat.array_namespace(JK)
    dev = array_api_compat.device(JK)
    prior = xp.asarray(np.asarray(to_numpy(ggn.prior_precision))[K], dtype=JK.dtype, device=dev)
    d = xp.sum(JK * JK, axis=0) + prior
    if pivoted_cholesky.store_omega(int(JK.shape[0]), m, k, xp.finfo(JK.dtype).bits // 8):
        chosen = pivoted_cholesky.stored_pivots(gram_blocks(JK), d, k)
    else:
        with serial_blas(xp):  # skinny panels: threads gain little, oversubscription costs a lot
            chosen = pivoted_cholesky.factor_pivots(JK, d, k)
    return K[chosen]
