"""posteriors 0.1.3 behind the contract: every case it serves passes except the Kronecker
last-layer ones (it has no KFAC, by design); the ways to get a wrong answer from it — a
batch-mean log-likelihood, its default zero prior, a precision read in ``parameters()`` order
when posteriors ravelled a parameter dict — are caught; the sampler limits the adapter steps
around are asserted as such.

Skipped when posteriors is not installed (``make test`` installs it with the test extra).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

with warnings.catch_warnings():  # tensordict's notices about its dataclass defaults
    warnings.simplefilter("ignore", FutureWarning)
    posteriors = pytest.importorskip("posteriors")

import torch
from optree.integrations.torch import tree_ravel

from laplace_lab.conformance import DenseOracle, Outcome, build_problem, cases, validate
from laplace_lab.conformance.adapters import posteriors as adapter
from laplace_lab.conformance.libraries import LIBRARIES

TARGET = "laplace_lab.conformance.adapters.posteriors:predictive_variance"
SERVED = (
    "predictive_variance",
    "diagonal_predictive_variance",
    "posterior_samples",
    "last_layer_predictive_variance",
)


def _kronecker(name: str) -> bool:
    """A last-layer case of the Kronecker structure (posteriors has no KFAC)."""
    return cases()[name].capability == "last_layer_predictive_variance" and name.endswith("-kron")


# one worker validates every installed library once (tests/conformance/conftest.py)
pytestmark = pytest.mark.xdist_group("scoreboard")


@pytest.fixture(scope="module")
def validation(validations):
    return validations["posteriors"]


def test_every_case_it_serves_passes_but_the_kronecker_last_layer(validation):
    outcome = {r.case.name: r.outcome for r in validation.results}
    expected = {
        name: (Outcome.ERROR if _kronecker(name) else Outcome.PASS)
        if case.capability in SERVED
        else Outcome.SKIP
        for name, case in cases().items()
    }
    assert outcome == expected
    errors = [r for r in validation.results if r.outcome is Outcome.ERROR]
    assert all("Kronecker" in r.summary for r in errors)
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
        transform = posteriors.laplace.dense_ggn.build(forward, log_likelihood, init_prec)
        state, _ = transform.update(transform.init(params), (problem.X_train, problem.y_train))
    return state


def test_the_default_prior_is_none_and_a_parameter_dict_ravels_in_sorted_key_order():
    p = build_problem("mlp-regression")
    oracle = DenseOracle(p)
    model = p.fresh_model()
    params = {name: t.detach() for name, t in model.named_parameters()}
    model_fn = posteriors.model_to_function(model)
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
    flat = posteriors.laplace.dense_ggn.DenseLaplaceState(theta, omega)
    assert torch.get_default_dtype() == torch.float32
    with pytest.raises(RuntimeError, match="expected scalar type"):
        posteriors.laplace.dense_ggn.sample(flat, torch.Size([3]))
    params = {name: t.detach() for name, t in p.model.named_parameters()}  # weights (8, 3)…
    tree = posteriors.laplace.dense_ggn.DenseLaplaceState(params, omega)
    with adapter._default_dtype(torch.float64), pytest.raises(RuntimeError, match="shape"):
        posteriors.laplace.dense_ggn.sample(tree, torch.Size([3]))
    with adapter._default_dtype(torch.float64):
        draws = posteriors.laplace.dense_ggn.sample(flat, torch.Size([3]))
    assert draws.shape == (3, p.p) and draws.dtype == torch.float64
    assert torch.get_default_dtype() == torch.float32  # restored
