"""The conformance suite as pytest tests, for a Laplace library's own CI.

Installed with laplace-lab (the ``pytest11`` entry point ``laplace_lab``), the plugin is inert
until asked: ``pytest --laplace-target PKG.MODULE:CALLABLE`` (a callable following the
contract of :mod:`laplace_lab.conformance.contract`, or a library name the scoreboard scores,
e.g. ``laplace-torch``) adds one test per conformance case, with the id
``laplace-conformance::<case>``. A failing case fails its test with the case's summary (the
finding: what was compared, the worst entry, the tolerance, a named bug where one fits) and
the stand-alone reproducer; a case whose capability the target does not declare (SKIP), or
whose request it does not offer (N/A: its adapter raised ``NotOffered`` before calling the
library), is skipped with the reason. ``--laplace-case PREFIX`` (repeatable) runs some cases
only; ``-m laplace_conformance`` selects the suite's tests alone; ``--junitxml`` reports them
as any other test.

Example, in a library's CI::

    pip install laplace-lab
    pytest -m laplace_conformance --laplace-target mylib.adapter:predictive_variance \\
        --junitxml=laplace-conformance.xml
"""

from __future__ import annotations

from typing import Any

import pytest

__all__ = [
    "ConformanceCase",
    "ConformanceSuite",
    "pytest_addoption",
    "pytest_collection_modifyitems",
]

#: The marker of the suite's tests (``-m laplace_conformance`` selects them alone).
MARKER = "laplace_conformance"


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--laplace-target``, ``--laplace-case`` and ``--laplace-seed``."""
    group = parser.getgroup("laplace-lab", "Laplace conformance suite (laplace-lab)")
    group.addoption(
        "--laplace-target",
        metavar="MODULE:CALLABLE",
        help="run the Laplace conformance cases on this target (or a scored library's name)",
    )
    group.addoption(
        "--laplace-case",
        action="append",
        metavar="PREFIX",
        help="only the cases whose name starts with PREFIX (repeatable)",
    )
    group.addoption("--laplace-seed", type=int, default=0, help="problem seed (default: 0)")


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker."""
    config.addinivalue_line("markers", f"{MARKER}: a Laplace conformance case (laplace-lab)")


class ConformanceFailure(Exception):
    """A case that failed or errored: its summary and reproducer."""


def _target(spec: str) -> Any:
    """``MODULE:CALLABLE``, or the name of a library the scoreboard scores."""
    if ":" in spec:
        from laplace_lab.conformance.contract import load_target

        return load_target(spec)
    from laplace_lab.conformance.libraries import LIBRARIES

    if spec not in LIBRARIES:
        raise pytest.UsageError(
            f"--laplace-target must be MODULE:CALLABLE or one of {', '.join(sorted(LIBRARIES))}; "
            f"got {spec!r}"
        )
    return LIBRARIES[spec].target


class ConformanceCase(pytest.Item):
    """One conformance case on the target."""

    def __init__(self, *, case: Any, target: Any, seed: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case, self.target, self.seed = case, target, seed
        self.add_marker(MARKER)

    def runtest(self) -> None:
        """Run the case; skip when the target does not offer its capability."""
        from laplace_lab.conformance.registry import Outcome
        from laplace_lab.conformance.runner import validate

        (result,) = validate(self.target, only=[self.case.name], seed=self.seed).results
        if result.outcome is Outcome.PASS:
            return
        if result.outcome in (Outcome.SKIP, Outcome.NA):
            pytest.skip(f"{self.case.name}: {result.outcome.value}: {result.summary}")
        raise ConformanceFailure(
            f"{result.outcome.value}: {self.case.name}: {result.summary}\n\n"
            f"Reproducer (runs on its own):\n{result.reproducer}"
        )

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style=None) -> str:
        """The case's summary and reproducer, without a traceback of the suite."""
        if isinstance(excinfo.value, ConformanceFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[str, int, str]:
        """Where the case is registered, for pytest's report."""
        return self.case.name, 0, f"laplace conformance: {self.case.name}"


class ConformanceSuite(pytest.Collector):
    """The parent of the cases' tests (node id ``laplace-conformance``)."""

    def collect(self) -> list[pytest.Item]:
        """The cases are made by :func:`pytest_collection_modifyitems`."""
        return []


@pytest.hookimpl(tryfirst=True)  # before pytest's own -m and -k selection
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Append one :class:`ConformanceCase` per selected case when ``--laplace-target`` is
    given (nothing otherwise)."""
    spec = config.getoption("--laplace-target")
    if not spec:
        return
    from laplace_lab.conformance.registry import cases, get_case

    target = _target(spec)
    prefixes = config.getoption("--laplace-case") or [""]
    names = [n for n in cases() if any(n.startswith(p) for p in prefixes)]
    if not names:
        raise pytest.UsageError(f"--laplace-case matches no case; got {prefixes}")
    seed = config.getoption("--laplace-seed")
    suite = ConformanceSuite.from_parent(
        session, name="laplace-conformance", nodeid="laplace-conformance"
    )
    new = [
        ConformanceCase.from_parent(
            suite,
            name=n,
            case=get_case(n),
            target=target,
            seed=seed,
        )
        for n in names
    ]
    items.extend(new)
