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
import sys
import types
from collections.abc import Iterator, Mapping
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


_MISSING = object()


def _raw(owner: Any, attr: str) -> Any:
    """``owner``'s own value of ``attr`` as stored (a classmethod as the descriptor, not bound
    to the class), or :data:`_MISSING` where it is inherited."""
    if not hasattr(owner, "__dict__"):  # slots: the value itself, set back as it was
        return getattr(owner, attr)
    return vars(owner).get(attr, _MISSING)


def _put(owner: Any, attr: str, raw: Any) -> None:
    if raw is _MISSING:
        delattr(owner, attr)
    else:
        setattr(owner, attr, raw)


class _Replacements:
    """Apply and undo one mutant's replacements, as often as the cache suspends it.

    Function targets are looked up afresh at every apply and undo, so that a module of
    ``laplace_lab`` first imported while the mutant is applied (binding the replacement) is
    also restored; the bindings of a replacement that existed before the mutant (its own
    module's) are left alone. Registry entries get every field of one entry replaced in one
    ``dataclasses.replace`` (several replacements may hit one entry).
    """

    def __init__(self, mutant: Mutant, extra: tuple[types.ModuleType, ...]) -> None:
        self.extra = extra
        self.attributes = {t: n for t, n in mutant.replace.items() if isinstance(t, tuple)}
        self.functions = {t: n for t, n in mutant.replace.items() if not isinstance(t, tuple)}
        for target in self.functions:
            if not _bindings(target, extra) and not _entries(target):
                raise ValueError(
                    f"mutant {mutant.name!r}: {getattr(target, '__qualname__', target)!r} "
                    "is bound nowhere in laplace_lab"
                )
        self.saved = {(owner, attr): _raw(owner, attr) for owner, attr in self.attributes}
        # where a replacement is bound before the mutant: never "restored" to the target
        self.own = {
            id(new): set(_sites(new, extra)) | set(_entry_keys(new))
            for new in self.functions.values()
        }
        self.entries: dict[tuple[int, Any], tuple[dict, Any, Any]] = {}

    def apply(self) -> None:
        for (owner, attr), new in self.attributes.items():
            setattr(owner, attr, new)
        for target, new in self.functions.items():
            for module, name in _bindings(target, self.extra):
                setattr(module, name, new)
        fields: dict[tuple[int, Any], tuple[dict, Any, dict[str, Any]]] = {}
        for target, new in self.functions.items():
            for registry, key, name in _entries(target):
                fields.setdefault((id(registry), key), (registry, key, {}))[2][name] = new
        for ident, (registry, key, changes) in fields.items():
            self.entries.setdefault(ident, (registry, key, registry[key]))
            registry[key] = dataclasses.replace(registry[key], **changes)

    def undo(self) -> None:
        for (owner, attr), raw in self.saved.items():
            _put(owner, attr, raw)
        for registry, key, entry in self.entries.values():
            registry[key] = entry
        self.entries.clear()
        for target, new in self.functions.items():
            own = self.own[id(new)]
            for module, name in _bindings(new, self.extra):
                if (module.__name__, name) not in own:
                    setattr(module, name, target)
            for registry, key, name in _entries(new):
                if (id(registry), key, name) not in own:
                    registry[key] = dataclasses.replace(registry[key], **{name: target})


def _sites(value: Any, extra: tuple[types.ModuleType, ...]) -> list[tuple[str, str]]:
    return [(module.__name__, name) for module, name in _bindings(value, extra)]


def _entry_keys(value: Any) -> list[tuple[int, Any, str]]:
    return [(id(registry), key, name) for registry, key, name in _entries(value)]


@contextlib.contextmanager
def applied(mutant: Mutant, *extra_modules: types.ModuleType) -> Iterator[None]:
    """Apply ``mutant`` inside the block; everything is restored on exit.

    Inside the block, a cached helper that the mutant ``reuses`` computes a result the true
    run has not with the replacements undone (the true code), and keeps it as a true result.
    """
    swaps = _Replacements(mutant, extra_modules)

    @contextlib.contextmanager
    def suspended() -> Iterator[None]:
        # plain functools caches may hold what the mutant computed: never the true code's
        clear_caches()
        swaps.undo()
        try:
            yield
        finally:
            try:
                clear_caches()
            finally:
                swaps.apply()

    with mutant_scope(frozenset(mutant.reuses), suspended):
        try:
            swaps.apply()
            yield
        finally:
            swaps.undo()


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
