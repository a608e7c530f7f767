"""`make test` runs the claims of a unit of work and their mutants on one worker
(``--dist loadgroup``), so that a mutant reuses the experiments its claim computed. A pytest
and pytest-xdist pair under which the groups are split doubles the suite's time silently:
this test runs a grouped file on two workers and asserts each group stayed on one."""

from __future__ import annotations

import subprocess
import sys

GROUPED = """
import os

import pytest


@pytest.mark.parametrize("i", range(6))
@pytest.mark.xdist_group("left")
def test_left(i):
    open(f"LEFT-{os.environ['PYTEST_XDIST_WORKER']}-{i}", "w").close()


@pytest.mark.parametrize("i", range(6))
@pytest.mark.xdist_group("right")
def test_right(i):
    open(f"RIGHT-{os.environ['PYTEST_XDIST_WORKER']}-{i}", "w").close()
"""


def test_a_group_of_tests_runs_on_one_worker(tmp_path):
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "2",
            "--dist",
            "loadgroup",
            "-s",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "test_grouped.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    workers = {
        side: {p.name.split("-")[1] for p in tmp_path.glob(f"{side}-*")}
        for side in ("LEFT", "RIGHT")
    }
    assert all(len(w) == 1 for w in workers.values()), workers
