"""The scoreboard's run, shared: every installed library on every case at seed 0, once.

The scoreboard test compares the committed page with this run, and each library's tests
read that library's validation from it instead of validating it again. The modules that use
it are marked ``pytest.mark.xdist_group("scoreboard")`` (``--dist loadgroup``), so one
worker makes the run once.
"""

from __future__ import annotations

import pytest

from laplace_lab.conformance.scoreboard import Scoreboard, run_scoreboard


@pytest.fixture(scope="session")
def scoreboard_run() -> Scoreboard:
    """Every installed library on every case at seed 0."""
    return run_scoreboard(seed=0)


@pytest.fixture(scope="session")
def validations(scoreboard_run):
    """Each installed library's validation in :func:`scoreboard_run`, by name."""
    return {run.library.name: run.validation for run in scoreboard_run.runs}
