"""How the packages fit together: namespaced install, lazy command line, one layer order."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = {
    "theory": 0,
    "numerics": 1,
    "studies": 2,
    "paper_checks": 3,
    "benchmarks": 3,
    "conformance": 3,
}


def _run(code: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_every_package_folder_is_installed_under_the_namespace():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    mapping = config["package-dir"]
    found = set()
    for package, folder in mapping.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            found.add(".".join([package, *rel.parts]) if rel.parts else package)
    assert found == listed
    assert all(name.startswith("laplace_lab") for name in listed)


def test_a_users_own_theory_module_does_not_shadow_ours(tmp_path):
    for name in ("theory", "numerics", "studies", "paper_checks", "benchmarks", "conformance"):
        (tmp_path / f"{name}.py").write_text("raise RuntimeError('the user module was imported')")
    out = _run(
        "import laplace_lab.numerics, laplace_lab.theory, laplace_lab.studies; "
        "print(laplace_lab.theory.ipv.__module__)",
        tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "laplace_lab.theory.ipv"


def test_the_parser_imports_no_claim_study_or_torch(tmp_path):
    out = _run(
        "import sys; from laplace_lab.cli import _parser; _parser(); "
        "print(sorted(m for m in sys.modules if m == 'torch' or m == 'matplotlib' "
        "or m.startswith(('laplace_lab.paper_checks.', 'laplace_lab.studies.catalog', "
        "'laplace_lab.benchmarks.bench_', 'laplace_lab.conformance.'))))",
        tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['laplace_lab.conformance.cli', 'laplace_lab.paper_checks.cli']"


def test_study_list_runs_without_torch(tmp_path):
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'torch':\n"
        "            raise ImportError('no torch here')\n"
        "sys.meta_path.insert(0, Block())\n"
        "from laplace_lab.cli import main\n"
        "sys.exit(main(['study', 'list']))\n"
    )
    out = _run(code, tmp_path)
    assert out.returncode == 0, out.stderr
    assert "wheel-bandit:" in out.stdout and "network-subnet-w2:" in out.stdout


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def test_layers_import_downwards_and_no_private_module_of_another_layer():
    """theory < numerics < studies < paper_checks/benchmarks; private modules stay home."""
    for folder, level in LAYERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            for name in _imports(path):
                parts = name.split(".")
                if parts[0] != "laplace_lab" or len(parts) < 2:
                    continue
                layer = parts[1]
                if layer in LAYERS:
                    assert LAYERS[layer] <= level, f"{path} imports the upper layer {name}"
                    if layer != folder:
                        private = [p for p in parts[2:] if p.startswith("_")]
                        assert not private, f"{path} imports the private module {name}"


def test_nothing_but_the_command_line_imports_the_conformance_suite():
    for folder in LAYERS:
        if folder == "conformance":
            continue
        for path in (ROOT / folder).rglob("*.py"):
            hits = [n for n in _imports(path) if n.startswith("laplace_lab.conformance")]
            assert not hits, f"{path} imports {hits}"
    assert _imports(ROOT / "laplace_lab" / "cli.py") >= {"laplace_lab.conformance.cli"}
