"""The selection registry: every registered method honours its declared contract, and a
lazy NetworkGGN selects exactly what the dense GGN of the same network selects."""

from __future__ import annotations

import numpy as np
import pytest

from laplace_lab.numerics import GGN
from laplace_lab.numerics.selection_registry import (
    SubnetProblem,
    get_selection,
    greedy_candidates,
    select,
    selection_method,
    selection_methods,
)

METHODS = list(selection_methods())


def _problem(seed: int = 0, n: int = 12, p: int = 40) -> SubnetProblem:
    rng = np.random.default_rng(seed)
    J = rng.standard_normal((n, p)) * np.exp(rng.standard_normal(p))
    return SubnetProblem(
        GGN.regression(J, noise_var=0.7, prior_precision=rng.uniform(0.5, 2.0, p)),
        theta=rng.standard_normal(p),
        layer_sizes=[25, 10, 5],
    )


def test_the_papers_methods_are_registered():
    assert {
        "gradient_laplace",
        "greedy_laplace",
        "subnet_diagonal",
        "last_k",
        "random",
        "largest_magnitude",
        "largest_marginal_variance",
        "neural_linear",
    } <= set(METHODS)
    assert not get_selection("greedy_laplace").nested
    assert not get_selection("neural_linear").sized


@pytest.mark.parametrize("name", METHODS)
def test_every_method_returns_distinct_indices_and_honours_nested(name):
    problem = _problem()
    method = get_selection(name)
    k_max = 20
    order = select(name, problem, k_max, rng=np.random.default_rng(3))
    assert order.dtype == np.int64 and np.unique(order).size == order.size
    assert order.min() >= 0 and order.max() < problem.p
    if not method.sized:
        return
    assert order.size == k_max
    for k in (1, 7, 13):
        sub = select(name, problem, k, rng=np.random.default_rng(3))
        assert sub.size == k
        if method.nested:  # prefixes of one call are the selections of smaller k
            np.testing.assert_array_equal(sub, order[:k])


def test_options_and_errors_name_the_problem():
    problem = _problem()
    with pytest.raises(ValueError, match="method must be one of"):
        select("oracle", problem, 3)
    with pytest.raises(ValueError, match="accepts options"):
        select("last_k", problem, 3, candidates="2k")
    # shared settings reach only the methods that declare them
    a = select("last_k", problem, 3, shared={"candidates": "paper"})
    np.testing.assert_array_equal(a, [39, 38, 37])
    with pytest.raises(TypeError, match="rng is required"):
        select("random", problem, 3)
    with pytest.raises(ValueError, match="k must be in"):
        select("gradient_laplace", problem, 41)
    with pytest.raises(TypeError, match="SubnetProblem"):
        select("gradient_laplace", problem.precision, 3)
    with pytest.raises(ValueError, match="needs theta"):
        select("largest_magnitude", SubnetProblem(problem.precision), 3)


def test_greedy_candidate_rules():
    assert greedy_candidates("2k", 10, 100) == 20
    assert greedy_candidates("2k", 10, 15) == 15
    assert greedy_candidates("paper", 10, 100) == 99  # min(2k + 1000, p − 1)
    assert greedy_candidates("paper", 10, 100_000) == 1020
    assert greedy_candidates("paper", 20_000, 100_000) == 30_000  # the cap
    assert greedy_candidates(12, 10, 100) == 12
    with pytest.raises(ValueError, match="candidates"):
        greedy_candidates(5, 10, 100)
    with pytest.raises(ValueError, match="candidates must be one of"):
        greedy_candidates("3k", 10, 100)
    problem = _problem()
    S = select("greedy_laplace", problem, 5, candidates=40)
    from laplace_lab.numerics import greedy_laplace_reference

    omega = problem.precision.dense()
    ref = greedy_laplace_reference(omega, problem.precision.scores(), 5, n_candidates=40)
    np.testing.assert_array_equal(S, ref)


def test_a_new_method_is_one_registration_away():
    @selection_method("smallest_index", nested=True, description="test rule")
    def _smallest(problem, k, *, rng=None):
        return np.arange(k, dtype=np.int64)

    try:
        assert "smallest_index" in selection_methods()
        np.testing.assert_array_equal(select("smallest_index", _problem(), 3), [0, 1, 2])
        with pytest.raises(ValueError, match="different selection method"):
            selection_method("smallest_index", nested=True)(lambda problem, k, *, rng=None: k)
    finally:
        from laplace_lab.numerics import selection_registry

        selection_registry._REGISTRY.pop("smallest_index")


@pytest.mark.parametrize("likelihood", ["regression", "binary", "multiclass"])
def test_network_ggn_selects_what_the_dense_ggn_selects(likelihood):
    torch = pytest.importorskip("torch")
    from laplace_lab.numerics import per_sample_jacobian
    from laplace_lab.numerics.network_ggn import NetworkGGN

    torch.manual_seed(0)
    n_out = 3 if likelihood == "multiclass" else 1
    model = torch.nn.Sequential(
        torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, n_out)
    ).double()
    X = torch.randn(15, 4, dtype=torch.float64)
    J = per_sample_jacobian(model, X).numpy()
    with torch.no_grad():
        f = model(X).numpy()
    if likelihood == "regression":
        dense = GGN.regression(J.reshape(15, -1), noise_var=0.3, prior_precision=0.5)
    elif likelihood == "binary":
        dense = GGN.binary(J.reshape(15, -1), f.reshape(-1), prior_precision=0.5)
    else:
        dense = GGN.multiclass(J, f, prior_precision=0.5)
    net = NetworkGGN(model, X, likelihood=likelihood, noise_var=0.3, prior_precision=0.5)
    assert net.p == dense.p == 6 * 4 + 6 + 6 * n_out + n_out
    np.testing.assert_allclose(net.scores(), dense.scores(), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(net.diagonal(), dense.diagonal(), rtol=1e-10)
    idx = [3, 0, 17]
    np.testing.assert_allclose(net.weighted_columns(idx), dense.weighted_columns(idx), atol=1e-12)
    sizes = [30, 7 * n_out]
    lazy, full = SubnetProblem(net), SubnetProblem(dense, theta=net.theta(), layer_sizes=sizes)
    for name, method in selection_methods().items():
        if "dense" in method.needs:
            continue
        got = select(name, lazy, 8, rng=np.random.default_rng(1))
        ref = select(name, full, 8, rng=np.random.default_rng(1))
        np.testing.assert_array_equal(got, ref, err_msg=name)
    # the streamed Gram of any subset is J_w[:, idx]ᵀ J_w[:, idx]; after Greedy-Laplace
    # (which forms its candidates' Gram) a subset of the candidates is a sub-block of it
    Jw = dense.weighted_columns(idx)
    np.testing.assert_allclose(net.subset_gram(idx), Jw.T @ Jw, rtol=1e-10, atol=1e-13)
    S = select("greedy_laplace", lazy, 8)
    assert len(net._gram[0]) == 16  # the m = 2k candidates' Gram is kept
    Jw = dense.weighted_columns(S)
    np.testing.assert_allclose(net.subset_gram(S), Jw.T @ Jw, rtol=1e-10, atol=1e-13)
    assert len(net._gram[0]) == 16  # S came from the kept Gram
