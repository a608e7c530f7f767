"""Cached experiments: true and mutant results apart, reuse only where a mutant names it."""

from __future__ import annotations

import pytest

from laplace_lab.paper_checks.verification.cache import cached, mutant_scope
from laplace_lab.paper_checks.verification.mutants import Mutant, applied
from laplace_lab.paper_checks.verification.registry import (
    Claim,
    Context,
    Status,
    Verdict,
    run_mutant,
)
from tests.paper_checks.toy_claims import toy_claims_module


def _counting(value):
    calls = []

    def experiment(seed, *, scale=1.0):
        calls.append((seed, scale))
        return value() * scale

    return experiment, calls


def test_a_mutant_neither_reuses_nor_poisons_the_true_results():
    state = {"value": 2.0}
    fn, calls = _counting(lambda: state["value"])
    helper = cached(fn)
    assert helper(0) == 2.0 and helper(0) == 2.0 and calls == [(0, 1.0)]
    state["value"] = 5.0  # what a mutant would change
    with mutant_scope():
        assert helper(0) == 5.0  # recomputed under the mutant, not the true result
        assert helper(0) == 5.0 and len(calls) == 2  # cached within the mutant's run
    state["value"] = 2.0
    assert helper(0) == 2.0 and len(calls) == 2  # the true result survived, unpoisoned
    with mutant_scope():
        helper(0)
    assert len(calls) == 3  # the mutant's own results were dropped after its run


def test_a_mutant_reuses_the_true_results_of_the_helpers_it_names():
    fn, calls = _counting(lambda: 1.0)
    helper = cached(fn)
    helper(3, scale=2.0)
    with mutant_scope(frozenset({helper})):
        assert helper(3, scale=2.0) == 2.0 and len(calls) == 1  # the true result
        assert helper(4) == 1.0 and len(calls) == 2  # none for these arguments: computed ...
    helper(4)
    assert len(calls) == 2  # ... by the true code (nothing to suspend here), kept as true


SUSPENDED = """
from laplace_lab.paper_checks.verification.cache import cached

CALLS = []


def weight():
    return 1.0


@cached
def train(seed):
    CALLS.append(seed)
    return weight() * seed


@cached
def score(seed):
    return weight() * train(seed)
"""


def test_a_reused_result_the_true_run_lacks_is_computed_by_the_true_code_and_kept():
    with toy_claims_module("_toy_suspended", SUSPENDED) as module:
        mutant = Mutant(
            "heavy", "weights of 7", {(module, "weight"): lambda: 7.0}, reuses=(module.train,)
        )
        with applied(mutant):
            assert module.weight() == 7.0
            # train(2) was never run by the true code: it runs now with the mutant undone ...
            assert module.train(2) == 2.0 and module.CALLS == [2]
            assert module.weight() == 7.0  # ... and the mutant is back in place after it
            assert module.score(3) == 7.0 * 3.0  # a helper it does not reuse: the mutant's
            assert module.CALLS == [2, 3]
        assert module.weight() == 1.0
        assert module.train(2) == 2.0 and module.CALLS == [2, 3]  # kept as a true result
        assert module.score(3) == 3.0 and module.CALLS == [2, 3]  # score's mutant one dropped


def test_a_failure_inside_the_suspended_true_code_leaves_the_mutant_applied():
    with toy_claims_module("_toy_suspended_failure", SUSPENDED) as module:
        mutant = Mutant(
            "heavy", "weights of 7", {(module, "weight"): lambda: 7.0}, reuses=(module.train,)
        )
        with applied(mutant):
            with pytest.raises(TypeError):
                module.train("x")
            assert module.weight() == 7.0
        assert module.weight() == 1.0


def test_maxsize_keeps_the_most_recently_used_true_results():
    fn, calls = _counting(lambda: 1.0)
    helper = cached(maxsize=2)(fn)
    for seed in (0, 1, 0, 2):  # 1 is the least recently used when 2 arrives
        helper(seed)
    helper(0)
    helper(1)
    assert [c[0] for c in calls] == [0, 1, 2, 1]
    helper.cache_clear()
    helper(0)
    assert len(calls) == 5
    with pytest.raises(ValueError, match="maxsize"):
        cached(maxsize=0)(fn)


def test_a_cached_experiment_pickles_by_reference_not_with_its_results():
    import pickle

    from laplace_lab.paper_checks.fsp_laplace import _synthetic

    assert pickle.loads(pickle.dumps(_synthetic.fit_fsp)) is _synthetic.fit_fsp


def test_reuses_must_name_cached_helpers():
    with pytest.raises(TypeError, match="reuses must name @cached helpers; got 'len'"):
        Mutant("m", "d", {(Status, "X"): 1}, reuses=(len,))


TOY = """
from laplace_lab.paper_checks.verification.cache import cached
from laplace_lab.paper_checks.verification.registry import Status, Verdict

TRAINED = []
THRESHOLD = 0.5


@cached
def train(seed):  # an expensive experiment the claims share
    TRAINED.append(seed)
    return 0.9


def check(ctx):
    ok = train(ctx.seed) > THRESHOLD
    return Verdict(Status.CONFIRMED if ok else Status.REFUTED, measured=train(ctx.seed))
"""


def test_a_threshold_mutant_that_reuses_the_training_is_caught_without_retraining():
    with toy_claims_module("_toy_cached_claims", TOY) as module:
        item = Claim("toy", "trained", "here", "0.9 > 0.5", Status.CONFIRMED, module.check)
        threshold = (module, "THRESHOLD")
        ctx = Context()
        assert module.check(ctx).status is Status.CONFIRMED
        reusing = Mutant("high-bar", "threshold 0.95", {threshold: 0.95}, reuses=(module.train,))
        assert run_mutant(item, reusing, ctx).caught
        assert module.TRAINED == [0]  # the true training was reused
        retraining = Mutant("high-bar-retrained", "threshold 0.95", {threshold: 0.95})
        assert run_mutant(item, retraining, ctx).caught
        assert module.TRAINED == [0, 0]  # trained again under the mutant, apart
        assert isinstance(module.check(ctx), Verdict)
        assert module.TRAINED == [0, 0]  # and the true result is still there


def test_one_result_for_the_ways_of_passing_the_same_arguments():
    fn, calls = _counting(lambda: 1.0)
    helper = cached(fn)
    helper(3)
    helper(3, scale=1.0)
    helper(seed=3)
    helper(seed=3, scale=1.0)
    assert calls == [(3, 1.0)]
    helper(3, scale=2.0)
    assert calls == [(3, 1.0), (3, 2.0)]
    with pytest.raises(TypeError):
        helper(3, nonsense=1)
