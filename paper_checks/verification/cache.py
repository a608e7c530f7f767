"""Cached experiments of the paper checks, kept apart from a mutant's.

Claims share expensive experiments — trained networks, fitted GP priors, bandit runs — through
helpers decorated with :func:`cached`. While a mutant is applied
(:func:`laplace_lab.paper_checks.verification.mutants.applied`), a cached helper neither returns
the true code's results nor stores into them: what it computes under the mutant is kept apart and
dropped when the mutant's run ends. So a mutant can neither reuse nor poison the true results, and
the true results survive every mutant run for the claims that share them.

A mutant may name, in ``Mutant.reuses``, cached helpers whose results do not depend on what it
replaces (a network's training, when the mutant changes a verdict threshold or a step after
it). Under that mutant those helpers return the true code's results: a result the true run
did not compute (a second look of a sequential design that only the mutant reaches) is
computed with the mutant's replacements suspended, by the true code, and kept as a true
result, so the next mutant or claim that needs it reuses it. Reuse can only narrow what a
mutant changes, never make it caught: a mutant that is still caught is caught by the code
downstream of the reused results.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import AbstractContextManager
from typing import Any, NamedTuple

__all__ = ["Cached", "cached", "mutant_scope"]

_REGISTRY: list[Cached] = []


class _Scope(NamedTuple):
    """The applied mutant's view of the cache."""

    #: The cached helpers that return true results under the mutant.
    reuses: frozenset[Cached]
    #: Inside it the mutant's replacements are undone (the true code runs).
    suspended: Callable[[], AbstractContextManager[None]]


#: The applied mutant's scope (None: no mutant, or its replacements suspended).
_SCOPE: list[_Scope | None] = [None]


class Cached:
    """A function whose results are cached by argument, true and mutant results apart.

    Parameters
    ----------
    fn : callable
        The experiment; its arguments must be hashable.
    maxsize : int or None
        Keep at most this many true results, the least recently used dropped first (None:
        all; for experiments whose results are large).
    """

    def __init__(self, fn: Callable[..., Any], maxsize: int | None = None) -> None:
        if maxsize is not None and (not isinstance(maxsize, int) or maxsize < 1):
            raise ValueError(f"maxsize must be a positive int or None; got {maxsize!r}")
        functools.update_wrapper(self, fn)
        self.fn = fn
        self._signature = inspect.signature(fn)
        self.maxsize = maxsize
        self._true: OrderedDict[Hashable, Any] = OrderedDict()
        self._mutant: dict[Hashable, Any] = {}
        _REGISTRY.append(self)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        key = self._key(args, kwargs)
        scope = _SCOPE[-1]
        if scope is not None and self in scope.reuses and key not in self._true:
            with _true_code(scope):
                return self(*args, **kwargs)
        store = self._true if scope is None or self in scope.reuses else self._mutant
        if key in store:
            if store is self._true:
                self._true.move_to_end(key)
            return store[key]
        value = self.fn(*args, **kwargs)
        store[key] = value
        if store is self._true and self.maxsize is not None and len(store) > self.maxsize:
            store.popitem(last=False)
        return value

    def _key(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Hashable:
        """The call's arguments bound to the signature, defaults applied: ``f(1)``,
        ``f(1, steps=0)`` and ``f(x=1)`` are one result when ``steps`` defaults to 0."""
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return tuple(
            (name, tuple(sorted(value.items())) if isinstance(value, dict) else value)
            for name, value in bound.arguments.items()
        )

    def cache_clear(self) -> None:
        """Forget every result, true and mutant."""
        self._true.clear()
        self._mutant.clear()

    def __repr__(self) -> str:
        return f"<cached {self.__module__}.{self.__qualname__}>"

    def __reduce__(self) -> str:
        """Pickled by reference (its module-level name), like a function, not its results."""
        return self.__qualname__


def cached(fn: Callable[..., Any] | None = None, *, maxsize: int | None = None) -> Any:
    """Decorate an experiment shared by claims: ``@cached`` or ``@cached(maxsize=2)``."""
    if fn is None:
        return functools.partial(Cached, maxsize=maxsize)
    return Cached(fn, maxsize)


@contextlib.contextmanager
def _true_code(scope: _Scope) -> Iterator[None]:
    """Inside the block the mutant of ``scope`` is suspended: its replacements undone, every
    cached helper reading and writing the true results."""
    with scope.suspended():
        _SCOPE.append(None)
        try:
            yield
        finally:
            _SCOPE.pop()


def mutant_scope(
    reuses: frozenset[Cached] = frozenset(),
    suspended: Callable[[], AbstractContextManager[None]] = contextlib.nullcontext,
) -> AbstractContextManager[None]:
    """Inside the block, cached results are a mutant's: computed apart, dropped at the end,
    except the true results of the helpers in ``reuses`` (computed inside ``suspended()``,
    where the mutant's replacements are undone, when the true run has none).

    Parameters
    ----------
    reuses : frozenset of Cached
        The helpers whose true results the mutant reuses.
    suspended : callable
        Returns a context manager inside which the mutant's replacements are undone (the
        default: the mutant replaces nothing outside the cache).
    """
    return _mutant_scope(_Scope(frozenset(reuses), suspended))


@contextlib.contextmanager
def _mutant_scope(scope: _Scope) -> Iterator[None]:
    _SCOPE.append(scope)
    try:
        yield
    finally:
        _SCOPE.pop()
        if _SCOPE[-1] is None:
            for helper in _REGISTRY:
                helper._mutant.clear()
