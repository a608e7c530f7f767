"""One command for a short GPU lease: the device's facts, the GPU tests, the GPU bench rows.

``python -m laplace_lab.benchmarks.gpu_check OUT [--tests DIR] [--full] [--timeout S]``
writes to the folder ``OUT``:

- ``gpu_check.json``: the device (name, memory, driver), the versions of Python, NumPy,
  CuPy, torch and laplace-lab, the GPU tests' counts (passed, failed, skipped, errors) and
  the rows of ``laplace-lab bench --only gpu`` (ours, baseline, ratio, target, correct,
  note), the wall time of each step and an overall ``status``: ``"passed"``, ``"failed"``
  (a GPU test failed, a row gave a wrong answer or a step errored) or ``"skipped"`` (no
  CUDA device: the tests skip and the bench rows are not measured; nothing is guessed);
- ``gpu_check.log``: everything the steps printed;
- ``gpu_tests.xml``: the tests' JUnit report.

The GPU tests are those marked ``gpu`` (CuPy kernels against dense NumPy references, CUDA
Jacobians, the DLPack hand-off). The bench's NumPy baseline uses every core of the host
(BLAS threads unlimited): a GPU compared against one CPU thread would flatter the GPU.
The exit status is 0 when ``status`` is ``"passed"`` or ``"skipped"``, 1 otherwise.
``benchmarks/gpu_check.sh`` installs the package beside a preinstalled CuPy/torch and runs
this module; both run on a machine without a GPU (the test suite does so).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import platform
import subprocess
import sys
import time
import traceback
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["device_facts", "junit_counts", "main", "row_record", "run_check"]


def _version(module: str) -> str | None:
    try:
        mod = __import__(module)
    except Exception:  # not installed, or broken beside this interpreter
        return None
    return str(getattr(mod, "__version__", "unknown"))


def device_facts() -> dict[str, Any]:
    """The CUDA device seen by CuPy and torch (``None`` fields where there is none)."""
    facts: dict[str, Any] = {"cuda": False, "name": None, "memory_gib": None, "driver": None}
    try:
        import cupy

        if cupy.cuda.is_available():
            props = cupy.cuda.runtime.getDeviceProperties(0)
            name = props["name"]
            facts.update(
                cuda=True,
                name=name.decode() if isinstance(name, bytes) else str(name),
                memory_gib=round(props["totalGlobalMem"] / 2**30, 1),
                driver=cupy.cuda.runtime.driverGetVersion(),
            )
    except Exception as err:  # CuPy missing or its CUDA libraries not loadable
        facts["cupy_error"] = f"{type(err).__name__}: {err}"
    try:
        import torch

        facts["torch_cuda"] = bool(torch.cuda.is_available())
        if facts["torch_cuda"] and facts["name"] is None:
            facts["name"] = torch.cuda.get_device_name(0)
    except Exception as err:
        facts["torch_error"] = f"{type(err).__name__}: {err}"
    return facts


def junit_counts(path: Path) -> dict[str, int]:
    """(tests, passed, failed, errors, skipped) of a pytest JUnit XML report."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    counts = {"tests": 0, "failed": 0, "errors": 0, "skipped": 0}
    for suite in suites:
        counts["tests"] += int(suite.get("tests", 0))
        counts["failed"] += int(suite.get("failures", 0))
        counts["errors"] += int(suite.get("errors", 0))
        counts["skipped"] += int(suite.get("skipped", 0))
    counts["passed"] = counts["tests"] - counts["failed"] - counts["errors"] - counts["skipped"]
    return counts


def row_record(row: Any) -> dict[str, Any]:
    """A benchmark ``Row`` as JSON-ready data (NaN ratios as ``None``)."""
    ratio = row.ratio
    return {
        "name": row.name,
        "ours": row.ours,
        "baseline": row.baseline,
        "baseline_value": row.baseline_value,
        "unit": row.unit,
        "ratio": None if math.isnan(ratio) else ratio,
        "min_ratio": row.min_ratio,
        "correct": bool(row.correct),
        "passed": bool(row.passed),
        "note": row.note,
    }


def _run_tests(tests: Path, out: Path, timeout: float, log: io.TextIOBase) -> dict[str, Any]:
    xml = out / "gpu_tests.xml"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-m",
        "gpu",
        "-p",
        "no:cacheprovider",
        f"--junitxml={xml}",
        str(tests),
    ]
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd,
            cwd=tests.parent,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    except subprocess.TimeoutExpired as err:
        log.write(f"GPU tests stopped after {timeout:.0f} s\n")
        for part in (err.stdout, err.stderr):
            if part:
                log.write(part if isinstance(part, str) else part.decode(errors="replace"))
        return {"error": f"timed out after {timeout:.0f} s", "wall_s": timeout}
    log.write(proc.stdout + proc.stderr)
    result: dict[str, Any] = {"returncode": proc.returncode}
    if xml.exists():
        result.update(junit_counts(xml))
    else:
        result["error"] = f"pytest wrote no report (exit {proc.returncode})"
    result["wall_s"] = round(time.perf_counter() - start, 2)
    return result


def _run_bench(full: bool, log: io.TextIOBase) -> dict[str, Any]:
    from threadpoolctl import threadpool_limits

    from laplace_lab.benchmarks._harness import BenchmarkSkipped, format_table
    from laplace_lab.benchmarks.bench_gpu import run

    start = time.perf_counter()
    try:
        with threadpool_limits(limits=None, user_api="blas"):
            rows = run(full=full)
    except BenchmarkSkipped as skip:
        log.write(f"GPU bench skipped: {skip}\n")
        return {"skipped": str(skip), "rows": []}
    except Exception:
        log.write(traceback.format_exc())
        return {"error": traceback.format_exc().strip().splitlines()[-1], "rows": []}
    log.write(format_table(rows) + "\n")
    return {
        "rows": [row_record(r) for r in rows],
        "blas_threads": "unlimited",
        "cpu_count": os.cpu_count(),
        "wall_s": round(time.perf_counter() - start, 2),
    }


def _status(facts: dict[str, Any], tests: dict[str, Any], bench: dict[str, Any]) -> str:
    broken = (
        "error" in tests
        or tests.get("failed", 0)
        or tests.get("errors", 0)
        or "error" in bench
        or any(not r["correct"] for r in bench["rows"])
    )
    if broken:
        return "failed"
    return "passed" if facts["cuda"] else "skipped"


def run_check(
    out: Path, tests: Path | None, *, full: bool = False, timeout: float = 360.0
) -> dict[str, Any]:
    """Run every step; write ``gpu_check.json`` and ``gpu_check.log`` under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    log = io.StringIO()
    start = time.perf_counter()
    facts = device_facts()
    log.write(f"device: {json.dumps(facts)}\n")
    if tests is None:
        test_result: dict[str, Any] = {"skipped": "no test folder given"}
    else:
        test_result = _run_tests(tests, out, timeout, log)
    with contextlib.redirect_stdout(log):
        bench = _run_bench(full, log)
    record = {
        "device": facts,
        "host": {"machine": platform.machine(), "cpu_count": os.cpu_count()},
        "versions": {
            "python": platform.python_version(),
            **{m: _version(m) for m in ("numpy", "scipy", "cupy", "torch", "laplace_lab")},
        },
        "tests": test_result,
        "bench": bench,
        "full": full,
        "wall_s": round(time.perf_counter() - start, 2),
    }
    record["status"] = _status(facts, test_result, bench)
    (out / "gpu_check.log").write_text(log.getvalue())
    (out / "gpu_check.json").write_text(json.dumps(record, indent=2) + "\n")
    return record


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; prints the log and a one-line summary."""
    parser = argparse.ArgumentParser(prog="python -m laplace_lab.benchmarks.gpu_check")
    parser.add_argument("out", type=Path, help="folder for gpu_check.json and gpu_check.log")
    parser.add_argument("--tests", type=Path, help="the repository's tests/ folder")
    parser.add_argument("--full", action="store_true", help="the bench's large sizes")
    parser.add_argument(
        "--timeout", type=float, default=360.0, help="seconds allowed for the GPU tests"
    )
    args = parser.parse_args(argv)
    if args.tests is not None and not args.tests.is_dir():
        parser.error(f"--tests: {args.tests} is not a folder")
    if not args.timeout > 0:
        parser.error(f"--timeout must be positive, got {args.timeout}")
    record = run_check(args.out, args.tests, full=args.full, timeout=args.timeout)
    print((args.out / "gpu_check.log").read_text(), end="")
    t = record["tests"]
    print(
        f"gpu check: {record['status']} on {record['device']['name'] or 'no CUDA device'}; "
        f"tests {t.get('passed', 0)} passed, {t.get('failed', 0)} failed, "
        f"{t.get('skipped', 0)} skipped; {len(record['bench']['rows'])} bench rows; "
        f"{record['wall_s']:.0f} s"
    )
    return 0 if record["status"] in ("passed", "skipped") else 1


if __name__ == "__main__":
    raise SystemExit(main())
