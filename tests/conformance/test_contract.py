"""The target contract: loading, declaring capabilities, and what breaks it (ERROR, SKIP)."""

from __future__ import annotations

import numpy as np
import pytest

from laplace_lab.conformance import Outcome, Target, build_problem, load_target, validate
from laplace_lab.conformance.adapters import numerics as ours


def _results(target, only):
    return {r.case.name: r for r in validate(target, only=only).results}


def test_load_target_refuses_bad_names():
    with pytest.raises(ValueError, match="target must be MODULE:CALLABLE"):
        load_target("laplace_lab.conformance.adapters.numerics")
    with pytest.raises(ValueError, match="has no attribute 'nothing'"):
        load_target("laplace_lab.conformance.adapters.numerics:nothing")
    with pytest.raises(ValueError, match="cannot import target module"):
        load_target("no.such.module:f")
    with pytest.raises(TypeError, match="target must be a string"):
        load_target(3)


def test_capability_declarations_are_validated():
    def f(*args, **kwargs):
        return None

    f.subset_masks = {"largest_anything": f}
    with pytest.raises(ValueError, match="subset_masks must use names among"):
        Target.from_callable(f)
    f.subset_masks = {}
    f.posterior_samples = "not a function"
    with pytest.raises(TypeError, match="posterior_samples must be callable"):
        Target.from_callable(f)
    with pytest.raises(TypeError, match="target must be callable"):
        Target.from_callable(42)


def test_a_plain_function_passes_and_skips_what_it_does_not_declare():
    def plain(*args, **kwargs):
        return ours.predictive_variance(*args, **kwargs)

    res = _results(plain, ["predictive/mlp-binary", "masks/last_k", "samples/linear-gaussian"])
    assert res["predictive/mlp-binary"].outcome is Outcome.PASS
    assert res["masks/last_k"].outcome is Outcome.SKIP
    assert res["samples/linear-gaussian"].outcome is Outcome.SKIP


def test_an_object_with_methods_is_a_target():
    class Implementation:
        def __call__(self, *args, **kwargs):
            return ours.predictive_variance(*args, **kwargs)

        def log_marginal_likelihood(self, *args, **kwargs):
            return ours.log_marginal_likelihood(*args, **kwargs)

    res = _results(Implementation(), ["evidence/linear-gaussian"])
    assert res["evidence/linear-gaussian"].outcome is Outcome.PASS


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda v: v[:-1], "must have shape (6,)"),
        (lambda v: np.full_like(v, np.nan), "must be finite"),
        (lambda v: np.stack([v, v], axis=1), "must have shape (6,)"),
    ],
)
def test_outputs_outside_the_contract_are_errors_with_the_call(wrong, message):
    def target(*args, **kwargs):
        return wrong(ours.predictive_variance(*args, **kwargs))

    result = _results(target, ["predictive/mlp-regression"])["predictive/mlp-regression"]
    assert result.outcome is Outcome.ERROR and message in result.summary
    assert "got = " not in result.reproducer and "target(problem.model" in result.reproducer


def test_a_target_that_moves_the_map_is_an_error():
    import torch

    def target(model, *args, **kwargs):
        out = ours.predictive_variance(model, *args, **kwargs)
        with torch.no_grad():
            next(model.parameters()).add_(1e-3)
        return out

    result = _results(target, ["predictive/linear-gaussian"])["predictive/linear-gaussian"]
    assert result.outcome is Outcome.ERROR and "changed the model's parameters" in result.summary


def test_an_exception_in_the_target_is_an_error_not_a_crash():
    def target(*args, **kwargs):
        raise RuntimeError("singular matrix")

    result = _results(target, ["predictive/mlp-binary"])["predictive/mlp-binary"]
    assert result.outcome is Outcome.ERROR and result.summary == "RuntimeError: singular matrix"


def test_validate_refuses_bad_arguments():
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        validate(ours.predictive_variance, seed=-1)
    with pytest.raises(TypeError, match="seed must be an integer"):
        validate(ours.predictive_variance, seed=1.5)
    with pytest.raises(ValueError, match="seed must be a non-negative integer; got seed=-1"):
        build_problem("linear-gaussian", seed=-1)
    with pytest.raises(ValueError, match="case must be one of"):
        validate(ours.predictive_variance, only=["nothing/here"])


def test_a_single_string_selects_one_case_not_its_characters():
    names = _results(ours.predictive_variance, "predictive/linear-gaussian")
    assert list(names) == ["predictive/linear-gaussian"]
