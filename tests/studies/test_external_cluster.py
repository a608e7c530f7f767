"""A study of one's own on a Dask cluster of one's own: the workers are started without the
plugin module on their path; a one-file plugin is sent to them, a package is named in one
line."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.dask_cluster import BIN, dask_cluster

pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parents[2]
STUDY = """
import numpy as np

from laplace_lab.studies.registry import register
from laplace_lab.studies.spec import Study


def run_one(params, *, rng):
    return {"draw": float(rng.normal(params["mu"], 1.0))}


register(Study(name="NAME", description="a normal draw", grid={"mu": (0.0, 1.0)},
               full_grid={"mu": (0.0, 1.0)}, replications=3, full_replications=3,
               run_one=run_one))
"""


@pytest.fixture
def cluster(tmp_path):
    """A scheduler and one worker whose path holds laplace-lab but not the plugins."""
    with dask_cluster({**os.environ, "PYTHONPATH": str(ROOT)}, tmp_path, 1) as (address, _):
        yield address


def _study_run(tmp_path: Path, address: str, module: str, name: str):
    plugins = tmp_path / "plugins"
    argv = [BIN / "laplace-lab", "study", "run", name, "--plugin", module, "--executor", "dask"]
    argv += ["--scheduler", address, "--store", str(tmp_path / f"{name}.sqlite")]
    return subprocess.run(
        argv,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(plugins), str(ROOT)])},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_one_file_plugin_is_sent_to_the_workers_and_a_package_is_named(cluster, tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "my_study.py").write_text(STUDY.replace("NAME", "my-normal"))
    run = _study_run(tmp_path, cluster, "my_study", "my-normal")
    assert run.returncode == 0, run.stderr
    (plugins / "my_pkg").mkdir()
    (plugins / "my_pkg" / "__init__.py").write_text(STUDY.replace("NAME", "pkg-normal"))
    run = _study_run(tmp_path, cluster, "my_pkg", "pkg-normal")
    errors = [line for line in run.stderr.splitlines() if "error:" in line]  # beside the bar
    assert run.returncode != 0 and len(errors) == 1, run.stderr
    assert "module 'my_pkg'" in errors[0] and "cannot be imported on the Dask worker" in errors[0]
