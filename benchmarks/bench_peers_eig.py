"""The top-20 eigenvalues of a network's GGN against curvlinops + SciPy and laplax.

The row: the k = 20 largest eigenvalues of Jᵀ J/σ0² (σ0² = 0.25) of the 3×200 MLP
(p = 82,401) on N = 1,000 rows, matrix-free. Ours: thick-restart Lanczos
(:func:`~laplace_lab.numerics.thick_restart.eigsh`, relative residual tolerance 1e-10 in
float64 and 1e-5 in float32) on ``NetworkGGN.matvec``. curvlinops 3.0.1: its
``GGNLinearOperator`` (built in the call) through ``to_scipy()`` and
``scipy.sparse.linalg.eigsh(k=20, which="LA")`` (ARPACK, the same tolerances). laplax
0.0.2: ``lanczos_lowrank`` with ``STEPS`` = 60 Lanczos steps (full reorthogonalisation; it
has no convergence test, so the step count is fixed: 3k steps resolve the top 20 of this
fast-decaying spectrum), its matrix-vector product jit-compiled inside the call.
Eigenvalues must agree to 1e-6 relative in float64 and 1e-3 in float32.

References
----------
.. [1] K. Wu, H. Simon, "Thick-Restart Lanczos Method for Large Symmetric Eigenvalue
   Problems", SIAM J. Matrix Anal. Appl. 22(2), 2000.
.. [2] R. B. Lehoucq, D. C. Sorensen, C. Yang, "ARPACK Users' Guide", SIAM 1998 (SciPy's
   ``eigsh``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from laplace_lab.benchmarks import bench_peers as peers
from laplace_lab.benchmarks import bench_peers_laplax as laplax_side
from laplace_lab.benchmarks._harness import Row

#: Eigenpairs wanted.
K = 20
#: laplax's Lanczos steps.
STEPS = 60
_EIG_TOLERANCE = {"float64": 1e-6, "float32": 1e-3}
_SOLVER_TOL = {"float64": 1e-10, "float32": 1e-5}


def _ours(model: Any, X: Any, k: int, tol: float) -> np.ndarray:
    from laplace_lab.numerics.thick_restart import eigsh

    ggn = peers._ours(model, X)
    res = eigsh(lambda v: ggn.matvec(v, include_prior=False), ggn.p, k, rng=0, tol=tol)
    return np.asarray(res.values)


def _curvlinops(model: Any, X: Any, y: Any, k: int, tol: float) -> np.ndarray:
    from scipy.sparse.linalg import eigsh

    op, c = peers._curvlinops_operator(model, X, y)
    dtype = np.float64 if X.dtype.itemsize == 8 else np.float32
    values = eigsh(op.to_scipy(dtype), k=k, which="LA", tol=tol, return_eigenvectors=False)
    return c * np.sort(values)[::-1]


def rows(kind: str = "large", dtypes: tuple[str, ...] = ("float64", "float32")) -> list[Row]:
    """One row per dtype on the ``kind`` problem of :mod:`.bench_peers`."""
    import torch

    have_cl, have_lx = peers._have("curvlinops"), peers._have("laplax")
    if not (have_cl or have_lx):
        return []
    out = []
    for dname in dtypes:
        model, X, y = peers._problem(kind, getattr(torch, dname))
        p = sum(int(t.numel()) for t in model.parameters())
        k, tol = min(K, p - 1), _SOLVER_TOL[dname]
        steps = min(STEPS, p)
        sides: dict[str, Callable[[], Any]] = {}
        if have_cl:
            sides["curvlinops 3.0.1 + scipy eigsh"] = partial(_curvlinops, model, X, y, k, tol)
        if have_lx:
            sides["laplax 0.0.2 lanczos"] = partial(
                laplax_side.top_eigenvalues, model, X, y, peers.NOISE_VAR, k, steps
            )
        size = f"{peers.LABEL[kind]} (p = {p:,}), N = {X.shape[0]:,}"
        out.append(
            peers._row(
                f"top-{k} GGN eigenvalues, {size}",
                partial(_ours, model, X, k, tol),
                sides,
                dname,
                f"laplax: {steps} Lanczos steps, jit compile inside its time",
                tolerance=_EIG_TOLERANCE[dname],
                entrywise=True,
            )
        )
    return out
