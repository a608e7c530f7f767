"""How the packages fit together, read from the source (function-level imports included).

- every package folder installs under the ``laplace_lab`` namespace;
- layers import downwards: theory < numerics < networks < studies, benchmarks, conformance <
  the verification machinery < the papers < their discovery (``laplace_lab.papers``) < the
  command line (``laplace_lab.cli``); nothing below ``paper_checks`` imports it;
- no paper imports another paper;
- no import cycle;
- no ``_private`` module of one layer or paper imported by another, no ``_private`` name
  imported from another module (the shared ``laplace_lab._*`` helpers aside);
- no test hook in a kernel: no layer below the verification machinery speaks of mutants;
- the command line's parser imports no claim, study, benchmark or torch.
"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Import name → folder of each layer (as installed by setup.py).
LAYERS = {
    "laplace_lab.theory": "theory",
    "laplace_lab.numerics": "numerics",
    "laplace_lab.networks": "networks",
    "laplace_lab.studies": "studies",
    "laplace_lab.benchmarks": "benchmarks",
    "laplace_lab.conformance": "conformance",
    "laplace_lab.paper_checks": "paper_checks",
}
LEVEL = {
    "laplace_lab.theory": 0,
    "laplace_lab.numerics": 1,
    "laplace_lab.networks": 2,
    "laplace_lab.studies": 3,
    "laplace_lab.benchmarks": 3,
    "laplace_lab.conformance": 3,
    "laplace_lab.paper_checks": 4,  # the package and its verification machinery
    "paper": 5,  # laplace_lab.paper_checks.<paper>
    "laplace_lab.papers": 6,
    "laplace_lab.cli": 7,
}
MACHINERY = "laplace_lab.paper_checks.verification"


def _modules() -> dict[str, Path]:
    """Every module of the package by its import name."""
    found = {
        f"laplace_lab.{p.stem}": p
        for p in (ROOT / "laplace_lab").glob("*.py")
        if p.stem != "__init__"
    }
    found["laplace_lab"] = ROOT / "laplace_lab" / "__init__.py"
    for package, folder in LAYERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([package, *parts])] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> Iterator[tuple[str, str, int]]:
    """(imported module, imported name or "", line) of every import in the file, resolved to
    a module of the package where it names one (``from pkg import module``)."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = name.split(".") if is_package else name.split(".")[:-1]
                here = here[: len(here) - node.level + 1]
                base = ".".join(here + ([node.module] if node.module else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full in MODULES:
                    yield full, "", node.lineno
                else:
                    yield base, alias.name, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, "", node.lineno


def _edges() -> dict[str, set[str]]:
    graph = {}
    for name, path in MODULES.items():
        graph[name] = {m for m, _, _ in _imports(name, path) if m in MODULES and m != name}
    return graph


def _unit(module: str) -> str:
    """The layer, the paper (``paper``) or the top-level module a module belongs to."""
    parts = module.split(".")
    if module.startswith("laplace_lab.paper_checks.") and parts[2] != "verification":
        return ".".join(parts[:3])
    if len(parts) >= 2 and ".".join(parts[:2]) in LAYERS:
        return ".".join(parts[:2])
    return module


def _level(unit: str) -> int | None:
    if unit.startswith("laplace_lab.paper_checks.") and unit != "laplace_lab.paper_checks":
        return LEVEL["paper"]
    return LEVEL.get(unit)


def _shared(module: str) -> bool:
    """The shared helpers of the top package: laplace_lab._checks, _random, _paths, ..."""
    parts = module.split(".")
    return len(parts) == 2 and parts[0] == "laplace_lab" and parts[1].startswith("_")


def test_every_package_folder_is_installed_under_the_namespace():
    for name, path in MODULES.items():
        if path.name != "__init__.py":
            continue
        spec = importlib.util.find_spec(name)
        assert spec is not None, f"{name} ({path.parent}) is not installed"
        assert Path(spec.origin).resolve() == path.resolve(), name


def test_no_module_is_shadowed_by_a_package_of_its_name():
    shadowed = [
        p for p in MODULES.values() if p.name != "__init__.py" and p.with_suffix("").is_dir()
    ]
    assert not shadowed, f"a folder of the same name hides {shadowed}"


def test_a_users_own_theory_module_does_not_shadow_ours(tmp_path):
    for name in ("theory", "numerics", "networks", "studies", "paper_checks", "benchmarks"):
        (tmp_path / f"{name}.py").write_text("raise RuntimeError('the user module was imported')")
    out = _run(
        "import laplace_lab.numerics, laplace_lab.theory, laplace_lab.studies; "
        "print(laplace_lab.theory.ipv.__module__)",
        tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "laplace_lab.theory.ipv"


def _run(code: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_layers_import_downwards_and_nothing_below_paper_checks_imports_it():
    wrong = []
    for name, path in MODULES.items():
        here = _unit(name)
        for module, _, line in _imports(name, path):
            if not module.startswith("laplace_lab") or _shared(module) or module == "laplace_lab":
                continue
            there = _unit(module)
            if there == here:
                continue
            low, high = _level(here), _level(there)
            assert low is not None and high is not None, (name, module)
            if high > low or (high == low and here != there and high != LEVEL["paper"]):
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not wrong, "imports against the layer order:\n" + "\n".join(wrong)


def test_no_paper_imports_another_paper():
    wrong = []
    for name, path in MODULES.items():
        here = _unit(name)
        if _level(here) != LEVEL["paper"]:
            continue
        for module, _, line in _imports(name, path):
            there = _unit(module)
            if _level(there) == LEVEL["paper"] and there != here:
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not wrong, "\n".join(wrong)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph)))
    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_function_level_imports_included():
    assert _cycles(_edges()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_private_module_or_name_crosses_a_layer_or_paper():
    wrong = []
    for name, path in MODULES.items():
        here = _unit(name)
        for module, imported, line in _imports(name, path):
            if not module.startswith("laplace_lab") or _shared(module):
                continue
            private_module = any(p.startswith("_") for p in module.split(".")[1:])
            if private_module and _unit(module) != here:
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports the private {module}")
            # a private name is imported only from a private module of the same unit
            if imported.startswith("_") and not (private_module and _unit(module) == here):
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {module}.{imported}")
    assert not wrong, "\n".join(wrong)


KERNELS = ("theory", "numerics", "networks", "studies")


@pytest.mark.parametrize("folder", KERNELS)
def test_no_kernel_carries_a_hook_for_being_tested(folder):
    """Mutants patch from outside (laplace_lab.paper_checks.verification.mutants)."""
    for path in (ROOT / folder).rglob("*.py"):
        text = path.read_text(encoding="utf-8").lower()
        assert "mutant" not in text and "mutation test" not in text, path


def test_the_engines_import_no_paper():
    for name, path in MODULES.items():
        if _level(_unit(name)) is None or _level(_unit(name)) > LEVEL["laplace_lab.paper_checks"]:
            continue
        hits = [m for m, _, _ in _imports(name, path) if _level(_unit(m)) == LEVEL["paper"]]
        assert not hits, f"{name} imports {hits}"


def test_the_parser_imports_no_claim_study_benchmark_or_torch(tmp_path):
    out = _run(
        "import sys; from laplace_lab.cli import _parser; _parser(); "
        "print(sorted(m for m in sys.modules if m in ('torch', 'matplotlib', 'scipy.stats') "
        "or (m.startswith('laplace_lab.paper_checks.') and not m.startswith("
        f"'{MACHINERY}')) or m.startswith(('laplace_lab.benchmarks.bench_', "
        "'laplace_lab.papers', 'laplace_lab.conformance.catalog'))))",
        tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


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


#: What of the conformance suite a paper's checks may use: its dense float64 oracle (to audit
#: the library kernels a claim rests on), never its runner, catalogue or adapters.
ORACLE = ("laplace_lab.conformance.oracle", "laplace_lab.conformance.problems")


def test_nothing_but_the_command_line_imports_the_conformance_suite():
    for name, path in MODULES.items():
        unit = _unit(name)
        if unit in ("laplace_lab.conformance", "laplace_lab.cli"):
            continue
        allowed = ORACLE if unit.startswith("laplace_lab.paper_checks.") else ()  # a paper
        hits = [
            m
            for m, _, _ in _imports(name, path)
            if m.startswith("laplace_lab.conformance") and m not in allowed
        ]
        assert not hits, f"{path} imports {hits}"
    cli = MODULES["laplace_lab.cli"]
    assert {m for m, _, _ in _imports("laplace_lab.cli", cli)} >= {"laplace_lab.conformance.cli"}


def test_the_entry_points_into_the_package_are_the_command_line_and_the_pytest_plugin():
    """pyproject declares two ways in: the ``laplace-lab`` script and the ``pytest11`` plugin,
    which imports nothing of the suite before a case runs (pytest loads it in every session
    where laplace-lab is installed)."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"] == {"laplace-lab": "laplace_lab.cli:main"}
    assert project["entry-points"] == {
        "pytest11": {"laplace_lab": "laplace_lab.conformance.pytest_plugin"}
    }
    tree = ast.parse(MODULES["laplace_lab.conformance.pytest_plugin"].read_text("utf-8"))
    top = [
        (n.module or "") if isinstance(n, ast.ImportFrom) else a.name
        for n in tree.body
        if isinstance(n, ast.Import | ast.ImportFrom)
        for a in n.names
    ]
    assert set(top) <= {"__future__", "typing", "pytest"}, top
