"""A study of one's own on a Dask cluster of one's own: the workers are started without the
plugin module on their path; a one-file plugin is sent to them, a package is named in one
line."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def cluster(tmp_path):
    """A scheduler and one worker whose path holds laplace-lab but not the plugins."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    quiet = dict(env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs = [
        subprocess.Popen(
            [
                BIN / "dask",
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--no-dashboard",
            ],
            **quiet,
        ),
        subprocess.Popen(
            [
                BIN / "dask",
                "worker",
                address,
                "--nthreads",
                "1",
                "--no-nanny",
                "--no-dashboard",
                "--local-directory",
                str(tmp_path / "worker"),
            ],
            **quiet,
        ),
    ]
    try:
        from distributed import Client

        end = time.monotonic() + 60
        while time.monotonic() < end:
            try:
                with Client(address, timeout=5) as client:
                    if client.scheduler_info()["workers"]:
                        break
            except OSError:
                pass
            time.sleep(0.2)
        yield address
    finally:
        for p in procs:
            p.kill()
            p.wait()


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
