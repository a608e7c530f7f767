"""Sub-network selection methods against their definitions and the literal Alg. 2."""

from __future__ import annotations

import contextlib
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from laplace_lab.numerics import (
    GGN,
    gradient_laplace,
    greedy_laplace,
    greedy_laplace_reference,
    largest_magnitude,
    largest_marginal_variance,
    last_k,
    neural_linear,
    random_subset,
    subnet_diagonal,
)
from laplace_lab.numerics import pivoted_cholesky as pc
from tests.numerics.conftest import random_problem

FEW = min(settings.default.max_examples, 25)


@st.composite
def greedy_problems(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    n = draw(st.integers(1, 12))
    p = draw(st.integers(1, 40))
    k = draw(st.integers(1, p))
    m = draw(st.one_of(st.none(), st.integers(k, p)))
    block = draw(st.sampled_from([(64, 128), (1, 1), (2, 3), (3, 7)]))
    return seed, n, p, k, m, block


def _kernel(stored: bool, block: int = 64, batch: int = 128):
    """Patches forcing the stored-Ω_KK kernel (with ``block`` pivots per block) or the J_w one."""
    patches = [
        mock.patch.object(pc, "store_omega", lambda *args: stored),
        mock.patch.object(pc, "_STORED_BLOCK", block),
        mock.patch.object(pc, "_BLOCK", block),
        mock.patch.object(pc, "_BATCH", batch),
    ]
    stack = contextlib.ExitStack()
    for p in patches:
        stack.enter_context(p)
    return stack


@pytest.mark.parametrize("stored", [True, False], ids=["stored-omega", "jacobian"])
@settings(max_examples=max(FEW, 10))
@given(problem=greedy_problems())
def test_greedy_equals_literal_algorithm(stored, problem):
    """Same ordered S as the literal Algorithm 2, for both kernels and every block size."""
    seed, n, p, k, m, (block, batch) = problem
    rng = np.random.default_rng(seed)
    J, V = random_problem(rng, n, p)
    ggn = GGN.regression(J, noise_var=rng.uniform(0.1, 2.0), prior_precision=V)
    ref = greedy_laplace_reference(ggn.dense(), ggn.scores(), k, n_candidates=m)
    with _kernel(stored, block, batch):
        got = greedy_laplace(ggn, k, n_candidates=m)
    np.testing.assert_array_equal(got, ref)
    assert got.dtype == np.int64 and np.unique(got).size == k


def test_greedy_kernel_choice():
    """Ω_KK is stored when it fits 512 MiB and its flops win; never at m = 20000 or N' ≪ m."""
    assert pc.store_omega(1500, 3000, 1500, 8)  # the 50x benchmark
    assert not pc.store_omega(2000, 20000, 10000, 8)  # 3.2 GB: J_w kernel
    assert not pc.store_omega(100, 3000, 1500, 8)  # N' m² + m³/3 ≫ 2N'mk
    assert pc.store_omega(8000, 8192, 4096, 8) and not pc.store_omega(8000, 8193, 4096, 8)


@pytest.mark.parametrize("stored", [True, False], ids=["stored-omega", "jacobian"])
@pytest.mark.parametrize("which", ["regression", "binary", "multiclass"])
def test_greedy_on_every_backend(backend, which, stored):
    rng = np.random.default_rng(5)
    n, p, k = 15, 120, 50
    J, V = random_problem(rng, n, p)
    if which == "regression":
        ggn = GGN.regression(backend(J), noise_var=0.3, prior_precision=backend(V))
    elif which == "binary":
        f = backend(rng.standard_normal(n))
        ggn = GGN.binary(backend(J), f, prior_precision=backend(V))
    else:
        J3, F = rng.standard_normal((n, 3, p)), rng.standard_normal((n, 3))
        ggn = GGN.multiclass(backend(J3), backend(F), prior_precision=backend(V))
    from tests.numerics.conftest import host

    omega = host(ggn.dense())
    scores = host(ggn.scores())
    ref = greedy_laplace_reference(omega, scores, k, n_candidates=90)
    with _kernel(stored, 8, 12):
        got = greedy_laplace(ggn, k, n_candidates=90)
    np.testing.assert_array_equal(got, ref)
    # a separate reference set's scores rank the candidates instead
    other = rng.uniform(size=p)
    np.testing.assert_array_equal(
        greedy_laplace(ggn, k, scores=backend(other)),
        greedy_laplace_reference(omega, other, k),
    )


@pytest.mark.parametrize("stored", [True, False], ids=["stored-omega", "jacobian"])
def test_greedy_closed_forms_and_ties(stored):
    with _kernel(stored, block=2, batch=3):
        _closed_forms_and_ties()


def _closed_forms_and_ties():
    # J = 0: Ω = V is diagonal, Schur complements never change: S = the k largest v_i,
    # ties to the lowest candidate position (the candidates are ordered by score: all 0).
    V = np.array([1.0, 3.0, 2.0, 3.0, 1.0, 3.0])
    ggn = GGN(np.zeros((2, 6)), V)
    np.testing.assert_array_equal(greedy_laplace(ggn, 4, n_candidates=6), [1, 3, 5, 2])
    np.testing.assert_array_equal(
        greedy_laplace_reference(np.diag(V), np.zeros(6), 4, n_candidates=6), [1, 3, 5, 2]
    )
    # orthogonal columns: Ω diagonal again with d = ‖j_i‖² + v_i
    J = np.diag([1.0, 3.0, 2.0])
    np.testing.assert_array_equal(greedy_laplace(GGN(J, 1.0), 3), [1, 2, 0])
    # two identical columns (d = 5, 5, 4.61): after the first, the duplicate's Schur diagonal
    # drops to 5 − 4²/5 = 1.8, below the orthogonal column's 4.61
    J = np.array([[2.0, 2.0, 0.0], [0.0, 0.0, 1.9]])
    got = greedy_laplace(GGN(J, 1.0), 2, n_candidates=3)
    np.testing.assert_array_equal(got, [0, 2])


def test_gradient_laplace_and_baselines():
    s = np.array([1.0, 3.0, 3.0, 2.0, 0.5])
    np.testing.assert_array_equal(gradient_laplace(s, 3), [1, 2, 3])
    np.testing.assert_array_equal(gradient_laplace(list(s), 5), [1, 2, 3, 0, 4])
    np.testing.assert_array_equal(last_k(5, 2), [4, 3])
    np.testing.assert_array_equal(neural_linear([6, 4, 3]), [10, 11, 12])
    np.testing.assert_array_equal(largest_magnitude(np.array([0.1, -5.0, 2.0, 5.0]), 3), [1, 3, 2])
    a = random_subset(10, 4, rng=np.random.default_rng(7))
    np.testing.assert_array_equal(a, np.random.default_rng(7).permutation(10)[:4])
    np.testing.assert_array_equal(random_subset(10, 10, rng=np.random.default_rng(7))[:4], a)


def test_diagonal_rules(backend):
    rng = np.random.default_rng(8)
    J, V = random_problem(rng, 6, 30)
    ggn = GGN.regression(backend(J), noise_var=0.5, prior_precision=backend(V))
    omega = J.T @ J / 0.5 + np.diag(V)
    order = np.argsort(np.diag(omega), kind="stable")
    np.testing.assert_array_equal(subnet_diagonal(ggn, 7), order[:7])
    marg = np.diag(np.linalg.inv(omega))
    np.testing.assert_array_equal(
        largest_marginal_variance(ggn, 7), np.argsort(-marg, kind="stable")[:7]
    )


@pytest.mark.parametrize(
    ("call", "exc", "name"),
    [
        (lambda g: greedy_laplace(g, 0), ValueError, "k"),
        (lambda g: greedy_laplace(g, 11), ValueError, "k"),
        (lambda g: greedy_laplace(g, 2.0), TypeError, "k"),
        (lambda g: greedy_laplace(g, 3, n_candidates=2), ValueError, "n_candidates"),
        (lambda g: greedy_laplace(g, 3, n_candidates=11), ValueError, "n_candidates"),
        (lambda g: greedy_laplace(g, 3, scores=np.ones(9)), ValueError, "scores"),
        (lambda g: greedy_laplace(g, 3, scores=np.full(10, np.nan)), ValueError, "scores"),
        (lambda g: greedy_laplace(g.dense(), 3), TypeError, "ggn"),
        (lambda g: greedy_laplace_reference(g.dense(), np.ones(9), 3), ValueError, "scores"),
        (lambda g: greedy_laplace_reference(np.ones((3, 4)), np.ones(3), 1), ValueError, "omega"),
        (lambda g: gradient_laplace(np.ones(4), 5), ValueError, "k"),
        (lambda g: gradient_laplace(np.ones((2, 2)), 1), ValueError, "scores"),
        (lambda g: subnet_diagonal(g, -1), ValueError, "k"),
        (lambda g: last_k(3, 4), ValueError, "k"),
        (lambda g: random_subset(5, 2, rng=None), TypeError, "rng is required"),
        (lambda g: neural_linear([]), ValueError, "layout"),
        (lambda g: neural_linear([3, 0]), ValueError, "layout"),
        (lambda g: largest_magnitude([1.0, np.inf], 1), ValueError, "theta"),
    ],
)
def test_bad_input(call, exc, name):
    ggn = GGN(np.ones((2, 10)), 1.0)
    with pytest.raises(exc, match=name):
        call(ggn)


def test_largest_variances_is_the_minimiser_of_eq_23_by_brute_force():
    """Daxberger et al. eq. (23): Σ_{d∉S} σ_d² is smallest for the k largest σ_d²."""
    import itertools

    from laplace_lab.numerics import largest_variances

    rng = np.random.default_rng(7)
    for _ in range(30):
        p = int(rng.integers(2, 8))
        k = int(rng.integers(1, p + 1))
        var = rng.choice([0.1, 0.5, 1.0, 2.0], size=p) * rng.uniform(0.5, 1.5, size=p)
        S = largest_variances(var, k)
        best = min(itertools.combinations(range(p), k), key=lambda T: np.delete(var, T).sum())
        assert np.isclose(np.delete(var, S).sum(), np.delete(var, best).sum(), rtol=0, atol=0)
        assert list(var[S]) == sorted(var[S], reverse=True)  # largest first
    np.testing.assert_array_equal(largest_variances([0.1, 0.5, 0.3, 0.5], 2), [1, 3])  # ties
    with pytest.raises(ValueError, match="k"):
        largest_variances([0.1, 0.2], 3)
    with pytest.raises(ValueError, match="non-negative"):
        largest_variances([0.1, -0.2], 1)
    with pytest.raises(ValueError, match="1-D"):
        largest_variances([[0.1, 0.2]], 1)
