"""Loading a user's module that registers claims, studies, benchmarks or selection methods."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["load_plugin"]


def _other_module(name: str, path: Path) -> str | None:
    """Where an importable module of the same ``name`` as the file ``path`` lives, if any: the
    file is loaded, and sent to Dask workers, under that name, so it would shadow it here and
    be shadowed by it there."""
    loaded = sys.modules.get(name)
    if loaded is not None:
        origin = getattr(loaded, "__file__", None) or "built in"
    else:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            return None
        if spec is None:
            return None
        origin = spec.origin or "a namespace package"
    try:
        same = Path(origin).resolve() == path  # the file itself, reached through a link
    except (OSError, ValueError):
        same = False
    return None if same else origin


def _from_file(path: Path) -> ModuleType:
    name = path.stem
    if name in sys.modules and getattr(sys.modules[name], "__file__", None) == str(path):
        return sys.modules[name]
    other = _other_module(name, path)
    if other is not None:
        raise ImportError(
            f"its module name {name!r} is that of another importable module ({other}): "
            "rename the file"
        )
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError("not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def load_plugin(module: str, what: str = "plugin") -> ModuleType:
    """Import ``module`` for its registrations: a dotted module name or a ``.py`` file.

    A dotted name is looked up on ``sys.path`` and then in the current directory, so
    ``laplace-lab check --plugin my_claims`` finds ``./my_claims.py`` as ``python -m`` would.
    A module that cannot be imported, or raises while it is imported, is a ``ValueError``
    naming it and the reason, so the command line can report it in one line.
    """
    if not isinstance(module, str) or not module:
        raise TypeError(f"module must be a dotted module name; got {module!r}")
    path = Path(module).resolve() if module.endswith(".py") else None
    if path is not None and not path.is_file():
        raise ValueError(f"cannot import {what} module {module!r}: no such file")
    cwd = os.getcwd()
    if path is None and cwd not in sys.path and "" not in sys.path:
        sys.path.append(cwd)
    try:
        return _from_file(path) if path is not None else importlib.import_module(module)
    except Exception as exc:
        reason = str(exc) if isinstance(exc, ImportError) else f"{type(exc).__name__}: {exc}"
        raise ValueError(f"cannot import {what} module {module!r}: {reason}") from exc
