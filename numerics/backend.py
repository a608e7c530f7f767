"""Array backends: namespace lookup, dtype policy, linear-algebra dispatch and tiled products.

Kernels in :mod:`numerics` are written against the array API standard and obtain their
namespace with :func:`namespace` (``array_api_compat.array_namespace``). The few operations
outside the standard go through this module only:

- :func:`cholesky`, :func:`solve_triangular`, :func:`cho_solve`, :func:`eigh` dispatch to
  ``scipy.linalg`` (NumPy), ``cupyx.scipy.linalg`` (CuPy) and ``torch.linalg`` (torch), with
  a standard-only fallback (``xp.linalg``) for every other namespace, e.g. ``array_api_strict``.
- :func:`gram_blocks` forms JᵀJ-type products in tiles of at most :data:`TILE` columns:
  NumPy 2.4's bundled OpenBLAS 0.3.31 on 2 threads segfaults on ``J.T @ J`` (the syrk path)
  for J of shape (2000, m), m ≳ 18000, while tiles of ≤ 5000 columns work
  (docs/numerical-hazards.md, "OpenBLAS syrk segfault").

Dtype policy: floating inputs keep their dtype (float32 or float64); integer and boolean
inputs are promoted to the namespace's default float64. Mixed float32/float64 inputs follow
the standard's type promotion (to float64).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from types import ModuleType
from typing import Any

import array_api_compat
import numpy as np

__all__ = [
    "TILE",
    "add_diagonal",
    "add_product",
    "all_finite",
    "as_float",
    "available_memory",
    "cho_solve",
    "cholesky",
    "eigh",
    "eps",
    "gram_blocks",
    "namespace",
    "require_memory",
    "serial_blas",
    "solve_triangular",
    "subtract_gram_lower",
    "tiles",
    "to_numpy",
    "weighted_gram",
]

#: Largest number of columns in one tile of a JᵀJ-type product (OpenBLAS syrk: ≤ 5000 works).
TILE = 4096

Array = Any


def namespace(*arrays: Array) -> ModuleType:
    """The array-API namespace shared by ``arrays`` (raises TypeError on a mix)."""
    return array_api_compat.array_namespace(*arrays)


def _kind(xp: ModuleType) -> str:
    if array_api_compat.is_numpy_namespace(xp):
        return "numpy"
    if array_api_compat.is_torch_namespace(xp):
        return "torch"
    if array_api_compat.is_cupy_namespace(xp):
        return "cupy"
    return "generic"


def as_float(x: Array, name: str, xp: ModuleType | None = None) -> Array:
    """``x`` as a real floating array of its own namespace, validated finite.

    Floating dtypes are kept; integer and boolean arrays become the default float64.
    Python lists and scalars are converted with ``numpy``.

    Raises
    ------
    TypeError
        If ``x`` is complex or not numeric.
    ValueError
        If ``x`` contains NaN or Inf.
    """
    if xp is None:
        try:
            xp = namespace(x)
        except TypeError:
            given = type(x).__name__
            x = np.asarray(x)
            if x.dtype == object:
                raise TypeError(f"{name} must be a numeric array; got {given}") from None
            xp = namespace(x)
    if xp.isdtype(x.dtype, "real floating"):
        pass
    elif xp.isdtype(x.dtype, ("integral", "bool")):
        x = xp.astype(x, xp.float64)
    else:
        raise TypeError(f"{name} must be a real array; got dtype {x.dtype}")
    if not all_finite(x, xp):
        raise ValueError(f"{name} must be finite; it contains NaN or Inf")
    return x


def available_memory() -> int | None:
    """Bytes of host memory available to a new allocation (Linux ``MemAvailable``), or None
    where the system does not say."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def require_memory(nbytes: int, what: str, hint: str = "") -> None:
    """Refuse an allocation of ``nbytes`` for ``what`` that cannot fit in the available host
    memory, with a MemoryError naming it and its size (rather than NumPy's bare
    ``_ArrayMemoryError``, or a machine pushed into swap)."""
    free = available_memory()
    if free is not None and nbytes > free:
        raise MemoryError(
            f"{what} needs {nbytes / 2**30:.2f} GiB, more than the {free / 2**30:.2f} GiB of "
            f"memory available{'; ' + hint if hint else ''}"
        )


#: Elements of the boolean temporary of one block of :func:`all_finite` (1 MiB).
_FINITE_BLOCK = 1 << 20


def all_finite(x: Array, xp: ModuleType | None = None) -> bool:
    """Whether every entry of ``x`` is finite, checked a block of rows at a time: the boolean
    temporary is at most max(1 MiB, 1/64 of ``x``'s entries), not a second array of x's shape
    (for an 8 GB Jacobian that would be another 1 GB)."""
    xp = namespace(x) if xp is None else xp
    size = math.prod(x.shape)
    if x.ndim == 0 or size <= _FINITE_BLOCK:
        return bool(xp.all(xp.isfinite(x)))
    per_row = size // x.shape[0]
    step = max(1, max(_FINITE_BLOCK, size // 64) // max(per_row, 1))
    return all(bool(xp.all(xp.isfinite(x[i : i + step, ...]))) for i in range(0, x.shape[0], step))


def eps(x: Array) -> float:
    """Machine epsilon of the floating dtype of ``x``."""
    return float(namespace(x).finfo(x.dtype).eps)


def to_numpy(x: Array) -> np.ndarray:
    """A host NumPy copy (or view) of any backend array (CuPy via ``.get()``, others DLPack)."""
    xp = namespace(x)
    kind = _kind(xp)
    if kind == "numpy":
        return np.asarray(x)
    if kind == "cupy":
        return x.get()
    if kind == "torch":
        return x.detach().cpu().numpy()
    return np.from_dlpack(x)


@functools.cache
def _blas_controller() -> Any:
    """threadpoolctl's view of the loaded thread pools, scanned once (a scan of the loaded
    libraries costs milliseconds; a limit through it costs microseconds)."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        return None
    return ThreadpoolController()


@contextmanager
def serial_blas(xp: ModuleType) -> Iterator[None]:
    """Run the enclosed (small) host BLAS calls on one thread (NumPy only; else a no-op).

    Sequences of many small products (vectors of length N or a few hundred columns) gain
    nothing from threads, and a multi-threaded OpenBLAS on an oversubscribed machine pays a
    large fixed cost per call — orders of magnitude more than the work for a few-hundred-row
    Cholesky (docs/performance.md, "One BLAS thread for sequences of small products"). Uses
    threadpoolctl (installed with scikit-learn) when available; nothing is changed when the
    BLAS pools already run one thread.
    """
    ctx: Any = nullcontext()
    controller = _blas_controller() if _kind(xp) == "numpy" else None
    if controller is not None:
        blas = controller.select(user_api="blas")
        if any(lib.num_threads > 1 for lib in blas.lib_controllers):
            ctx = blas.limit(limits=1)
    with ctx:
        yield


# ---------------------------------------------------------------------------------------------
# Linear algebra outside the standard
# ---------------------------------------------------------------------------------------------


def cholesky(A: Array, *, overwrite: bool = False) -> Array:
    """Lower Cholesky factor L of a symmetric positive-definite A (A = L Lᵀ).

    ``overwrite=True`` lets a row-major NumPy or torch A (a temporary of the caller, exactly
    symmetric: its upper triangle is read) hold L: LAPACK factorises Aᵀ = A, which is
    column-major, in place, so no second n × n array is allocated; A must not be used
    afterwards. CuPy ignores it.

    Raises
    ------
    numpy.linalg.LinAlgError / torch.linalg.LinAlgError
        If A is not positive definite (as reported by the backend).
    """
    xp = namespace(A)
    kind = _kind(xp)
    if kind == "numpy":
        import scipy.linalg

        blas = A.dtype in (np.float32, np.float64) and A.flags.writeable
        if overwrite and blas and A.flags.c_contiguous:
            return scipy.linalg.cholesky(A.T, lower=True, overwrite_a=True, check_finite=False)
        return scipy.linalg.cholesky(A, lower=True, check_finite=False)
    if kind == "torch":
        import torch

        if overwrite and A.is_contiguous() and not A.requires_grad:
            # A.mT is column-major, LAPACK's layout: factorised in place, L read through it
            return torch.linalg.cholesky(A.mT, out=A.mT)
        return torch.linalg.cholesky(A)
    if kind == "cupy":
        import cupy

        return cupy.linalg.cholesky(A)
    return xp.linalg.cholesky(A)


def solve_triangular(
    L: Array, B: Array, *, lower: bool = True, trans: bool = False, overwrite_b: bool = False
) -> Array:
    """Solve L X = B (``trans=False``) or Lᵀ X = B (``trans=True``) for triangular L.

    ``B`` may be a vector (n,) or a matrix (n, r). The generic fallback uses the standard's
    ``xp.linalg.solve`` (exact but O(n³)); the named backends use triangular solvers.
    ``overwrite_b=True`` lets a column-major NumPy or torch B (a temporary of the caller)
    hold X, without a second array; CuPy ignores it.
    """
    xp = namespace(L, B)
    kind = _kind(xp)
    vec = B.ndim == 1
    if kind == "numpy":
        import scipy.linalg

        return scipy.linalg.solve_triangular(
            L, B, lower=lower, trans=1 if trans else 0, overwrite_b=overwrite_b, check_finite=False
        )
    if kind == "cupy":
        import cupyx.scipy.linalg

        return cupyx.scipy.linalg.solve_triangular(L, B, lower=lower, trans=1 if trans else 0)
    B2 = B[:, None] if vec else B
    if kind == "torch":
        import torch

        A = L.mT if trans else L
        upper = lower == trans
        if overwrite_b and B2.mT.is_contiguous() and not (A.requires_grad or B2.requires_grad):
            X = torch.linalg.solve_triangular(A, B2, upper=upper, out=B2)  # column-major B
        else:
            X = torch.linalg.solve_triangular(A, B2, upper=upper)
    else:
        A = xp.matrix_transpose(L) if trans else L
        X = xp.linalg.solve(A, B2)
    return X[:, 0] if vec else X


def cho_solve(L: Array, B: Array) -> Array:
    """Solve (L Lᵀ) X = B from the lower Cholesky factor L (two triangular solves)."""
    xp = namespace(L, B)
    kind = _kind(xp)
    if kind == "numpy":
        import scipy.linalg

        return scipy.linalg.cho_solve((L, True), B, check_finite=False)
    if kind == "torch":
        import torch

        vec = B.ndim == 1
        X = torch.cholesky_solve(B[:, None] if vec else B, L, upper=False)
        return X[:, 0] if vec else X
    return solve_triangular(L, solve_triangular(L, B, lower=True), lower=True, trans=True)


def eigh(A: Array) -> tuple[Array, Array]:
    """Eigenvalues (ascending) and orthonormal eigenvectors of a symmetric A (or a stack)."""
    xp = namespace(A)
    kind = _kind(xp)
    if kind == "numpy":
        w, V = np.linalg.eigh(A)  # batched over leading dimensions, LAPACK syevd
        return w, V
    if kind == "torch":
        import torch

        w, V = torch.linalg.eigh(A)
        return w, V
    w, V = xp.linalg.eigh(A)
    return w, V


def subtract_gram_lower(S: Array, L: Array) -> Array:
    """S − Lᵀ L for a symmetric S (n × n) and L (r × n), exact at least on the lower triangle.

    A symmetric rank-r update (BLAS-3 ``syrk``). On NumPy, a C-contiguous S is overwritten in
    place and only its lower triangle (i ≥ j) is updated, at half the flops of a product; torch
    updates all of S in place (``addmm_``); other namespaces return a new, full array.
    """
    xp = namespace(S, L)
    kind = _kind(xp)
    if kind == "numpy" and S.dtype == L.dtype and S.dtype in (np.float32, np.float64):
        import scipy.linalg.blas

        syrk = scipy.linalg.blas.get_blas_funcs("syrk", (S,))
        # S.T is S in Fortran order: its upper triangle is the lower triangle of S
        out = syrk(-1.0, L.T, beta=1.0, c=S.T, trans=0, lower=0, overwrite_c=1)
        return out.T
    if kind == "torch":
        return S.addmm_(L.mT, L, alpha=-1.0)
    return S - L.T @ L


# ---------------------------------------------------------------------------------------------
# Tiled products (OpenBLAS syrk segfault: docs/numerical-hazards.md)
# ---------------------------------------------------------------------------------------------


def add_diagonal(A: Array, d: Array | float) -> Array:
    """A + diag(d) (``d`` a vector or a scalar) for a square A, in place on NumPy, CuPy and
    torch (no n × n temporary); a new array on other namespaces."""
    xp = namespace(A)
    kind = _kind(xp)
    if kind in ("numpy", "cupy"):
        idx = xp.arange(A.shape[0])
        A[idx, idx] += d
        return A
    if kind == "torch":
        A.diagonal().add_(d)
        return A
    return A + xp.eye(A.shape[0], dtype=A.dtype, device=array_api_compat.device(A)) * d


def tiles(n: int, tile: int = TILE) -> list[tuple[int, int]]:
    """(start, end) of consecutive ranges of at most ``tile`` of n indices."""
    return [(a, min(a + tile, n)) for a in range(0, n, tile)]


#: Rows of B converted at a time when :func:`gram_blocks` accumulates in a wider dtype.
WIDEN_ROWS = 256


def add_product(out: Array, A: Array, B: Array) -> Array:
    """out += Aᵀ B, in place on NumPy (BLAS gemm with β = 1 for float32/float64: no temporary
    of out's size) and torch (``addmm_``); ``out + Aᵀ B`` as a new array on other namespaces."""
    xp = namespace(out, A, B)
    kind = _kind(xp)
    if kind == "numpy":
        blas = out.dtype in (np.float32, np.float64) and out.dtype == A.dtype == B.dtype
        if blas and out.flags.c_contiguous and out.flags.writeable:
            import scipy.linalg.blas

            gemm = scipy.linalg.blas.get_blas_funcs("gemm", (out,))
            # out.T is column-major: outᵀ += Bᵀ A in place
            gemm(1.0, B, A, beta=1.0, c=out.T, trans_a=1, overwrite_c=1)
        else:
            out += A.T @ B
        return out
    if kind == "torch":
        return out.addmm_(A.mT, B)
    return out + A.T @ B


def _widened_product(B: Array, a: int, b: int, c: int, d: int, dtype: Any) -> Array:
    """B[:, a:b]ᵀ B[:, c:d] in ``dtype``, accumulated in place over blocks of
    :data:`WIDEN_ROWS` rows that are converted one at a time (no converted copy of B)."""
    xp = namespace(B)
    out = xp.zeros((b - a, d - c), dtype=dtype, device=array_api_compat.device(B))
    for r0 in range(0, B.shape[0], WIDEN_ROWS):
        rows = B[r0 : min(r0 + WIDEN_ROWS, B.shape[0]), :]
        left = xp.astype(rows[:, a:b], dtype)
        right = left if (a, b) == (c, d) else xp.astype(rows[:, c:d], dtype)
        out = add_product(out, left, right)
    return out


def gram_blocks(
    B: Array, *, diag: Array | None = None, tile: int = TILE, dtype: Any = None
) -> Array:
    """Bᵀ B + diag(``diag``) (m × m) assembled from column tiles of at most ``tile`` columns.

    Only the blocks on and above the diagonal are computed; the lower blocks are their exact
    transposes, so the result is exactly symmetric. Each product involves ≤ ``tile`` columns,
    which avoids the OpenBLAS syrk crash at m ≳ 18000 (docs/numerical-hazards.md, "OpenBLAS
    syrk segfault"). The output is the only m × m allocation.

    ``dtype`` (e.g. float64 for a float32 B) is the dtype of the result and of every product:
    B is converted :data:`WIDEN_ROWS` rows at a time, never as a whole.
    """
    xp = namespace(B)
    m = B.shape[1]
    dev = array_api_compat.device(B)
    dtype = B.dtype if dtype is None else dtype
    widen = dtype != B.dtype
    parts = tiles(m, tile)
    out = xp.empty((m, m), dtype=dtype, device=dev) if len(parts) > 1 else None
    for i, (a, b) in enumerate(parts):
        Bi = B[:, a:b]
        for c, d in parts[i:]:
            blk = _widened_product(B, a, b, c, d, dtype) if widen else Bi.T @ B[:, c:d]
            if c == a and diag is not None:
                blk = add_diagonal(blk, diag[a:b])
            if out is None:
                return blk
            out[a:b, c:d] = blk
            if c != a:
                out[c:d, a:b] = blk.T
    return out


def weighted_gram(B: Array, d: Array, *, tile: int = TILE) -> Array:
    """B diag(d) Bᵀ (n × n) summed over column tiles of at most ``tile`` columns of B.

    The Woodbury kernel J_w D J_wᵀ of Ω⁻¹ = D − D J_wᵀ(I + J_w D J_wᵀ)⁻¹J_w D (``d`` = D =
    V⁻¹ ≥ 0; docs/mathematics.md, "Woodbury predictive"); no p-sized square, and the n × n
    output is itself assembled from tiles (n = N·C can exceed 18000).
    """
    xp = namespace(B, d)
    root = xp.sqrt(d)
    out = None
    for a, b in tiles(B.shape[1], tile):
        X = B[:, a:b] * root[a:b]
        blk = gram_blocks(X.T, tile=tile)  # n may itself be ≥ 18000 (N·C rows)
        if out is None:
            out = blk
        else:
            out += blk  # in place: no third n × n array
    return out
