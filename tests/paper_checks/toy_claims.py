"""A module of toy claims made from source text, registered where mutants look for bindings."""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterator


@contextlib.contextmanager
def toy_claims_module(name: str, source: str) -> Iterator[types.ModuleType]:
    """``source`` executed as the module ``laplace_lab.paper_checks.<name>`` for the block."""
    module = types.ModuleType(f"laplace_lab.paper_checks.{name}")
    sys.modules[module.__name__] = module
    try:
        exec(source, vars(module))
        yield module
    finally:
        del sys.modules[module.__name__]
