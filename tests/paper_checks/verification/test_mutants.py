"""Mutant machinery: a replacement reaches every binding, is undone, and is measured."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from laplace_lab.numerics import GGN, SubnetProblem, select
from laplace_lab.numerics import selection as selection_module
from laplace_lab.paper_checks.verification.kinds import Setting
from laplace_lab.paper_checks.verification.mutants import Mutant, applied, clear_caches
from laplace_lab.paper_checks.verification.registry import (
    Claim,
    Context,
    Status,
    Verdict,
    claim,
    require,
    run_claim,
    run_mutant,
)
from tests.paper_checks.toy_claims import toy_claims_module


def _wrong_greedy(ggn, k, *, n_candidates=None, scores=None):
    return np.arange(k, dtype=np.int64)  # "Greedy" that ignores Ω


def _problem() -> SubnetProblem:
    J = np.random.default_rng(0).standard_normal((5, 12)) * np.arange(1, 13)
    return SubnetProblem(GGN.regression(J, noise_var=1.0, prior_precision=1.0))


def test_a_replaced_function_reaches_every_binding_and_is_restored():
    from laplace_lab import numerics

    original = numerics.greedy_laplace
    truth = select("greedy_laplace", _problem(), 3)
    mutant = Mutant("greedy-ignores-omega", "returns 0..k-1", {original: _wrong_greedy})
    with applied(mutant):
        assert numerics.greedy_laplace is _wrong_greedy  # re-exported name
        assert selection_module.greedy_laplace is _wrong_greedy  # defining module
        np.testing.assert_array_equal(select("greedy_laplace", _problem(), 3), [0, 1, 2])
    assert numerics.greedy_laplace is original
    np.testing.assert_array_equal(select("greedy_laplace", _problem(), 3), truth)


def test_attribute_and_unbound_targets():
    class Owner:
        VALUE = 1.0

    owner = Owner
    with applied(Mutant("value", "a wrong constant", {(owner, "VALUE"): 3.0})):
        assert owner.VALUE == 3.0
    assert owner.VALUE == 1.0
    with pytest.raises(ValueError, match="bound nowhere"):
        with applied(Mutant("nowhere", "an unused function", {lambda: 0: lambda: 1})):
            pass


TOY = """
import functools

import numpy as np

from laplace_lab.paper_checks.verification.registry import Status, Verdict

CALLS = []


@functools.cache
def expensive(seed):  # a cached helper, as the paper packages have
    CALLS.append(seed)
    return np.sqrt(2.0)


def check(ctx):
    ok = abs(expensive(ctx.seed) ** 2 - 2.0) < 1e-12
    return Verdict(Status.CONFIRMED if ok else Status.REFUTED, measured=expensive(ctx.seed))
"""


def test_run_mutant_measures_power_and_clears_caches():
    with toy_claims_module("_toy_claims", TOY) as module:
        item = Claim("toy", "sqrt-two", "here", "√2² = 2", Status.CONFIRMED, module.check)
        cbrt = functools.cache(lambda seed: 2 ** (1 / 3))
        strong = Mutant("cbrt", "the cube root for the square root", {module.expensive: cbrt})
        weak = Mutant("same", "an equal function", {module.expensive: lambda seed: np.sqrt(2.0)})
        original = module.expensive
        assert run_claim(item, Context()).status is Status.CONFIRMED
        outcome = run_mutant(item, strong, Context())
        assert outcome.caught and outcome.status is Status.REFUTED
        assert not run_mutant(item, weak, Context()).caught  # a mutant that changes nothing
        assert module.expensive is original
        module.CALLS.clear()
        run_claim(item, Context())
        run_claim(item, Context())
        assert module.CALLS == [0]  # cached within a run ...
        clear_caches()
        run_claim(item, Context())
        assert module.CALLS == [0, 0]  # ... and cleared between runs


def test_declaring_mutants_is_validated_and_implementation_failures_are_errors():
    m = Mutant("x", "y", {(Status, "CONFIRMED"): 2}, expect=Status.CONFIRMED)
    with pytest.raises(ValueError, match="another verdict"):
        claim(
            paper="toy",
            name="t",
            location="l",
            statement="s",
            kind="exact",
            setting=Setting.paper(),
            mutants=(m,),
        )(lambda c: None)
    with pytest.raises(ValueError, match="at least one"):
        Mutant("empty", "nothing replaced", {})

    def broken(ctx):
        require(False, "fast greedy differs from the literal Algorithm 2 at k=3")
        return Verdict(Status.CONFIRMED)

    v = run_claim(Claim("toy", "b", "l", "s", Status.CONFIRMED, broken), Context())
    assert v.status is Status.ERROR
    assert v.evidence.startswith("Our implementation failed a self-check: fast greedy")


REGISTRY_MODULE = """
import dataclasses


@dataclasses.dataclass(frozen=True)
class Entry:
    first: object
    second: object


def f():
    return "f"


def g():
    return "g"


TABLE = {"both": Entry(f, g), "twice": Entry(f, f)}
"""


def test_two_replacements_in_one_registry_entry_both_apply_and_both_undo():
    with toy_claims_module("_toy_registry", REGISTRY_MODULE) as module:
        import laplace_lab

        laplace_lab._toy_registry = module  # a module of laplace_lab, as registries are
        try:
            both, twice = module.TABLE["both"], module.TABLE["twice"]
            wrong = Mutant("m", "d", {module.f: lambda: "F", module.g: lambda: "G"})
            with applied(wrong, module):
                entry = module.TABLE["both"]
                assert (entry.first(), entry.second()) == ("F", "G")
                entry = module.TABLE["twice"]
                assert (entry.first(), entry.second()) == ("F", "F")
            assert module.TABLE["both"] is both and module.TABLE["twice"] is twice
        finally:
            del laplace_lab._toy_registry


def test_a_classmethod_target_is_restored_as_the_classmethod():
    class Base:
        @classmethod
        def make(cls):
            return cls.__name__

    class Sub(Base):
        pass

    with applied(Mutant("m", "d", {(Base, "make"): classmethod(lambda cls: "wrong")})):
        assert Sub.make() == "wrong"
    assert isinstance(vars(Base)["make"], classmethod)
    assert Sub.make() == "Sub"  # not a method bound to Base


LATE = """
from laplace_lab.numerics.selection import greedy_laplace as bound_at_import
"""


def test_a_module_first_imported_under_the_mutant_is_restored_too():
    from laplace_lab.numerics import selection
    from laplace_lab.paper_checks.verification.cache import _SCOPE

    original = selection.greedy_laplace
    mutant = applied(Mutant("m", "d", {original: _wrong_greedy}))
    mutant.__enter__()
    try:
        with toy_claims_module("_toy_late", LATE) as late:  # imported under the mutant
            assert late.bound_at_import is _wrong_greedy
            with _SCOPE[-1].suspended():  # the true code, as a reused helper runs it
                assert late.bound_at_import is original
            assert late.bound_at_import is _wrong_greedy
            mutant.__exit__(None, None, None)
            mutant = None
            assert late.bound_at_import is original
    finally:
        if mutant is not None:
            mutant.__exit__(None, None, None)


def test_an_attribute_of_an_object_with_slots_is_set_back_not_deleted():
    class Slotted:
        __slots__ = ("value",)

        def __init__(self):
            self.value = 1.0

    owner = Slotted()
    with applied(Mutant("m", "d", {(owner, "value"): 3.0})):
        assert owner.value == 3.0
    assert owner.value == 1.0
