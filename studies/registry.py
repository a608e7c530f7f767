"""The study registry: name → :class:`~laplace_lab.studies.spec.Study`.

Shipped studies live in :mod:`laplace_lab.studies.catalog` (one module per study, auto-discovered,
so a new study needs no central edit) and register themselves with :func:`register`. A user's own
studies register the same way from any importable module; the CLI imports such modules
with ``--plugin MODULE``.
"""

from __future__ import annotations

import importlib
import pkgutil

from laplace_lab._plugins import load_plugin as _load_plugin
from laplace_lab.studies.spec import Study

__all__ = ["get_study", "load_catalog", "load_plugin", "register", "studies"]

_REGISTRY: dict[str, Study] = {}


def register(study: Study) -> Study:
    """Add ``study`` to the registry (re-registering the same name replaces it only if equal)."""
    if not isinstance(study, Study):
        raise TypeError(f"register expects a Study; got {type(study).__name__}")
    old = _REGISTRY.get(study.name)
    if old is not None and old.code_version != study.code_version:
        raise ValueError(f"a different study named {study.name!r} is already registered")
    _REGISTRY[study.name] = study
    return study


def load_catalog() -> None:
    """Import every module of :mod:`laplace_lab.studies.catalog` (each registers its study)."""
    import laplace_lab.studies.catalog as catalog

    for info in pkgutil.iter_modules(catalog.__path__):
        importlib.import_module(f"{catalog.__name__}.{info.name}")


def load_plugin(module: str) -> None:
    """Import a user module that registers studies (``--plugin MODULE``)."""
    _load_plugin(module, "study plugin")


def studies() -> dict[str, Study]:
    """All registered studies by name (the catalog is loaded first)."""
    load_catalog()
    return dict(sorted(_REGISTRY.items()))


def get_study(name: str) -> Study:
    """The registered study ``name``, or a ValueError listing the known names."""
    known = studies()
    if name not in known:
        raise ValueError(f"unknown study {name!r}; known studies: {', '.join(known) or 'none'}")
    return known[name]
