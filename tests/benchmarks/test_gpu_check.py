"""The GPU check's logic on a machine without a GPU: install, tests, bench, JSON, status."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from laplace_lab.benchmarks._harness import Row
from laplace_lab.benchmarks.gpu_check import junit_counts, row_record, run_check

ROOT = Path(__file__).resolve().parents[2]

TESTS = """
import pytest

@pytest.mark.gpu
def test_passes():
    assert 1 + 1 == 2

@pytest.mark.gpu
def test_skips():
    pytest.skip("no CUDA device")

def test_not_a_gpu_test():
    raise AssertionError("deselected: not marked gpu")
"""


def _tests(root: Path, body: str = TESTS) -> Path:
    (root / "tests" / "numerics").mkdir(parents=True)
    (root / "tests" / "__init__.py").write_text("")
    (root / "tests" / "numerics" / "__init__.py").write_text("")
    (root / "tests" / "numerics" / "test_toy.py").write_text(body)
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")  # registers the gpu marker
    return root / "tests"


def _has_cuda() -> bool:
    try:
        import cupy
    except ImportError:
        return False
    return bool(cupy.cuda.is_available())


@pytest.mark.skipif(_has_cuda(), reason="checks the no-device path")
def test_script_installs_runs_and_writes_a_skipped_record(tmp_path):
    tests = _tests(tmp_path / "src")
    out = tmp_path / "out"
    env = {**os.environ, "PYTHON": sys.executable, "GPU_CHECK_TESTS": str(tests)}
    proc = subprocess.run(
        ["bash", "benchmarks/gpu_check.sh", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record = json.loads((out / "gpu_check.json").read_text())
    assert record["status"] == "skipped"
    assert record["device"]["cuda"] is False
    assert (record["tests"]["passed"], record["tests"]["skipped"]) == (1, 1)
    assert record["tests"]["failed"] == 0 and record["bench"]["rows"] == []
    assert "skipped" in record["bench"]  # the reason, never a guessed number
    assert record["versions"]["laplace_lab"] is not None  # the installed copy was imported
    assert "gpu check: skipped" in proc.stdout
    assert (out / "gpu_check.log").read_text().count("1 passed") == 1


def test_a_failing_gpu_test_fails_the_check(tmp_path):
    body = "import pytest\n\n@pytest.mark.gpu\ndef test_wrong():\n    assert 1 == 2\n"
    tests = _tests(tmp_path / "src", body)
    record = run_check(tmp_path / "out", tests / "numerics", timeout=120)
    assert record["status"] == "failed"
    assert record["tests"]["failed"] == 1
    saved = json.loads((tmp_path / "out" / "gpu_check.json").read_text())
    assert saved["status"] == "failed"


def test_junit_counts_and_row_records(tmp_path):
    xml = tmp_path / "r.xml"
    xml.write_text(
        '<testsuites><testsuite tests="5" failures="1" errors="1" skipped="2"/></testsuites>'
    )
    assert junit_counts(xml) == {"tests": 5, "failed": 1, "errors": 1, "skipped": 2, "passed": 1}
    row = row_record(Row("kernel", 0.5, "numpy", 2.0, min_ratio=1.0, correct=True))
    assert row["ratio"] == 4.0 and row["passed"] is True
    nan = row_record(Row("kernel", 0.0, "numpy", 2.0, min_ratio=1.0, correct=False))
    assert nan["ratio"] is None and nan["passed"] is False


def test_script_refuses_to_run_outside_the_repository(tmp_path):
    proc = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu_check.sh"), str(tmp_path / "out")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "run it from the repository root" in proc.stderr
