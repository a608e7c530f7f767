"""The scoreboard's run, shared: every installed library on every case at seed 0, once
(but the heavy cases, which only the scoreboard's regeneration runs).

The scoreboard test compares the committed page with this run, and each library's tests
read that library's validation from it instead of validating it again. The modules that use
it are marked ``pytest.mark.xdist_group("scoreboard")`` (``--dist loadgroup``), so one
worker makes the run once.
"""

from __future__ import annotations

import pytest

from laplace_lab.conformance import cases
from laplace_lab.conformance.scoreboard import Scoreboard, run_scoreboard

#: The cases the test run leaves out (heavy: the scoreboard's regeneration runs them).
HEAVY = frozenset(name for name, case in cases().items() if case.heavy)


@pytest.fixture(scope="session")
def scoreboard_run() -> Scoreboard:
    """Every installed library on every case but the heavy ones at seed 0."""
    return run_scoreboard(seed=0, only=[n for n in cases() if n not in HEAVY])


@pytest.fixture(scope="session")
def validations(scoreboard_run):
    """Each installed library's validation in :func:`scoreboard_run`, by name."""
    return {run.library.name: run.validation for run in scoreboard_run.runs}
