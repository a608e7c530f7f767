"""The "Examples" sections of the API reference run as doctests and print what they show.

Each listed module's docstrings (the module's, its functions', classes' and methods') are
read from this checkout's source file and every ``>>>`` example in them is run with
:mod:`doctest`, in a copy of the module's globals as doctest does; a printed value that
differs from the docstring fails the test. The code the examples run is that of the
installed ``laplace_lab`` package.
"""

from __future__ import annotations

import ast
import doctest
import importlib
import io
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: The modules whose docstrings hold the reference's examples, by layer folder.
MODULES = (
    "theory/ipv.py",
    "theory/exhaustive.py",
    "numerics/predictive.py",
    "numerics/selection.py",
    "numerics/jacobians.py",
    "networks/training.py",
    "networks/models.py",
    "studies/runner.py",
    "studies/spec.py",
    "benchmarks/_harness.py",
    "paper_checks/verification/decisions.py",
)


def docstrings(path: Path) -> list[tuple[str, str, int]]:
    """(qualified name, raw docstring, line) of the module and of every function, class
    and method defined in ``path`` that has a docstring."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[str, str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        doc = ast.get_docstring(node, clean=False)  # type: ignore[arg-type]
        if doc is not None:
            found.append((prefix, doc, node.body[0].lineno))  # type: ignore[attr-defined]
        for child in node.body:  # type: ignore[attr-defined]
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                visit(child, f"{prefix}.{child.name}")

    visit(tree, path.relative_to(ROOT).with_suffix("").as_posix().replace("/", "."))
    return found


def doctests(path: Path) -> list[doctest.DocTest]:
    dotted = path.relative_to(ROOT).with_suffix("").as_posix().replace("/", ".")
    module = importlib.import_module(f"laplace_lab.{dotted}")
    parser = doctest.DocTestParser()
    tests = []
    for name, doc, line in docstrings(path):
        test = parser.get_doctest(doc, dict(vars(module)), name, str(path), line)
        if test.examples:
            tests.append(test)
    return tests


@pytest.mark.parametrize("module", MODULES)
def test_examples_run_and_print_what_they_show(module):
    tests = doctests(ROOT / module)
    assert tests, f"{module} has no >>> examples"
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    report = io.StringIO()
    for test in tests:
        runner.run(test, out=report.write)
    assert runner.failures == 0, report.getvalue()


def test_a_wrong_printed_value_fails():
    """The runner catches a mismatch: the same check on an example whose output is wrong."""
    doc = ">>> round(0.1 + 0.2, 6)\n0.4\n"
    test = doctest.DocTestParser().get_doctest(doc, {}, "wrong", "wrong.py", 0)
    runner = doctest.DocTestRunner()
    runner.run(test, out=io.StringIO().write)
    assert runner.failures == 1
