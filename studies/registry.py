"""The study registry: name → :class:`~laplace_lab.studies.spec.Study`.

A study registers itself with :func:`register` when its module is imported. The shipped
studies are the papers' (``paper_checks/<paper>/studies/``, one module each), which
:func:`laplace_lab.papers.load_studies` imports; this engine imports no paper. A user's own
studies register the same way from any importable module; the CLI imports such modules with
``--plugin MODULE``.
"""

from __future__ import annotations

from laplace_lab._plugins import load_plugin as _load_plugin
from laplace_lab.studies.spec import Study

__all__ = ["get_study", "load_plugin", "register", "studies"]

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


def load_plugin(module: str) -> None:
    """Import a user module that registers studies (``--plugin MODULE``)."""
    _load_plugin(module, "study plugin")


def studies() -> dict[str, Study]:
    """All registered studies by name."""
    return dict(sorted(_REGISTRY.items()))


def get_study(name: str) -> Study:
    """The registered study ``name``, or a ValueError listing the known names."""
    known = studies()
    if name not in known:
        raise ValueError(f"unknown study {name!r}; known studies: {', '.join(known) or 'none'}")
    return known[name]
