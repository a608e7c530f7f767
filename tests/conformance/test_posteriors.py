"""posteriors 0.1.3 behind the contract: every case it serves passes, the empirical-Fisher
ones included, except the Kronecker last-layer ones, N/A (not offered: it has no KFAC); the ways to
get a wrong answer from it — a batch-mean log-likelihood for the GGN, its default zero prior,
a precision read in ``parameters()`` order when posteriors ravelled a parameter dict, a log
posterior (prior gradient in every g_n) handed to its empirical Fisher — are caught; the
sampler limits the adapter steps around are asserted as such.

Skipped when posteriors is not installed (``make test`` installs it with the test extra).
"""

from __future__ import annotations

import functools
import importlib.util
import warnings
from typing import Any

import numpy as np
import pytest

if importlib.util.find_spec("posteriors") is None:
    pytest.skip("posteriors is not installed", allow_module_level=True)

import torch
from optree.integrations.torch import tree_ravel

from laplace_lab.conformance import DenseOracle, Outcome, build_problem, cases, validate
from laplace_lab.conformance.adapters import posteriors as adapter
from laplace_lab.conformance.libraries import LIBRARIES

TARGET = "laplace_lab.conformance.adapters.posteriors:predictive_variance"
#: The cases of the per-library runs (the heavy ones only run in the scoreboard's
#: regeneration).
LIGHT = {n: c for n, c in cases().items() if not c.heavy}
SERVED = (
    "predictive_variance",
    "diagonal_predictive_variance",
    "posterior_samples",
    "last_layer_predictive_variance",
    "ef_predictive_variance",
    "hessian_predictive_variance",
)


def _kronecker(name: str) -> bool:
    """A last-layer case of the Kronecker structure (posteriors has no KFAC)."""
    return cases()[name].capability == "last_layer_predictive_variance" and name.endswith("-kron")


# one worker validates every installed library once (tests/conformance/conftest.py)
pytestmark = pytest.mark.xdist_group("scoreboard")


@functools.cache
def _posteriors() -> Any:
    """posteriors, imported by the worker that runs these tests (not by every worker that
    collects them: the import takes 1.5 s)."""
    with warnings.catch_warnings():  # tensordict's notices about its dataclass defaults
        warnings.simplefilter("ignore", FutureWarning)
        import posteriors
    return posteriors


@pytest.fixture(scope="module")
def validation(validations):
    return validations["posteriors"]


def test_every_case_it_serves_passes_but_the_kronecker_last_layer(validation):
    outcome = {r.case.name: r.outcome for r in validation.results}
    expected = {
        name: (Outcome.NA if _kronecker(name) else Outcome.PASS)
        if case.capability in SERVED
        else Outcome.SKIP
        for name, case in LIGHT.items()
    }
    assert outcome == expected
    errors = [r for r in validation.results if r.outcome is Outcome.NA]
    assert errors and all(r.summary.startswith("not offered by posteriors") for r in errors)
    library = LIBRARIES["posteriors"]
    assert [r.case.name for r in errors if library.finding(r.case.name) is None] == []
    ratios = {
        r.case.name: r.details["max_error_over_tolerance"]
        for r in validation.results
        if "max_error_over_tolerance" in r.details
    }
    print(f"posteriors: max error/tolerance {max(ratios.values()):.3g} over {len(ratios)} cases")
    assert max(ratios.values()) < 0.05, ratios
    samples = [r.details for r in validation.results if "p_mean" in r.details]
    assert samples and all(min(d["p_mean"], d["p_covariance"]) > 1e-3 for d in samples)


def test_a_batch_mean_log_likelihood_is_caught(monkeypatch):
    # posteriors adds the GGN of the log-likelihood it is given: the mean over the batch (as
    # torch's losses reduce by default) divides Ω's GGN part by N = 16
    summed = adapter._log_likelihood

    def mean(likelihood, noise_var):
        total = summed(likelihood, noise_var)
        return lambda z, batch: total(z, batch) / z.shape[0]

    monkeypatch.setattr(adapter, "_log_likelihood", mean)
    wrong = validate(TARGET, only=["predictive/mlp-multiclass", "diagonal/mlp-regression"])
    assert {r.outcome for r in wrong.results} == {Outcome.FAIL}
    assert min(r.details["max_error_over_tolerance"] for r in wrong.results) > 1e3


def _dense_ggn_state(problem, params, forward, init_prec=0.0):
    log_likelihood = adapter._log_likelihood(problem.likelihood, problem.noise_var)
    with adapter._default_dtype(torch.float64):
        transform = _posteriors().laplace.dense_ggn.build(forward, log_likelihood, init_prec)
        state, _ = transform.update(transform.init(params), (problem.X_train, problem.y_train))
    return state


def test_the_default_prior_is_none_and_a_parameter_dict_ravels_in_sorted_key_order():
    p = build_problem("mlp-regression")
    oracle = DenseOracle(p)
    model = p.fresh_model()
    params = {name: t.detach() for name, t in model.named_parameters()}
    model_fn = _posteriors().model_to_function(model)
    state = _dense_ggn_state(p, params, lambda prm, b: (model_fn(prm, b[0]), torch.tensor([])))
    # optree sorts the keys ("0.bias" before "0.weight"): positions in parameters() order
    start, positions = 0, {}
    for name, t in params.items():
        positions[name] = torch.arange(start, start + t.numel(), dtype=torch.float64)
        start += t.numel()
    order = tree_ravel({k: v.reshape(params[k].shape) for k, v in positions.items()})[0]
    order = order.long().numpy()
    assert list(order[:8]) == list(range(24, 32))  # the first layer's 8 biases come first
    prec = state.prec.double().numpy()
    scale = np.abs(oracle.ggn).max()
    np.testing.assert_allclose(prec, oracle.ggn[np.ix_(order, order)], atol=1e-12 * scale)
    assert np.abs(prec - oracle.ggn).max() > 0.1 * scale  # not in parameters() order
    # with the default init_prec = 0 the precision is the bare GGN, of rank ≤ N = 16 < p = 41
    assert np.linalg.matrix_rank(prec) <= p.X_train.shape[0] < p.p


def test_the_dense_sampler_needs_the_default_dtype_and_one_dimensional_leaves():
    # dense_ggn.sample draws around torch.zeros(p) of the default dtype and reshapes each leaf
    # to (n, last axis): a float64 state under the default float32, and a matrix-shaped
    # weight, raise; the adapter samples the flat θ_S under the model's default dtype
    p = build_problem("mlp-regression")
    theta = torch.nn.utils.parameters_to_vector(p.model.parameters()).detach()
    omega = torch.as_tensor(DenseOracle(p).omega)
    flat = _posteriors().laplace.dense_ggn.DenseLaplaceState(theta, omega)
    assert torch.get_default_dtype() == torch.float32
    with pytest.raises(RuntimeError, match="expected scalar type"):
        _posteriors().laplace.dense_ggn.sample(flat, torch.Size([3]))
    params = {name: t.detach() for name, t in p.model.named_parameters()}  # weights (8, 3)…
    tree = _posteriors().laplace.dense_ggn.DenseLaplaceState(params, omega)
    with adapter._default_dtype(torch.float64), pytest.raises(RuntimeError, match="shape"):
        _posteriors().laplace.dense_ggn.sample(tree, torch.Size([3]))
    with adapter._default_dtype(torch.float64):
        draws = _posteriors().laplace.dense_ggn.sample(flat, torch.Size([3]))
    assert draws.shape == (3, p.p) and draws.dtype == torch.float64
    assert torch.get_default_dtype() == torch.float32  # restored


def test_every_empirical_fisher_case_passes_in_both_structures(validation):
    ef = {n for n, c in cases().items() if c.capability == "ef_predictive_variance"}
    results = {r.case.name: r for r in validation.results if r.case.name in ef}
    assert set(results) == ef
    assert {n.rsplit("-", 1)[1] for n in ef} == {"full", "diag"}
    assert {r.outcome for r in results.values()} == {Outcome.PASS}
    # float64 agrees to rounding: ≤ 1e-2 of the tolerance (≈ 2.5e-3 measured, seed 0)
    assert max(r.details["max_error_over_tolerance"] for r in results.values()) < 1e-2


def _fisher_precision(problem, log_density, per_sample, init_prec=0.0):
    """``laplace.dense_fisher``'s precision on the flat θ̂ with ``log_density(z, θ, batch)``."""
    forward, theta = adapter._forward(problem.model, np.arange(problem.p))

    def log_posterior(t, batch):
        z, aux = forward(t, batch)
        return log_density(z, t, batch), aux

    with adapter._default_dtype(torch.float64):
        transform = _posteriors().laplace.dense_fisher.build(log_posterior, per_sample, init_prec)
        state, _ = transform.update(transform.init(theta), (problem.X_train, problem.y_train))
    return state.prec.numpy()


@pytest.fixture(scope="module")
def binary():
    p = build_problem("mlp-binary", seed=0)
    return p, DenseOracle(p), adapter._log_likelihoods(p.likelihood, p.noise_var)


def test_a_batch_mean_log_likelihood_is_harmless_for_the_fisher_and_the_prior_is_not_in_it(
    binary,
):
    # per_sample=False vmaps the function over batches of one row, where mean = sum: unlike
    # the GGN's, a mean log-likelihood gives the summed EF; with the default init_prec = 0
    # the precision is that bare EF, of rank ≤ N = 16 < p = 41
    p, oracle, log_likelihoods = binary
    ef = oracle.empirical_fisher  # from the oracle's Jacobians and residuals
    prec = _fisher_precision(p, lambda z, t, b: log_likelihoods(z, b).mean(), per_sample=False)
    np.testing.assert_allclose(prec, ef, rtol=0, atol=1e-13 * np.abs(ef).max())
    assert np.linalg.matrix_rank(prec) <= p.X_train.shape[0] < p.p


@pytest.mark.parametrize("c", ["1/N", "1"])
def test_a_log_posterior_puts_the_prior_gradient_into_every_sample_gradient(binary, c):
    # posteriors' README writes log p(θ)/N beside the batch-mean log-likelihood (c = 1/N); its
    # docstring's joint log p(y_n, θ | x_n) is c = 1. Per sample ∇ℓ_n = −(g_n + c·Vθ̂), so
    # P = Σ_n (g_n + c·Vθ̂)(g_n + c·Vθ̂)ᵀ + V; at the MAP (Σ g_n = −Vθ̂) with c = 1/N that is
    # EF − (Vθ̂)(Vθ̂)ᵀ/N, the gradients' scatter about their mean
    p, oracle, log_likelihoods = binary
    N = p.X_train.shape[0]
    scale = 1.0 / N if c == "1/N" else 1.0
    V = torch.as_tensor(oracle.V)

    def log_posterior(z, t, batch):
        return log_likelihoods(z, batch).mean() - 0.5 * scale * (V * t * t).sum()

    prec = _fisher_precision(p, log_posterior, per_sample=False, init_prec=torch.diag(V))
    b = oracle.V * oracle.theta
    shifted = oracle.gradients + scale * b
    expected = shifted.T @ shifted + np.diag(oracle.V)
    np.testing.assert_allclose(prec, expected, rtol=0, atol=1e-13 * np.abs(expected).max())
    if c == "1/N":
        centred = oracle.gradients - oracle.gradients.mean(0)
        scatter = centred.T @ centred + np.diag(oracle.V)
        np.testing.assert_allclose(prec, scatter, rtol=0, atol=1e-6 * np.abs(scatter).max())
    G = oracle.G.reshape(-1, p.p)
    got = np.sum(np.linalg.solve(prec, G.T).T * G, axis=1)
    error = np.abs(got - oracle.ef_variance("full")) / oracle.ef_tolerance("full")
    # 1.4e11–6.3e11 (c = 1/N) and 4.0e11–1.8e12 (c = 1) tolerances measured (seed 0)
    assert error.min() > 1e9


def test_an_unknown_empirical_fisher_structure_is_refused_by_name(binary):
    p = binary[0]
    with pytest.raises(ValueError, match="structure"):
        adapter.ef_predictive_variance(
            p.model,
            p.X_train,
            p.y_train,
            p.X_test,
            likelihood=p.likelihood,
            prior_precision=p.prior_precision,
            noise_var=p.noise_var,
            structure="kron",
        )
