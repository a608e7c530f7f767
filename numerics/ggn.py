"""The GGN factor: weighted Jacobian J_w and diagonal prior precision V (Ω = J_wᵀ J_w + V).

Regression, binary and multiclass Gauss–Newton precisions are all "weighted Jacobian +
diagonal prior" — one core (:class:`GGN`), three front doors (docs/mathematics.md,
"Gauss–Newton precision"); equation numbers are those of S. Raha, K. Khare, R. K. Patra,
"Optimality of Sub-network Laplace Approximations: New Results and Methods",
arXiv:2605.09075 (2026):

- regression (§2.1 eq. 2): Ω = JᵀJ/σ0² + V, so J_w = J/σ0;
- binary (eq. 4): Ω = Jᵀ diag(p_n(1−p_n)) J + V, so J_w = diag(√(p_n(1−p_n))) J;
- C classes (App. C.5, "proper softmax Hessian"): Ω = Σ_n J_nᵀ H_n J_n + V with
  H_n = diag(π_n) − π_n π_nᵀ + εI = W_n W_nᵀ (eigh), J_w stacks W_nᵀ J_n (N·C rows).

No method forms the p×p matrix except :meth:`GGN.dense` (small p only). Products of the
type BᵀB are tiled (:func:`laplace_lab.numerics.backend.gram_blocks`), because OpenBLAS's
syrk can crash on wide ones (docs/numerical-hazards.md, "OpenBLAS syrk segfault").
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import Any

import array_api_compat
import numpy as np

from laplace_lab._checks import nonnegative_float, positive_float, positive_int, subset
from laplace_lab.numerics.backend import (
    TILE,
    as_float,
    eigh,
    gram_blocks,
    namespace,
    require_memory,
    tiles,
    to_numpy,
    weighted_gram,
)

__all__ = ["DENSE_MAX_P", "GGN", "logistic_weight_root", "prior_vector"]

#: Largest p for which :meth:`GGN.dense` forms Ω (p×p float64 of 16384² is 2 GiB).
DENSE_MAX_P = 16384

Array = Any


def _invertible(v: Array, xp: Any) -> Array:
    """``v`` unchanged if v and 1/v are finite in its dtype (D = V⁻¹ is used by Woodbury)."""
    with np.errstate(over="ignore", divide="ignore"):  # an overflow is the answer, not noise
        finite_inverse = bool(xp.all(xp.isfinite(1 / v)))
    if not (bool(xp.all(xp.isfinite(v))) and finite_inverse):
        raise ValueError(
            "prior_precision must be finite with a finite reciprocal in the array's dtype "
            "(D = V⁻¹ enters the Woodbury identity)"
        )
    return v


def prior_vector(prior_precision: Any, p: int, like: Array) -> Array:
    """The prior precision V as a positive length-p vector in the namespace of ``like``.

    The vector has the dtype and device of ``like`` (a scalar means αI); anything else is a
    ValueError naming ``prior_precision``.
    """
    xp = namespace(like)
    dev = array_api_compat.device(like)
    if isinstance(prior_precision, int | float | np.floating | np.integer) and not isinstance(
        prior_precision, bool
    ):
        val = positive_float(prior_precision, "prior_precision")
        return _invertible(xp.full((p,), val, dtype=like.dtype, device=dev), xp)
    try:
        v = as_float(prior_precision, "prior_precision")
    except TypeError:
        v = as_float(np.asarray(prior_precision), "prior_precision")
    if v.ndim == 0:
        return prior_vector(float(v), p, like)
    if tuple(v.shape) != (p,):
        raise ValueError(
            f"prior_precision must be a scalar or a vector of length p={p}; got shape "
            f"{tuple(v.shape)}"
        )
    vxp = namespace(v)
    if not bool(vxp.all(v > 0)):
        raise ValueError("prior_precision must be positive in every entry")
    if vxp is not xp:
        v = xp.asarray(to_numpy(v), device=dev)
    return _invertible(xp.astype(v, like.dtype), xp)


def _jacobian(J: Any, ndim: int, name: str = "J") -> Array:
    J = as_float(J, name)
    if J.ndim != ndim or any(s == 0 for s in J.shape):
        want = "(N, p)" if ndim == 2 else "(N, C, p)"
        raise ValueError(f"{name} must be a non-empty array of shape {want}; got {tuple(J.shape)}")
    return J


def logistic_weight_root(f: Array) -> Array:
    """√(σ(f)σ(−f)) = h/(1 + h²) with h = exp(−|f|/2), elementwise in f's namespace: the
    square root of the logistic Hessian p(1 − p), which is 0 in floating point once p rounds
    to 1 (logit ≳ 17 in float32, ≳ 37 in float64; docs/numerical-hazards.md)."""
    xp = namespace(f)
    h = xp.exp(-0.5 * xp.abs(f))
    return h / (1.0 + h * h)


@dataclass(frozen=True)
class GGN:
    """Generalised Gauss–Newton precision Ω = J_wᵀ J_w + diag(prior_precision).

    Use the constructors :meth:`regression`, :meth:`binary`, :meth:`multiclass`; the plain
    constructor validates its arguments too.

    Parameters
    ----------
    Jw : (N', p) array
        The weighted Jacobian (any array-API backend; float32 or float64).
    prior_precision : (p,) array
        The diagonal V of the prior precision (V = diag(1/v_i) for prior variances v_i: a
        precision, not a variance), same backend.
    noise_var : float
        σ0² for regression (J_w = J/σ0); 1 for classification. Used by :meth:`scores`.
    n_data : int
        N, the number of training points (N' = N for one output, N·C for C classes).
    likelihood : str
        "regression", "binary", "multiclass" or "custom".
    """

    Jw: Array
    prior_precision: Array
    _: KW_ONLY
    noise_var: float = 1.0
    n_data: int | None = None
    likelihood: str = "custom"

    def __post_init__(self) -> None:
        Jw = _jacobian(self.Jw, 2, "Jw")
        object.__setattr__(self, "Jw", Jw)
        object.__setattr__(
            self, "prior_precision", prior_vector(self.prior_precision, Jw.shape[1], Jw)
        )
        object.__setattr__(self, "noise_var", positive_float(self.noise_var, "noise_var"))
        n = Jw.shape[0] if self.n_data is None else positive_int(self.n_data, "n_data")
        object.__setattr__(self, "n_data", int(n))

    # ----------------------------------------------------------------------------- builders
    @classmethod
    def regression(
        cls, J: Array, *, noise_var: float, prior_precision: Any, overwrite_J: bool = False
    ) -> GGN:
        """Ω = JᵀJ/σ0² + V (eq. 2 of [1]_): J_w = J/σ0.

        Parameters
        ----------
        J : (N, p) array
            Rows g(x_n)ᵀ, the output gradients at the MAP.
        noise_var : float
            σ0² > 0.
        prior_precision : float or (p,) array
            V (a scalar means αI), every entry > 0.
        overwrite_J : bool, optional
            Scale ``J`` in place to J/σ0 (it is then the GGN's J_w) instead of allocating a
            scaled copy: one Jacobian in memory, not two. With σ0² = 1, J itself is J_w and
            nothing is copied either way. A copy that cannot fit in the available memory is
            refused with a MemoryError naming its size.

        References
        ----------
        .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations:
           New Results and Methods", arXiv:2605.09075 (2026), §2.1 eq. (2).
        """
        J = _jacobian(J, 2)
        s2 = positive_float(noise_var, "noise_var")
        if not isinstance(overwrite_J, bool):
            raise TypeError(f"overwrite_J must be a bool; got overwrite_J={overwrite_J!r}")
        if s2 == 1.0:
            Jw = J
        elif overwrite_J:
            if isinstance(J, np.ndarray) and not J.flags.writeable:
                raise ValueError("overwrite_J=True needs a writeable J; J is read-only")
            J *= 1.0 / s2**0.5
            Jw = J
        else:
            if isinstance(J, np.ndarray):
                require_memory(
                    J.nbytes,
                    f"J/σ0 (a copy of J, shape {tuple(J.shape)}, {J.dtype})",
                    "pass overwrite_J=True to scale J in place",
                )
            Jw = J / s2**0.5
        return cls(Jw, prior_precision, noise_var=s2, n_data=J.shape[0], likelihood="regression")

    @classmethod
    def multi_output_regression(cls, J: Array, *, noise_var: Any, prior_precision: Any) -> GGN:
        """Ω = Σ_n J_nᵀ diag(1/σ²) J_n + V for C outputs with independent Gaussian noise
        p(y|f) = Π_c N(y_c | f_c, σ_c²): J_w stacks the rows J_nc/σ_c (row n·C + c).

        Parameters
        ----------
        J : (N, C, p) array
            Per-point Jacobians of the C outputs.
        noise_var : float or (C,) array
            σ_c², one per output (a float: the same for every output), every entry > 0.
        prior_precision : float or (p,) array

        Returns
        -------
        GGN
            ``likelihood="custom"``, ``noise_var`` 1 (:meth:`scores` are colsum(J_w²)/N).

        References
        ----------
        .. [1] C. M. Bishop, "Pattern Recognition and Machine Learning", Springer 2006, §5.7.1
           (the Laplace posterior of a regression network, precision αI + βH), §5.4.2 (the
           outer-product approximation of H) and §3.1.5 (multiple outputs).
        """
        J = _jacobian(J, 3)
        xp = namespace(J)
        N, C, p = J.shape
        s2 = np.asarray(noise_var, dtype=np.float64)
        if s2.shape not in ((), (C,)) or not np.all(np.isfinite(s2)) or np.any(s2 <= 0.0):
            raise ValueError(
                f"noise_var must be a positive float or {C} positive floats (one per output); "
                f"got noise_var={noise_var!r}"
            )
        root = np.broadcast_to(1.0 / np.sqrt(s2), (C,)).copy()
        scale = xp.asarray(root, dtype=J.dtype, device=array_api_compat.device(J))
        Jw = J * scale[None, :, None]
        return cls(xp.reshape(Jw, (N * C, p)), prior_precision, n_data=N, likelihood="custom")

    @classmethod
    def binary(cls, J: Array, logits: Array, *, prior_precision: Any) -> GGN:
        """Ω = Jᵀ diag(p_n(1−p_n)) J + V, p_n = σ(f(x_n)) (eq. 4 and App. C.3 of [1]_).

        Parameters
        ----------
        J : (N, p) array
            Gradients of the logit.
        logits : (N,) array
            f_θ̂(x_n), the MAP logits.
        prior_precision : float or (p,) array

        References
        ----------
        .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations:
           New Results and Methods", arXiv:2605.09075 (2026), §2.1 eq. (4) and App. C.3.
        """
        J = _jacobian(J, 2)
        f = _logits(logits, (J.shape[0],), J)
        return cls(
            J * logistic_weight_root(f)[:, None],
            prior_precision,
            n_data=J.shape[0],
            likelihood="binary",
        )

    @classmethod
    def multiclass(cls, J: Array, logits: Array, *, prior_precision: Any, eps: float = 0.0) -> GGN:
        """Ω = Σ_n J_nᵀ H_n J_n + V, H_n = diag(π_n) − π_nπ_nᵀ + εI (App. C.5 of [1]_).

        Exact by default (ε = 0): H_n is singular (its null space is the all-ones direction,
        softmax being shift-invariant), which Ω's prior term V > 0 makes up for.

        H_n = W_n W_nᵀ from its eigendecomposition; J_w stacks the C rows W_nᵀ J_n of every
        point (row n·C + c).

        Parameters
        ----------
        J : (N, C, p) array
            Per-point Jacobians of the C logits.
        logits : (N, C) array
            The MAP logits; π_n = softmax(logits_n).
        prior_precision : float or (p,) array
        eps : float
            A jitter ε ≥ 0 added to every H_n: 0 (the exact GGN) by default; some libraries
            add one (e.g. 1e-6), which moves variances by up to ~0.2% on a 10-class CNN.

        References
        ----------
        .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations:
           New Results and Methods", arXiv:2605.09075 (2026), App. C.5.
        """
        J = _jacobian(J, 3)
        xp = namespace(J)
        N, C, p = J.shape
        if C < 2:
            raise ValueError(
                "J must hold C ≥ 2 logits per point (a softmax of one logit is constant; use "
                f"GGN.binary); got shape {tuple(J.shape)}"
            )
        eps = nonnegative_float(eps, "eps")
        f = _logits(logits, (N, C), J)
        f = f - xp.max(f, axis=1, keepdims=True)
        e = xp.exp(f)
        pi = e / xp.sum(e, axis=1, keepdims=True)
        eye = xp.eye(C, dtype=J.dtype, device=array_api_compat.device(J))
        H = pi[:, :, None] * eye - pi[:, :, None] * pi[:, None, :] + eps * eye
        lam, U = eigh(H)
        W = U * xp.sqrt(xp.clip(lam, 0.0, None))[:, None, :]  # H_n = W_n W_nᵀ
        Jw = xp.matmul(xp.matrix_transpose(W), J)  # (N, C, p): W_nᵀ J_n
        return cls(xp.reshape(Jw, (N * C, p)), prior_precision, n_data=N, likelihood="multiclass")

    # ----------------------------------------------------------------------------- shapes
    @property
    def p(self) -> int:
        """Number of parameters."""
        return int(self.Jw.shape[1])

    @property
    def n_rows(self) -> int:
        """N', the number of rows of J_w."""
        return int(self.Jw.shape[0])

    @property
    def xp(self) -> Any:
        """The array namespace of J_w."""
        return namespace(self.Jw)

    def _col_tiles(self) -> list[tuple[int, int]]:
        return tiles(self.p, max(256, min(TILE, (1 << 22) // max(self.n_rows, 1))))

    def _index(self, idx: Any, name: str) -> Array:
        host = subset(idx, self.p, name, nonempty=True)
        return self.xp.asarray(host, device=array_api_compat.device(self.Jw))

    # ----------------------------------------------------------------------------- operators
    def _column_square_sums(self) -> Array:
        """colsum(J_w²) (p,), tiled over p."""
        xp = self.xp
        return xp.concat([xp.sum(self.Jw[:, a:b] ** 2, axis=0) for a, b in self._col_tiles()])

    def diagonal(self) -> Array:
        """diag(Ω) = column sums of J_w² + V, without forming Ω (tiled over p)."""
        return self._column_square_sums() + self.prior_precision

    def scores(self) -> Array:
        """Gradient-Laplace scores s_i = (1/N) Σ_n w_n g_i(x_n)² over the training set.

        Regression (w = 1): s = σ0² · colsum(J_w²)/N; binary (w = p(1−p)) and multiclass
        (squared column norms of the weighted Jacobian): s = colsum(J_w²)/N. With an isotropic
        prior the ranking equals that of diag(Ω) (docs/mathematics.md, "Scores").

        References
        ----------
        .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations:
           New Results and Methods", arXiv:2605.09075 (2026), §3, Alg. 1, and App. C.3.
        """
        # not diag(Ω) − V: that loses every digit of colsum(J_w²) ≪ V
        return self._column_square_sums() * (self.noise_var / self.n_data)

    def weighted_columns(self, idx: Any) -> Array:
        """J_w[:, idx] (N′ × |idx|), the weighted Jacobian columns of the parameters ``idx``."""
        return self.xp.take(self.Jw, self._index(idx, "idx"), axis=1)

    def columns(self, idx: Any) -> Array:
        """Ω[:, idx] (p × |idx|) = J_wᵀ J_w[:, idx] + V e_idx, tiled over the rows."""
        xp = self.xp
        ix = self._index(idx, "idx")
        B = xp.take(self.Jw, ix, axis=1)
        blocks = [self.Jw[:, a:b].T @ B for a, b in self._col_tiles()]
        out = xp.concat(blocks, axis=0)
        rows = xp.arange(self.p, device=array_api_compat.device(self.Jw))
        hit = xp.astype(rows[:, None] == ix[None, :], out.dtype)
        return out + hit * xp.take(self.prior_precision, ix)[None, :]

    def submatrix(self, S: Any) -> Array:
        """Ω_SS (k × k) = J_w[:, S]ᵀ J_w[:, S] + V_S, in tiles of ≤ TILE columns (OpenBLAS
        syrk hazard: docs/numerical-hazards.md)."""
        xp = self.xp
        ix = self._index(S, "S")
        B = xp.take(self.Jw, ix, axis=1)
        return gram_blocks(B, diag=xp.take(self.prior_precision, ix))

    def matvec(self, v: Array) -> Array:
        """Ω v = J_wᵀ (J_w v) + V v for v of shape (p,) or (p, r)."""
        if tuple(v.shape[:1]) != (self.p,) or v.ndim not in (1, 2):
            raise ValueError(f"v must have shape (p,) or (p, r) with p={self.p}; got {v.shape}")
        V = self.prior_precision if v.ndim == 1 else self.prior_precision[:, None]
        return self.Jw.T @ (self.Jw @ v) + V * v

    def gram(self) -> Array:
        """The Woodbury kernel J_w D J_wᵀ (N' × N'), D = V⁻¹, tiled over p.

        Ω⁻¹ = D − D J_wᵀ (I + J_w D J_wᵀ)⁻¹ J_w D (docs/mathematics.md, "Woodbury predictive").
        """
        return weighted_gram(self.Jw, 1.0 / self.prior_precision)

    def dense(self) -> Array:
        """Ω as a dense p × p array (small p only: p ≤ DENSE_MAX_P)."""
        if self.p > DENSE_MAX_P:
            raise ValueError(
                f"dense() forms a p×p matrix; p={self.p} exceeds DENSE_MAX_P={DENSE_MAX_P}; "
                "use matvec, columns or submatrix"
            )
        return gram_blocks(self.Jw, diag=self.prior_precision)


def _logits(logits: Any, shape: tuple[int, ...], like: Array) -> Array:
    xp = namespace(like)
    try:
        f = as_float(logits, "logits")
    except TypeError:
        f = as_float(np.asarray(logits), "logits")
    if tuple(f.shape) != shape:
        raise ValueError(f"logits must have shape {shape} to match J; got {tuple(f.shape)}")
    if namespace(f) is not xp:
        f = xp.asarray(to_numpy(f), device=array_api_compat.device(like))
    return xp.astype(f, like.dtype)
