"""The registry of conformance cases: one decorator, one lookup, one result type.

A case checks one capability of a target on one problem against the dense oracle and
returns a :class:`Check`. Shipped cases live in :mod:`laplace_lab.conformance.catalog` (one
module per capability, auto-discovered); a new case is one decorated function::

    from laplace_lab.conformance import Check, conformance_case


    @conformance_case(
        "predictive/my-case",
        capability="predictive_variance",
        problem="mlp-regression",
        description="what it checks",
    )
    def my_case(target, problem, oracle, *, seed):
        ...
        return Check(passed, summary, details, reproducer)

``tests/conformance/test_suite.py`` runs every registered case on laplace-lab's own adapter
and ``tests/conformance/test_injected_bugs.py`` on deliberately wrong targets.
"""

from __future__ import annotations

import enum
import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from laplace_lab._checks import one_of
from laplace_lab.conformance.contract import CAPABILITIES, MASK_METHODS
from laplace_lab.conformance.problems import problem_names

__all__ = [
    "Case",
    "CaseResult",
    "Check",
    "Outcome",
    "cases",
    "conformance_case",
    "get_case",
]


class Outcome(enum.StrEnum):
    """The result of one case on one target."""

    PASS = "PASS"
    FAIL = "FAIL"  # the target disagrees with the oracle beyond the tolerance
    ERROR = "ERROR"  # the target raised, or returned something outside the contract
    NA = "N/A"  # the target declares the capability but not this request (NotOffered)
    SKIP = "SKIP"  # the target does not declare the capability


@dataclass(frozen=True)
class Check:
    """What a case found: pass or fail, one line, numbers, and the call that reproduces it.

    ``reproducer`` holds the lines after ``problem = build_problem(...)`` and ``target``
    are defined (see :func:`laplace_lab.conformance.runner.reproducer`).
    """

    passed: bool
    summary: str
    details: Mapping[str, Any] = field(default_factory=dict)
    reproducer: str = ""


@dataclass(frozen=True)
class Case:
    """A registered conformance case."""

    name: str
    capability: str
    problem: str
    description: str
    run: Callable[..., Check]
    method: str | None = None
    heavy: bool = False


@dataclass(frozen=True)
class CaseResult:
    """One case run on one target."""

    case: Case
    outcome: Outcome
    summary: str
    details: Mapping[str, Any]
    reproducer: str
    seconds: float

    def as_json(self) -> dict[str, Any]:
        """The JSON object of ``conformance.json`` for this result."""
        return {
            "case": self.case.name,
            "capability": self.case.capability,
            "method": self.case.method,
            "problem": self.case.problem,
            "description": self.case.description,
            "outcome": self.outcome.value,
            "summary": self.summary,
            "details": dict(self.details),
            "reproducer": self.reproducer,
            "seconds": round(self.seconds, 3),
        }


_REGISTRY: dict[str, Case] = {}


def conformance_case(
    name: str,
    *,
    capability: str,
    problem: str,
    description: str,
    method: str | None = None,
    heavy: bool = False,
) -> Callable[[Callable[..., Check]], Callable[..., Check]]:
    """Register ``run(target, problem, oracle, *, seed) -> Check`` as the case ``name``.

    A ``heavy`` case (seconds of CPU per library) runs in the scoreboard's regeneration and
    in ``validate`` like any other; the per-library test runs leave it out."""
    one_of(capability, "capability", ("predictive_variance", *CAPABILITIES))
    one_of(problem, "problem", problem_names())
    if method is not None:
        one_of(method, "method", MASK_METHODS)

    def register(fn: Callable[..., Check]) -> Callable[..., Check]:
        old = _REGISTRY.get(name)
        if old is not None and old.run.__qualname__ != fn.__qualname__:
            raise ValueError(f"a different conformance case named {name!r} is registered")
        _REGISTRY[name] = Case(name, capability, problem, description, fn, method, heavy)
        return fn

    return register


def _load_cases() -> None:
    import laplace_lab.conformance.catalog as package

    for info in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{info.name}")


def cases() -> dict[str, Case]:
    """Every registered case by name (the shipped modules are imported first)."""
    _load_cases()
    order = ("predictive_variance", *CAPABILITIES)
    ranked = sorted(_REGISTRY.values(), key=lambda c: order.index(c.capability))
    return {c.name: c for c in ranked}


def get_case(name: str) -> Case:
    """The case ``name``, or a ValueError listing the registered names."""
    known = cases()
    one_of(name, "case", list(known))
    return known[name]
