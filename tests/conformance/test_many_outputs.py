"""The many-outputs family: the streamed oracle, the memory-budgeted case, its mutant."""

from __future__ import annotations

import numpy as np
import pytest

from laplace_lab.conformance.oracle import DenseOracle, StreamedOracle
from laplace_lab.conformance.problems import Problem, _mlp_problem

torch = pytest.importorskip("torch")


def _five_class_problem() -> Problem:
    """A tanh MLP 3-8-5 at its MAP under a diagonal prior (p = 77, N = 16)."""
    spec = _mlp_problem(np.random.default_rng(5), "multiclass", classes=5, prior="diagonal")
    spec.pop("prior_mean")
    X, Xs = (torch.as_tensor(spec.pop(k)) for k in ("X_train", "X_test"))
    y = torch.as_tensor(spec.pop("y_train"), dtype=torch.int64)
    return Problem(name="five-classes", seed=5, X_train=X, X_test=Xs, y_train=y, **spec)


def test_the_streamed_oracle_is_the_dense_oracle_on_five_classes():
    problem = _five_class_problem()
    dense, streamed = DenseOracle(problem), StreamedOracle(problem)
    assert dense.G.shape[1] == 5
    scale = np.max(np.abs(dense.omega))
    assert np.max(np.abs(streamed.omega - dense.omega)) <= 1e-12 * scale
    v, ref = streamed.predictive_variance(), dense.predictive_variance()
    assert v.shape == (6, 5)
    assert np.max(np.abs(v - ref) / ref) <= 1e-12
    tol, ref_tol = streamed.variance_tolerance(), dense.variance_tolerance()
    assert np.max(np.abs(tol - ref_tol) / ref_tol) <= 1e-8  # ‖Ω‖₂ by Lanczos to 1e-10


def test_the_streamed_oracle_refuses_other_likelihoods():
    from laplace_lab.conformance import build_problem

    with pytest.raises(ValueError, match="multiclass"):
        StreamedOracle(build_problem("mlp-binary"))


@pytest.mark.parametrize("name", ["mlp-regression", "mlp-binary", "mlp-multiclass"])
def test_the_streamed_adapter_route_is_the_dense_oracle(name):
    from laplace_lab.conformance import build_problem
    from laplace_lab.conformance.adapters._streamed import streamed_variance

    problem = build_problem(name, seed=0)
    v = streamed_variance(
        problem.fresh_model(),
        problem.X_train,
        problem.X_test,
        likelihood=problem.likelihood,
        prior_vector=problem.prior_vector(),
        noise_var=problem.noise_var,
    )
    oracle = DenseOracle(problem)
    assert v.shape == oracle.predictive_variance().shape
    assert np.all(np.abs(v - oracle.predictive_variance()) <= oracle.variance_tolerance())


MUTANTS = "tests.conformance.mutant_targets"


def test_the_fresh_process_measures_the_memory_a_call_adds():
    from laplace_lab.conformance import build_problem
    from laplace_lab.conformance.catalog.many_outputs import run_in_fresh_process

    got = run_in_fresh_process(f"{MUTANTS}:holding_256_mib", "linear-gaussian-spectrum", 0)
    assert got["outcome"] == "answer"
    added = got["peak"] - got["before"]
    # the 256 MiB held (less what the warm-up had freed below the peak), and little else
    assert 250 << 20 <= added <= 320 << 20
    oracle = DenseOracle(build_problem("linear-gaussian-spectrum", seed=0))
    err = np.abs(got["answer"] - oracle.predictive_variance())
    assert np.all(err <= oracle.variance_tolerance())


def test_a_refusal_naming_the_size_is_not_offered():
    from laplace_lab.conformance import Outcome, validate

    (result,) = validate(
        f"{MUTANTS}:refusing_large_jacobians", only=["many-outputs/mlp-multiclass-1000"]
    ).results
    assert result.outcome is Outcome.NA, result.summary
    assert "40·1000 × 3008 float64 would take 0.96 GB" in result.summary


@pytest.mark.slow
def test_the_full_training_jacobian_fails_the_case_for_its_memory_alone():
    from laplace_lab.conformance import Outcome, validate

    (result,) = validate(
        f"{MUTANTS}:full_training_jacobian", only=["many-outputs/mlp-multiclass-1000"]
    ).results
    assert result.outcome is Outcome.FAIL, result.summary
    d = result.details
    assert d["max_error_over_tolerance"] <= 1.0  # the variances are right
    assert d["peak_added_bytes"] >= 40 * 1000 * 3008 * 8 > d["budget_bytes"]
    assert "over the budget" in result.summary


#: Each library's outcome on the case, and the finding that explains a FAIL.
RECORDED = {
    "laplace-lab": ("PASS", None),
    "laplax": ("PASS", None),
    "curvlinops": ("PASS", None),  # the adapter multiplies blocks of 64 columns
    "laplace-torch": ("FAIL", "laplace-torch F9"),
    "posteriors": ("FAIL", "posteriors F2"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(RECORDED))
def test_each_library_gets_its_recorded_outcome(name):
    from laplace_lab.conformance import validate
    from laplace_lab.conformance.libraries import LIBRARIES

    library = LIBRARIES[name]
    if not library.installed():
        pytest.skip(f"{name} is not installed")
    (result,) = validate(library.target, only=["many-outputs/"]).results
    outcome, finding = RECORDED[name]
    assert result.outcome.value == outcome, result.summary
    if finding is not None:
        assert library.finding(result.case.name).id == finding
    over = result.details["peak_added_bytes"] > result.details["budget_bytes"]
    assert over == (outcome == "FAIL")
