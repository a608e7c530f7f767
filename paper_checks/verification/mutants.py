"""Mutants: deliberately wrong variants of what a claim relies on, to measure its power.

A claim's verdict is only as good as its ability to say "no". Each claim declares mutants —
a named, deliberately wrong variant of a function it relies on (drop σ², drop the
log-determinant, Greedy-Laplace without Schur updates, PV scaled by 3, a reading the paper
rules out, a wrong number in an arithmetic check) — and the verdict the claim must then
give. Running the claim under a mutant that leaves its verdict unchanged exposes a check
that cannot fail.

A mutant replaces objects for the duration of one run:

- ``replace={original_function: wrong_function}`` rebinds every module-level name in
  ``laplace_lab`` (and in the claim's own module) that refers to ``original_function``, and
  swaps every registry entry that holds it (a frozen dataclass in a module-level dict, such
  as a registered selection method), so the author need not know where it was imported or
  registered — and no kernel carries a hook for being tested;
- ``replace={(SomeClass, "method"): wrong_method}`` patches a class attribute;
- ``replace={(module, "CONSTANT"): wrong_value}`` patches a module attribute (a number, a
  table).

The experiments the claims share are :func:`~laplace_lab.paper_checks.verification.cache.cached`:
what they compute under a mutant is kept apart from the true results and dropped after its run, so
a mutant neither reuses nor poisons the results of the true code — except the true results of the
helpers it names in ``reuses`` (those of which the claim uses nothing that the replacement would
change; reuse can only narrow what the mutant changes). Plain ``functools`` caches of the paper
packages (a plugin's) are cleared before and after a mutant run.

A wrong variant that calls the true function must hold it where the mutant does not rebind
it — a default argument, ``def wrong(x, _true=original): return 3 * _true(x)`` — since
every module-level name bound to the original, in any module, is rebound to the variant.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import sys
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from laplace_lab.paper_checks.verification.cache import Cached, mutant_scope

__all__ = ["Mutant", "applied", "clear_caches"]


@dataclass(frozen=True)
class Mutant:
    """A deliberately wrong variant and the verdict it must produce.

    Parameters
    ----------
    name : str
        Short, hyphenated (``"greedy-without-schur"``).
    description : str
        What is wrong, in one sentence.
    replace : mapping
        ``{original: replacement}`` or ``{(owner, attribute): replacement}`` (module
        docstring).
    expect : str
        The verdict (a ``Status`` value) the claim must give under this mutant.
    heavy : bool
        Too slow for the default run: only ``laplace-lab check --mutants all`` and the
        ``slow`` tests run it.
    reuses : tuple of cached helpers
        :func:`~laplace_lab.paper_checks.verification.cache.cached` experiments whose true results
        this mutant may reuse: the claim uses nothing of them that the replacement would change.
    """

    name: str
    description: str
    replace: Mapping[Any, Any] = field(default_factory=dict)
    expect: str = "REFUTED"
    heavy: bool = False
    reuses: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            raise ValueError(f"name must be a non-empty string; got {self.name!r}")
        if not self.replace:
            raise ValueError(f"mutant {self.name!r} must replace at least one object")
        reuses = tuple(self.reuses)
        for helper in reuses:
            if not isinstance(helper, Cached):
                name = getattr(helper, "__qualname__", helper)
                raise TypeError(f"reuses must name @cached helpers; got {name!r}")
        object.__setattr__(self, "reuses", reuses)
        object.__setattr__(self, "expect", str(getattr(self.expect, "value", self.expect)))


def _modules() -> list[types.ModuleType]:
    return [
        m
        for name, m in list(sys.modules.items())
        if isinstance(m, types.ModuleType) and name.split(".")[0] == "laplace_lab"
    ]


def _bindings(original: Any, extra: tuple[types.ModuleType, ...]) -> list[tuple[Any, str]]:
    """Every (module, name) whose value is ``original``."""
    out = []
    for module in {id(m): m for m in (*_modules(), *extra)}.values():
        for name, value in list(vars(module).items()):
            if value is original:
                out.append((module, name))
    return out


def _entries(original: Any) -> list[tuple[dict, Any, str]]:
    """Every (registry, key, field) of a module-level dict of ``laplace_lab`` whose entry is a
    dataclass holding ``original`` in ``field``."""
    out = []
    for module in _modules():
        for value in list(vars(module).values()):
            if not isinstance(value, dict):
                continue
            for key, entry in list(value.items()):
                if not dataclasses.is_dataclass(entry) or isinstance(entry, type):
                    continue
                for f in dataclasses.fields(entry):
                    if getattr(entry, f.name, None) is original:
                        out.append((value, key, f.name))
    return out


def _entry_swaps(original: Any, new: Any) -> list[tuple[Callable[[], None], Callable[[], None]]]:
    """(apply, undo) for every registry entry holding ``original``: it holds ``new`` once
    applied."""
    swaps = []
    for registry, key, name in _entries(original):
        saved = registry[key]
        swaps.append(
            (
                functools.partial(
                    registry.__setitem__, key, dataclasses.replace(saved, **{name: new})
                ),
                functools.partial(registry.__setitem__, key, saved),
            )
        )
    return swaps


def _swaps(mutant: Mutant, extra: tuple[types.ModuleType, ...]):
    """(apply, undo) for every replacement of ``mutant``, in the order they are applied."""
    swaps: list[tuple[Callable[[], None], Callable[[], None]]] = []
    for target, new in mutant.replace.items():
        if isinstance(target, tuple):
            owner, attr = target
            old = getattr(owner, attr)
            swaps.append(
                (
                    functools.partial(setattr, owner, attr, new),
                    functools.partial(setattr, owner, attr, old),
                )
            )
            continue
        sites = _bindings(target, extra)
        entries = _entry_swaps(target, new)
        if not sites and not entries:
            raise ValueError(
                f"mutant {mutant.name!r}: {getattr(target, '__qualname__', target)!r} "
                "is bound nowhere in laplace_lab"
            )
        swaps.extend(entries)
        for module, name in sites:
            swaps.append(
                (
                    functools.partial(setattr, module, name, new),
                    functools.partial(setattr, module, name, target),
                )
            )
    return swaps


@contextlib.contextmanager
def applied(mutant: Mutant, *extra_modules: types.ModuleType) -> Iterator[None]:
    """Apply ``mutant`` inside the block; everything is restored on exit.

    Inside the block, a cached helper that the mutant ``reuses`` computes a result the true
    run has not with the replacements undone (the true code), and keeps it as a true result.
    """
    swaps = _swaps(mutant, extra_modules)
    done: list[Callable[[], None]] = []

    def undo() -> None:
        while done:
            done.pop()()

    def apply() -> None:
        for do, back in swaps:
            do()
            done.append(back)

    @contextlib.contextmanager
    def suspended() -> Iterator[None]:
        # plain functools caches may hold what the mutant computed: never the true code's
        clear_caches()
        undo()
        try:
            yield
        finally:
            clear_caches()
            apply()

    with mutant_scope(frozenset(mutant.reuses), suspended):
        try:
            apply()
            yield
        finally:
            undo()


def clear_caches() -> None:
    """Clear the plain ``functools`` caches of the paper packages (a plugin's), whose results
    a mutant could otherwise reuse or poison; ``@cached`` experiments keep theirs apart."""
    for module in _modules():
        if not module.__name__.startswith("laplace_lab.paper_checks"):
            continue
        for value in list(vars(module).values()):
            if isinstance(value, Cached | type):
                continue
            if callable(getattr(value, "cache_clear", None)):
                value.cache_clear()
