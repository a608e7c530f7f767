"""Loading a user's module that registers claims, studies, benchmarks or selection methods."""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["load_plugin"]


def load_plugin(module: str, what: str = "plugin") -> ModuleType:
    """Import ``module`` (dotted name, on ``sys.path``) for its registrations.

    A module that cannot be imported is a ``ValueError`` naming it and the reason, so the
    command line can report it in one line.
    """
    if not isinstance(module, str) or not module:
        raise TypeError(f"module must be a dotted module name; got {module!r}")
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ValueError(f"cannot import {what} module {module!r}: {exc}") from exc
