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

import ast
import importlib
import importlib.util
import pkgutil
from collections.abc import Sequence
from pathlib import Path

from laplace_lab.paper_checks.verification.errata import Erratum, registered_errata
from laplace_lab.paper_checks.verification.registry import Claim, all_claims
from laplace_lab.studies.registry import get_study as registered_study
from laplace_lab.studies.registry import studies as registered_studies
from laplace_lab.studies.spec import Study

__all__ = [
    "claim_index",
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


def _wanted(paper: str | None) -> list[str]:
    """The papers to load for ``paper`` (None: all); a paper that is no folder here (a
    plugin's) loads nothing."""
    known = papers()
    if paper is not None:
        return [paper] if paper in known else []
    return list(known)


def _claim_modules(paper: str) -> list[str]:
    """The claim modules of ``paper`` (its public modules), in report order."""
    package = importlib.import_module(_package(paper))  # its __init__: a docstring, an order
    infos = [i for i in pkgutil.iter_modules(package.__path__) if not i.ispkg]
    public = [i.name for i in infos if not i.name.startswith("_") and i.name not in _PARTS]
    first = [m for m in getattr(package, "CLAIM_MODULES", ()) if m in public]
    return [f"{package.__name__}.{m}" for m in first + sorted(set(public) - set(first))]


def _static_names(tree: ast.Module) -> list[str]:
    """The claim names a module registers, read from its source: ``claim(name="...")``, and
    the string given for ``name`` to a module function that calls ``claim(name=name)``."""
    names, registrars = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "claim":
            for kw in node.keywords:
                if kw.arg == "name" and isinstance(kw.value, ast.Constant):
                    names.append(kw.value.value)
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        params = [a.arg for a in fn.args.args]
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "claim":
                for kw in node.keywords:
                    if kw.arg == "name" and getattr(kw.value, "id", None) in params:
                        registrars[fn.name] = params.index(kw.value.id)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in registrars:
            at = registrars[node.func.id]
            args = {a.arg: a.value for a in node.keywords}
            value = node.args[at] if at < len(node.args) else args.get("name")
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                names.append(value.value)
    return names


def claim_index() -> dict[str, str]:
    """``paper/name`` → the module that registers it, read from the sources without importing
    them (what lets ``laplace-lab check --claim NAME`` import one module, and refuse an
    unknown name at once). The test suite checks it against the registry."""
    index = {}
    for paper in papers():
        for module in _claim_modules(paper):
            origin = importlib.util.find_spec(module).origin
            tree = ast.parse(Path(origin).read_text(encoding="utf-8"))
            for name in _static_names(tree):
                index[f"{paper}/{name}"] = module
    return index


def _import_paper(paper: str, modules: Sequence[str] | None = None) -> None:
    for module in _claim_modules(paper) if modules is None else modules:
        importlib.import_module(module)
    errata = f"{_package(paper)}.errata"
    if importlib.util.find_spec(errata) is not None:
        importlib.import_module(errata)


def load_claims(paper: str | None = None, names: Sequence[str] = ()) -> None:
    """Import the claim modules (and errata) of ``paper``, or of every paper; with claim
    ``names`` (names or ``paper/name`` keys) and no ``paper``, only the modules that register
    them, or none when a name is none of the papers' (a plugin's, or unknown)."""
    if paper is None and names:
        index = claim_index()
        found: dict[str, list[str]] = {}
        for name in names:
            keys = [k for k in index if name in (k, k.split("/", 1)[1])]
            if not keys:
                return
            for key in keys:
                found.setdefault(key.split("/", 1)[0], []).append(index[key])
        for where, modules in found.items():
            _import_paper(where, list(dict.fromkeys(modules)))
        return
    for name in _wanted(paper):
        _import_paper(name)


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
    load_studies()
    return registered_study(name)


def load_benchmarks() -> None:
    """Import every paper's ``benchmarks/bench_*.py`` (each registers its benchmarks)."""
    for package in papers().values():
        for module in _submodules(f"{package}.benchmarks"):
            if module.rsplit(".", 1)[1].startswith("bench_"):
                importlib.import_module(module)
