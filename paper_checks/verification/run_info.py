"""What a verification run ran on: commit, package versions, Python, CPU and threads, mode.

The report prints it in its header and footer, and ``verdicts.json`` carries it as its ``meta``
object (:data:`laplace_lab.paper_checks.verification.report.VERDICT_SCHEMA`), so a reader can tell
which code, on which machine, produced a verdict.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["PACKAGES", "run_metadata", "usable_cpus"]

#: Distributions whose versions decide the numbers (missing ones are left out).
PACKAGES = (
    "laplace-lab",
    "numpy",
    "scipy",
    "matplotlib",
    "torch",
    "scikit-learn",
    "statsmodels",
    "threadpoolctl",
)


def _git(*args: str) -> str | None:
    root = Path(__file__).resolve().parents[1]
    try:
        out = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the system says, else all)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _threads() -> dict[str, Any]:
    """CPUs usable by this process and the thread pools of the numeric libraries."""
    out: dict[str, Any] = {"cpu_count": os.cpu_count(), "usable_cpus": usable_cpus()}
    try:
        from threadpoolctl import threadpool_info

        out["blas"] = [
            f"{p.get('internal_api')} {p.get('version') or ''}".strip()
            + f": {p.get('num_threads')} threads"
            for p in threadpool_info()
        ]
    except ImportError:
        out["blas"] = []
    torch = sys.modules.get("torch")  # reported only when a claim imported it
    out["torch_threads"] = torch.get_num_threads() if torch is not None else None
    return out


def run_metadata(
    *,
    full: bool,
    seed: int,
    mutants: str,
    seconds: float,
    started: datetime.datetime,
    command: str = "",
) -> dict[str, Any]:
    """The ``meta`` object of a run (JSON-ready).

    Parameters
    ----------
    full : bool
        Full mode (the papers' sizes) or quick mode.
    seed : int
        The base seed of every claim's streams.
    mutants : str
        Which mutants ran: ``"none"``, ``"light"`` or ``"all"``.
    seconds : float
        Wall time of the whole run.
    started : datetime
        When the run started (timezone-aware).
    command : str
        The command line that ran it.
    """
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no")
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return {
        "mode": "full" if full else "quick",
        "seed": int(seed),
        "mutants": mutants,
        "date": started.astimezone(datetime.UTC).isoformat(timespec="seconds"),
        "seconds": round(float(seconds), 1),
        "commit": commit or "unknown",
        "commit_dirty": bool(status) if status is not None else None,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "threads": _threads(),
        "load": _load(),
        "packages": versions,
        "command": command,
    }


def _load() -> dict[str, float] | None:
    """The machine's load averages over 1, 5 and 15 minutes at the end of the run (the 15-minute
    one covers most of a quick run), with the cores to read them against."""
    try:
        one, five, fifteen = os.getloadavg()
    except (AttributeError, OSError):
        return None
    return {"1min": one, "5min": five, "15min": fifteen, "cores": os.cpu_count() or 1}
