"""The declaration of a Monte Carlo study: a parameter grid × replications of a pure function.

Studies own the loops, not the mathematics: a study declares what to vary and what to
measure (a pure ``run_one(params, rng) -> dict``); :mod:`laplace_lab.studies.runner` owns
seeding, the store, executors, progress and plots.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
import itertools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from laplace_lab._checks import positive_int

__all__ = ["Grid", "Params", "Study", "expand_grid", "parse_grid_overrides"]

#: One grid point: parameter name → scalar value (int, float, str or bool).
Params = dict[str, Any]
#: A grid: parameter name → the values it takes (the grid is their Cartesian product).
Grid = Mapping[str, Sequence[Any]]

_NAME = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
_SCALARS = (bool, int, float, str)


#: The layers below the study engine and the engine itself: the code any study can call.
_SHARED = ("theory", "numerics", "networks", "studies")


def _tree(package: str) -> list[tuple[str, Path]]:
    """(name relative to the layer's parent, path) of every source file of ``package``."""
    root = Path(importlib.import_module(package).__file__).parent
    return [(p.relative_to(root.parent).as_posix(), p) for p in sorted(root.rglob("*.py"))]


def _owner(module: str) -> str | None:
    """The package whose whole code a study defined in ``module`` may call beyond the shared
    layers: the sub-package two levels below ``laplace_lab`` that holds it (a paper's folder,
    with its experiments), or None (a module of a shared layer, or outside ``laplace_lab``)."""
    parts = module.split(".")
    if parts[0] != "laplace_lab" or len(parts) < 4 or parts[1] in _SHARED:
        return None
    return ".".join(parts[:3])


def _digested_sources(owner: str | None = None) -> list[tuple[str, Path]]:
    """(name, path) of every source file of the layers a study's maths can call, of the
    package's shared helpers (seeding, argument checks) and of ``owner`` (:func:`_owner`)."""
    top = Path(importlib.import_module("laplace_lab").__file__).parent
    files = [(path.name, path) for path in sorted(top.glob("_*.py"))]
    for name in (*_SHARED, *([owner] if owner else [])):
        files += _tree(name if "." in name else f"laplace_lab.{name}")
    return files


@functools.cache
def _package_digest(owner: str | None = None) -> str:
    """A hash of :func:`_digested_sources` (names and contents)."""
    h = hashlib.sha256()
    for name, path in _digested_sources(owner):
        h.update(name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def _check_grid(grid: Grid, name: str) -> dict[str, tuple[Any, ...]]:
    if not isinstance(grid, Mapping) or not grid:
        raise ValueError(f"{name} must be a non-empty mapping of parameter -> values")
    out = {}
    for key, values in grid.items():
        if not isinstance(key, str) or not key.isidentifier():
            raise ValueError(f"{name} keys must be identifiers; got {key!r}")
        vals = tuple(values)
        if not vals:
            raise ValueError(f"{name}[{key!r}] must list at least one value")
        for v in vals:
            if not isinstance(v, _SCALARS):
                raise TypeError(
                    f"{name}[{key!r}] values must be int, float, str or bool; got {v!r}"
                )
        if len(set(vals)) != len(vals):
            raise ValueError(f"{name}[{key!r}] has duplicate values: {vals}")
        out[key] = vals
    return out


@dataclass(frozen=True)
class Study:
    """A parameter grid × replications of ``run_one(params, rng) -> dict[str, float]``.

    Parameters
    ----------
    name : str
        Lower-case, hyphenated (``"theorem2-consistency"``); the key of the registry.
    description : str
        One paragraph: what is measured and which paper statement it tests.
    grid, full_grid : mapping of str to sequence
        The default grid (must run in ≤ 2 minutes on 2 cores) and the ``--full`` grid.
        Both must have the same keys.
    replications, full_replications : int
        Replications per grid point for the default and the full run.
    run_one : callable
        ``run_one(params, rng)`` → metrics. Pure: all randomness from ``rng``
        (a ``numpy.random.Generator``); a module-level function (it is pickled to workers).
    run_batch : callable, optional
        ``run_batch(params, rngs)`` → one metrics dict per generator: several replications of
        one grid point at once (e.g. seeds trained in lockstep). It must return exactly
        ``[run_one(params, rng=r) for r in rngs]``; the runner then hands each worker up to
        ``batch_size`` pending replications of a grid point as one task.
    batch_size : int
        Replications per task when ``run_batch`` is given (1 otherwise).
    version : str
        The study's code version; bump it whenever ``run_one`` changes its numbers.
        A store written by another version is refused (see :mod:`laplace_lab.studies.store`).
    probabilities : sequence of str
        Metrics that are 0/1 indicators: summarised with Wilson intervals.
    x : str
        The grid key on the horizontal axis of the default plot (log scale if numeric > 0).
    plot_metrics : sequence of str
        Metrics drawn by the default plot (all when empty).
    plot : callable, optional
        ``plot(summary, path)`` replaces the default plot.
    report : callable, optional
        ``report(summary) -> str``: study-specific conclusions (fitted rates, comparisons
        with the theory) printed by ``laplace-lab study run`` and ``status``.
    check_params : callable, optional
        ``check_params(params)`` raises ValueError (or TypeError) for a grid point that
        ``run_one`` cannot run, naming the parameter. Every point of a run is checked
        before its store is created, so a bad ``--grid`` value is one clear error and
        leaves nothing behind.
    """

    name: str
    description: str
    grid: Grid
    full_grid: Grid
    replications: int
    full_replications: int
    run_one: Callable[[Params, np.random.Generator], Mapping[str, float]]
    run_batch: Callable[..., Sequence[Mapping[str, float]]] | None = None
    batch_size: int = 1
    version: str = "1"
    probabilities: tuple[str, ...] = ()
    x: str | None = None
    plot_metrics: tuple[str, ...] = ()
    plot: Callable[..., Any] | None = field(default=None, compare=False)
    report: Callable[..., str] | None = field(default=None, compare=False)
    check_params: Callable[[Params], None] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ValueError(f"name must be lower-case words joined by '-'; got {self.name!r}")
        grid = _check_grid(self.grid, "grid")
        full = _check_grid(self.full_grid, "full_grid")
        if set(grid) != set(full):
            raise ValueError(
                f"grid and full_grid must have the same keys; got {sorted(grid)} "
                f"and {sorted(full)}"
            )
        object.__setattr__(self, "grid", grid)
        object.__setattr__(self, "full_grid", full)
        for attr in ("replications", "full_replications"):
            positive_int(getattr(self, attr), attr)
        if not callable(self.run_one):
            raise TypeError("run_one must be callable: run_one(params, *, rng) -> dict")
        if self.check_params is not None and not callable(self.check_params):
            raise TypeError("check_params must be callable: check_params(params) -> None")
        if self.run_batch is not None and not callable(self.run_batch):
            raise TypeError("run_batch must be callable: run_batch(params, *, rngs) -> list")
        positive_int(self.batch_size, "batch_size")
        if self.batch_size > 1 and self.run_batch is None:
            raise ValueError(f"batch_size > 1 needs run_batch; got batch_size={self.batch_size}")
        object.__setattr__(self, "probabilities", tuple(self.probabilities))
        object.__setattr__(self, "plot_metrics", tuple(self.plot_metrics))
        if self.x is not None and self.x not in grid:
            raise ValueError(f"x must be a grid key {sorted(grid)}; got x={self.x!r}")

    @property
    def code_version(self) -> str:
        """``version``, a hash of ``run_one``'s module source and a hash of the package code
        it can call (theory, numerics, networks, studies, and the whole folder of the paper
        that defines it, experiments included): any change is a new version, so a resumed
        run never mixes rows from old and new code."""
        module = inspect.getmodule(self.run_one)
        try:
            source = inspect.getsource(module or self.run_one)
        except (OSError, TypeError):
            source = repr(self.run_one)
        digest = hashlib.sha256(source.encode()).hexdigest()[:12]
        owner = _owner(module.__name__) if module is not None else None
        return f"{self.version}+{digest}+{_package_digest(owner)}"

    def grid_for(self, *, full: bool = False) -> dict[str, tuple[Any, ...]]:
        """The default or the full grid."""
        return dict(self.full_grid if full else self.grid)

    def replications_for(self, *, full: bool = False) -> int:
        """The default or the full number of replications."""
        return self.full_replications if full else self.replications

    def grid_with(
        self, overrides: Grid | None = None, *, full: bool = False
    ) -> dict[str, tuple[Any, ...]]:
        """The default (or full) grid with the values of ``overrides`` put in, key by key.

        ``{"N": [30, 100]}`` changes N and keeps every other parameter's values, as
        ``--grid N=30,100`` does on the command line. An unknown key is a ValueError
        listing the grid's keys; every resulting point passes ``check_params``.
        """
        grid = self.grid_for(full=full)
        if overrides is not None:
            if not isinstance(overrides, Mapping):
                raise TypeError(
                    "grid must be a mapping of parameter -> values; got "
                    f"{type(overrides).__name__}"
                )
            unknown = sorted(set(overrides) - set(grid), key=str)
            if unknown:
                raise ValueError(
                    f"grid has unknown parameter {unknown[0]!r}; the grid of {self.name!r} "
                    f"has {sorted(grid)}"
                )
            for key, values in overrides.items():
                grid[key] = (values,) if isinstance(values, _SCALARS) else values
        grid = _check_grid(grid, "grid")
        if self.check_params is not None:
            for params in expand_grid(grid):
                self.check_params(params)
        return grid


def expand_grid(grid: Grid) -> list[Params]:
    """All grid points, the Cartesian product in the declared key order (last key fastest).

    Examples
    --------
    >>> from laplace_lab.studies import expand_grid
    >>> expand_grid({"N": (10, 100), "k": (1, 2)})
    [{'N': 10, 'k': 1}, {'N': 10, 'k': 2}, {'N': 100, 'k': 1}, {'N': 100, 'k': 2}]
    """
    keys = list(grid)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*grid.values())]


def _convert(text: str, like: Sequence[Any], key: str) -> Any:
    kinds = {type(v) for v in like}
    if kinds <= {bool}:
        if text.lower() in ("true", "1"):
            return True
        if text.lower() in ("false", "0"):
            return False
        raise ValueError(f"--grid {key}: {text!r} is not a boolean")
    if kinds <= {int}:
        try:
            return int(text)
        except ValueError:
            pass
        try:
            number = float(text)
        except ValueError:
            number = float("nan")
        if not number.is_integer():
            raise ValueError(f"--grid {key}: {text!r} is not an integer")
        return int(number)
    if kinds <= {int, float}:
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"--grid {key}: {text!r} is not a number") from None
    return text


def parse_grid_overrides(grid: Grid, overrides: Sequence[str]) -> dict[str, tuple[Any, ...]]:
    """Apply ``key=v1,v2`` overrides to ``grid``; values take the type of the grid's values.

    >>> parse_grid_overrides({"N": (10, 100), "k": (2,)}, ["N=1e3,1e4"])
    {'N': (1000, 10000), 'k': (2,)}
    """
    out = dict(grid)
    given: set[str] = set()
    for item in overrides:
        key, sep, values = item.partition("=")
        key = key.strip()
        if not sep or not values.strip():
            raise ValueError(f"--grid expects key=v1,v2,...; got {item!r}")
        if key not in grid:
            raise ValueError(f"--grid: unknown parameter {key!r}; the grid has {sorted(grid)}")
        if key in given:
            raise ValueError(f"--grid: parameter {key!r} given twice (list its values once)")
        given.add(key)
        out[key] = tuple(_convert(v.strip(), grid[key], key) for v in values.split(","))
    return _check_grid(out, "grid")
