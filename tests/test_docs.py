"""The documentation site builds with ``mkdocs build --strict`` (as ``make docs`` does): every
warning fails it, a broken link or a docstring griffe cannot parse among them; and its API
reference documents every public name."""

from __future__ import annotations

import ast
import importlib.util
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

from laplace_lab.papers import paper_folder, papers

ROOT = Path(__file__).resolve().parent.parent


def build(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def exports(module: str) -> list[str]:
    """The ``__all__`` of ``module``, read from its source (nothing is imported)."""
    tree = ast.parse(Path(importlib.util.find_spec(module).origin).read_text("utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            getattr(t, "id", None) == "__all__" for t in node.targets
        ):
            return ast.literal_eval(node.value)
    return []


def public_submodules(package: str) -> list[str]:
    where = importlib.util.find_spec(package).submodule_search_locations
    return [f"{package}.{m.name}" for m in pkgutil.iter_modules(where) if m.name[0] != "_"]


#: API page → the modules whose ``__all__`` it documents.
API_PAGES = {
    "theory": ["laplace_lab.theory"],
    "numerics": ["laplace_lab.numerics"],
    "networks": public_submodules("laplace_lab.networks"),
    "studies": ["laplace_lab.studies"],
    "verification": ["laplace_lab.paper_checks.verification"],
    "benchmarks": ["laplace_lab.benchmarks"],
    "conformance": ["laplace_lab.conformance"],
    "cli": ["laplace_lab.cli", "laplace_lab.papers"],
}


@pytest.mark.xdist_group("docs-site")
def test_the_site_builds_strict_with_every_page_paper_and_public_name(built_site):
    run, site = built_site
    assert run.returncode == 0, run.stderr[-5000:]
    assert "greedy_laplace" in (site / "api" / "numerics" / "index.html").read_text("utf-8")
    assert 'href="api/"' in (site / "index.html").read_text("utf-8")  # the README, nav to API
    for page in (ROOT / "docs").glob("*.md"):
        built = site / ("" if page.stem == "index" else page.stem) / "index.html"
        assert built.is_file(), page.name
    for paper, package in papers().items():
        page = (site / "api" / "papers" / paper / "index.html").read_text("utf-8")
        assert f"{package}." in page  # its modules
        if (paper_folder(paper) / "RESULTS.md").is_file():
            assert (site / "papers" / paper / "index.html").is_file()
    # Each name of __all__ has its heading on its API page (a function named like its module,
    # such as theory.ipv, under its module's path).
    missing = []
    for page, modules in API_PAGES.items():
        ids = set(
            re.findall(r'id="([^"]+)"', (site / "api" / page / "index.html").read_text("utf-8"))
        )
        missing += [
            f"{page}: {module}.{name}"
            for module in modules
            for name in exports(module)
            if not {f"{module}.{name}", f"{module}.{name}.{name}"} & ids
        ]
    assert not missing


def test_a_broken_link_in_the_docs_fails_the_build(tmp_path):
    """The same configuration on a docs folder with one page linking to a missing page."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\n[a page that is not there](missing.md)\n")
    config = tmp_path / "mkdocs.yml"
    hooks = ROOT / "docs" / "_hooks.py"
    config.write_text(f"INHERIT: {ROOT / 'mkdocs.yml'}\ndocs_dir: {docs}\nhooks: [{hooks}]\n")
    run = build(config, tmp_path / "site")
    assert run.returncode != 0
    assert "contains a link 'missing.md', but the target is not found" in run.stderr
