"""The shipped papers: each folder of ``paper_checks`` (but ``verification``) is one paper.

A paper's folder holds everything of that paper, found by name, never listed centrally:

- its public modules register claims (``@claim``; a package constant ``CLAIM_MODULES`` may
  set which come first in the report);
- ``errata.py`` registers its errata;
- ``studies/`` registers its studies, ``benchmarks/bench_*.py`` its benchmarks;
- ``experiments/`` holds its set-ups and training protocols, which the others import;
- ``RESULTS.md`` shows its verdicts, tables and figures.

The engines (the claim registry, the study engine, the benchmark harness) never import a
paper; this module, part of the top layer with the command line, finds the papers and
imports what each registers. Adding a paper is adding a folder.

::

    from laplace_lab.papers import claims, get_study

    study = get_study("ipv-vs-pv")  # a study of Raha et al.
    print(len(claims("fsp-laplace")), "claims of FSP-Laplace")
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from laplace_lab.paper_checks.verification.errata import Erratum, registered_errata
from laplace_lab.paper_checks.verification.registry import Claim, all_claims
from laplace_lab.studies.registry import studies as registered_studies
from laplace_lab.studies.spec import Study

__all__ = [
    "claims",
    "errata",
    "get_study",
    "load_benchmarks",
    "load_claims",
    "load_studies",
    "paper_folder",
    "papers",
    "studies",
]

_ROOT = "laplace_lab.paper_checks"
#: Subpackages of a paper that register no claims.
_PARTS = frozenset({"experiments", "studies", "benchmarks", "errata"})
_MACHINERY = "verification"


def papers() -> dict[str, str]:
    """Paper name (``"fsp-laplace"``) → its package, for every paper folder, sorted."""
    root = importlib.import_module(_ROOT)
    found = {}
    for info in pkgutil.iter_modules(root.__path__):
        if info.ispkg and not info.name.startswith("_") and info.name != _MACHINERY:
            found[info.name.replace("_", "-")] = f"{_ROOT}.{info.name}"
    return dict(sorted(found.items()))


def _package(paper: str) -> str:
    known = papers()
    if paper not in known:
        raise ValueError(f"paper must be one of {list(known)}; got paper={paper!r}")
    return known[paper]


def paper_folder(paper: str) -> Path:
    """The folder of ``paper`` (where its RESULTS.md lives)."""
    return Path(importlib.import_module(_package(paper)).__file__).parent


def _submodules(package: str) -> list[str]:
    try:
        module = importlib.import_module(package)
    except ModuleNotFoundError as err:
        if err.name == package:  # the paper has no such part
            return []
        raise
    return [
        f"{package}.{info.name}"
        for info in pkgutil.iter_modules(module.__path__)
        if not info.name.startswith("_")
    ]


def _wanted(paper: str | None, names: Sequence[str]) -> list[str]:
    """The papers to load for ``paper`` and the claim ``names`` (``paper/name`` keys name
    their paper; a bare name may be any paper's). A paper that is no folder here (a plugin's)
    loads nothing."""
    known = papers()
    if paper is not None:
        return [paper] if paper in known else []
    if names and all("/" in n for n in names):
        return [p for p in known if any(n.split("/", 1)[0] == p for n in names)]
    return list(known)


def load_claims(paper: str | None = None, names: Sequence[str] = ()) -> None:
    """Import the claim modules (and errata) of ``paper``, of the papers the claim keys
    ``names`` (``paper/name``) name, or of every paper."""
    for name in _wanted(paper, names):
        package: ModuleType = importlib.import_module(_package(name))
        infos = [i for i in pkgutil.iter_modules(package.__path__) if not i.ispkg]
        public = [i.name for i in infos if not i.name.startswith("_") and i.name not in _PARTS]
        first = [m for m in getattr(package, "CLAIM_MODULES", ()) if m in public]
        for module in first + sorted(set(public) - set(first)):
            importlib.import_module(f"{package.__name__}.{module}")
        if any(i.name == "errata" for i in infos):
            importlib.import_module(f"{package.__name__}.errata")


def claims(paper: str | None = None) -> list[Claim]:
    """Every claim of ``paper`` (or of every paper), in report order."""
    load_claims(paper)
    return all_claims(paper)


def errata() -> list[Erratum]:
    """The errata of every paper, in the order of the papers."""
    load_claims()
    return registered_errata()


def load_studies() -> None:
    """Import every paper's ``studies`` modules (each registers its study)."""
    for package in papers().values():
        for module in _submodules(f"{package}.studies"):
            importlib.import_module(module)


def studies() -> dict[str, Study]:
    """Every registered study by name: the papers' and any registered before."""
    load_studies()
    return registered_studies()


def get_study(name: str) -> Study:
    """The study ``name`` of any paper, or a ValueError listing the known names."""
    known = studies()
    if name not in known:
        raise ValueError(f"unknown study {name!r}; known studies: {', '.join(known) or 'none'}")
    return known[name]


def load_benchmarks() -> None:
    """Import every paper's ``benchmarks/bench_*.py`` (each registers its benchmarks)."""
    for package in papers().values():
        for module in _submodules(f"{package}.benchmarks"):
            if module.rsplit(".", 1)[1].startswith("bench_"):
                importlib.import_module(module)
