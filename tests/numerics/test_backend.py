"""Backend dispatch and tiled products (docs/numerical-hazards.md, "OpenBLAS syrk segfault")."""

from __future__ import annotations

import numpy as np
import pytest

from laplace_lab.numerics import GGN
from laplace_lab.numerics import backend as bk
from tests.numerics.conftest import host


def _spd(rng: np.random.Generator, n: int) -> np.ndarray:
    A = rng.standard_normal((n, n))
    return A @ A.T + n * np.eye(n)


def test_linear_algebra_dispatch_matches_numpy(backend):
    rng = np.random.default_rng(0)
    A = _spd(rng, 7)
    B = rng.standard_normal((7, 3))
    L = bk.cholesky(backend(A))
    Lh = host(L)
    np.testing.assert_allclose(Lh @ Lh.T, A, rtol=0, atol=1e-12 * np.abs(A).max())
    np.testing.assert_array_equal(Lh, np.tril(Lh))
    X = host(bk.solve_triangular(L, backend(B)))
    np.testing.assert_allclose(Lh @ X, B, rtol=0, atol=1e-12)
    Xt = host(bk.solve_triangular(L, backend(B[:, 0]), trans=True))
    np.testing.assert_allclose(Lh.T @ Xt, B[:, 0], rtol=0, atol=1e-12)
    U = host(bk.solve_triangular(backend(Lh.T.copy()), backend(B), lower=False))
    np.testing.assert_allclose(Lh.T @ U, B, rtol=0, atol=1e-12)
    ref = np.linalg.solve(A, B)
    np.testing.assert_allclose(host(bk.cho_solve(L, backend(B))), ref, rtol=1e-12)
    np.testing.assert_allclose(host(bk.cho_solve(L, backend(B[:, 1]))), ref[:, 1], rtol=1e-12)
    w, V = bk.eigh(backend(A))
    np.testing.assert_allclose(host(w), np.linalg.eigvalsh(A), rtol=1e-12)
    Vh = host(V)
    np.testing.assert_allclose(Vh @ np.diag(host(w)) @ Vh.T, A, rtol=0, atol=1e-10)


def test_batched_eigh(backend):
    rng = np.random.default_rng(1)
    A = np.stack([_spd(rng, 4) for _ in range(3)])
    w, _V = bk.eigh(backend(A))
    np.testing.assert_allclose(host(w), np.linalg.eigvalsh(A), rtol=1e-12)


def test_tiled_products_equal_direct_products(backend):
    rng = np.random.default_rng(2)
    B = rng.standard_normal((4, 11))
    diag = rng.uniform(1, 2, 11)
    G = host(bk.gram_blocks(backend(B), diag=backend(diag), tile=3))
    np.testing.assert_allclose(G, B.T @ B + np.diag(diag), rtol=0, atol=1e-13)
    np.testing.assert_array_equal(G, G.T)  # lower blocks are exact transposes
    K = host(bk.weighted_gram(backend(B.T.copy()), backend(diag[:4]), tile=2))
    np.testing.assert_allclose(K, (B.T * diag[:4]) @ B, rtol=0, atol=1e-13)


def _shares_memory(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return np.shares_memory(a, b)
    return a.data_ptr() == b.data_ptr()  # torch


def test_overwriting_factorisations_hold_their_result_in_the_input(backend):
    """cholesky(overwrite=True) and solve_triangular(overwrite_b=True) return the same
    numbers as the copying calls; on NumPy and torch they reuse the input's memory (a
    column-major B for the solve), which is what keeps the float64 predictive at one n × n
    array; array_api_strict ignores the flags."""
    rng = np.random.default_rng(5)
    A, B = _spd(rng, 9), rng.standard_normal((4, 9))
    L_ref = np.linalg.cholesky(A)
    Ad = backend(A)
    L = bk.cholesky(Ad, overwrite=True)
    np.testing.assert_allclose(host(L), L_ref, rtol=0, atol=1e-13 * np.abs(A).max())
    Bt = backend(B.copy()).T  # column-major (9, 4), overwritten
    X = bk.solve_triangular(L, Bt, overwrite_b=True)
    np.testing.assert_allclose(host(X), np.linalg.solve(L_ref, B.T), rtol=1e-12)
    if backend.name != "array_api_strict":
        assert _shares_memory(L, Ad) and _shares_memory(X, Bt)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_add_product_accumulates_in_place(backend, dtype):
    """BLAS dtypes go through gemm with β = 1; any other NumPy dtype still adds in place."""
    rng = np.random.default_rng(6)
    out, A, B = (rng.standard_normal(s) * 4 for s in ((3, 5), (7, 3), (7, 5)))
    out, A, B = out.astype(dtype), A.astype(dtype), B.astype(dtype)
    acc = backend(out.copy())
    got = bk.add_product(acc, backend(A), backend(B))
    ref = out.astype(np.float64) + A.astype(np.float64).T @ B.astype(np.float64)
    np.testing.assert_allclose(host(got), ref, rtol=1e-6 if dtype == np.float32 else 1e-13)
    if backend.name != "array_api_strict":
        assert _shares_memory(got, acc)


def test_widened_gram_is_the_float64_gram_of_float32_columns(backend, monkeypatch):
    """gram_blocks(dtype=float64) of a float32 B equals the float64 Gram of the same
    float32 numbers (converted in row blocks, here of 4 rows over 3-column tiles), far closer
    than the float32 product, which rounds every partial sum."""
    monkeypatch.setattr(bk, "WIDEN_ROWS", 4)
    rng = np.random.default_rng(7)
    B32 = (rng.standard_normal((50, 8)) * np.exp(rng.standard_normal(8))).astype(np.float32)
    diag = rng.uniform(1, 2, 8)
    B64 = B32.astype(np.float64)
    ref = B64.T @ B64 + np.diag(diag)
    got = bk.gram_blocks(
        backend(B32), diag=backend(diag), tile=3, dtype=bk.namespace(backend(diag)).float64
    )
    assert host(got).dtype == np.float64
    np.testing.assert_allclose(host(got), ref, rtol=1e-13)
    plain = host(bk.gram_blocks(backend(B32), diag=backend(diag.astype(np.float32)), tile=3))
    assert np.max(np.abs(plain - ref) / np.abs(ref)) > 1e-9  # float32 products round


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-13), (np.float32, 1e-5)])
def test_subtract_gram_lower(backend, dtype, tol):
    """S − LᵀL on the lower triangle (BLAS syrk in place on NumPy), float64 and float32."""
    rng = np.random.default_rng(4)
    B, L = rng.standard_normal((9, 7)), rng.standard_normal((3, 7))
    S = B.T @ B
    ref = S - L.T @ L
    got = host(bk.subtract_gram_lower(backend(S.astype(dtype)), backend(L.astype(dtype))))
    assert got.dtype == dtype
    lower = np.tril_indices(7)
    np.testing.assert_allclose(got[lower], ref[lower], rtol=0, atol=tol * np.abs(S).max())


def test_as_float_policy(backend):
    x = bk.as_float(backend(np.arange(3)), "x")
    assert host(x).dtype == np.float64
    y = bk.as_float(backend(np.ones(2, dtype=np.float32)), "y")
    assert host(y).dtype == np.float32
    with pytest.raises(ValueError, match="z must be finite"):
        bk.as_float(backend(np.array([1.0, np.nan])), "z")
    with pytest.raises(TypeError, match="w must be"):
        bk.as_float(["a"], "w")


def test_gram_and_submatrix_at_20000_columns_do_not_crash():
    """OpenBLAS 0.3.31 on 2 threads segfaulted on J.T @ J for m ≳ 18000 (numerical-hazards.md).

    The GGN forms Ω_SS and J_w D J_wᵀ in tiles; a crash would kill the test process.
    N = 2 and float32 keep it cheap (the 20000² output is 1.6 GB).
    """
    m = 20000
    rng = np.random.default_rng(3)
    J = rng.standard_normal((2, m)).astype(np.float32)
    ggn = GGN.regression(J, noise_var=1.0, prior_precision=1.0)
    K = ggn.gram()
    np.testing.assert_allclose(K, J @ J.T, rtol=1e-4)
    omega = ggn.submatrix(np.arange(m))
    assert omega.shape == (m, m)
    for i, j in [(0, 0), (17, 19999), (19999, 4096), (8191, 8192)]:
        ref = float(J[:, i] @ J[:, j]) + (i == j)
        assert abs(float(omega[i, j]) - ref) <= 1e-5 * max(1.0, abs(ref))
    assert float(omega[19999, 17]) == float(omega[17, 19999])
