"""The conformance scoreboard: every installed library of :data:`LIBRARIES` on every case.

    laplace-lab validate --scoreboard [--out DIR] [--seed S] [--case NAME ...]

:func:`run_scoreboard` validates each installed library; :func:`scoreboard_payload` is the
result as one JSON object (valid against :data:`SCOREBOARD_SCHEMA`); :func:`write_scoreboard`
writes ``scoreboard.json``, ``scoreboard.html``, ``scoreboard.md`` and one stand-alone
reproducer per FAIL and ERROR, ``reproducers/<library>/<case>.py``, which needs the library
and not laplace-lab (:mod:`~laplace_lab.conformance.standalone`). Five statuses: PASS, FAIL,
ERROR (the library crashed or answered outside the contract on what it offers), N/A (not
offered: the adapter refused the request before calling the library, with the reason) and
SKIP (the capability is not declared). Each finding has an id unique across libraries
(``"laplace-torch F1"``), the same in ``docs/validation.md``, and a kind (bug, documented
limitation, default, not offered: :data:`~laplace_lab.conformance.libraries.FINDING_KINDS`).
Given the seed, every part but ``generated`` (date, commit, run times) is the same on every
run, up to the rounding of the error-to-tolerance ratios (two significant digits).
"""

from __future__ import annotations

import datetime
import subprocess
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from laplace_lab._checks import integer
from laplace_lab.conformance.libraries import FINDING_KINDS, LIBRARIES, Library
from laplace_lab.conformance.registry import CaseResult, Outcome
from laplace_lab.conformance.report import TOLERANCE_RULE
from laplace_lab.conformance.runner import Validation, validate
from laplace_lab.conformance.standalone import standalone_reproducer

__all__ = [
    "REGENERATE",
    "SCOREBOARD_SCHEMA",
    "LibraryRun",
    "Scoreboard",
    "case_names",
    "case_slug",
    "run_scoreboard",
    "scoreboard_payload",
    "statuses",
    "write_scoreboard",
]

#: The command that regenerates the committed page (docs/scoreboard.md and its files).
REGENERATE = "laplace-lab validate --scoreboard --seed 0 --out docs"


@dataclass(frozen=True)
class LibraryRun:
    """One library's validation and how long it took."""

    library: Library
    validation: Validation
    seconds: float


@dataclass(frozen=True)
class Scoreboard:
    """The libraries that ran, and those that are not installed."""

    seed: int
    runs: tuple[LibraryRun, ...]
    not_installed: tuple[Library, ...]


def run_scoreboard(
    libraries: Iterable[str] | None = None,
    *,
    seed: int = 0,
    only: Iterable[str] | None = None,
    progress: Callable[[str, CaseResult], Any] | None = None,
) -> Scoreboard:
    """Validate every installed library on the cases.

    Parameters
    ----------
    libraries : iterable of str, optional
        Names of :data:`LIBRARIES` (all when None).
    seed : int
        ≥ 0: rebuilds every case.
    only : iterable of str, optional
        Case names or prefixes, as in :func:`~laplace_lab.conformance.validate`.
    progress : callable, optional
        Called with the library's name and each :class:`CaseResult`.

    Returns
    -------
    Scoreboard
    """
    seed = integer(seed, "seed", low=0)
    names = list(LIBRARIES) if libraries is None else list(libraries)
    unknown = [n for n in names if n not in LIBRARIES]
    if unknown:
        raise ValueError(f"libraries must be among {list(LIBRARIES)}; got {unknown}")
    runs, missing = [], []
    for name in names:
        library = LIBRARIES[name]
        if not library.installed():
            missing.append(library)
            continue
        report = None if progress is None else (lambda r, n=name: progress(n, r))
        start = time.perf_counter()
        validation = validate(library.target, only=only, seed=seed, progress=report)
        runs.append(LibraryRun(library, validation, time.perf_counter() - start))
    return Scoreboard(seed, tuple(runs), tuple(missing))


def case_slug(name: str) -> str:
    """A case's reproducer file stem: ``predictive/mlp-binary`` → ``predictive-mlp-binary``."""
    return name.replace("/", "-")


def _reproducer_path(library: str, case: str) -> str:
    return f"reproducers/{library}/{case_slug(case)}.py"


def _ratio(result: CaseResult) -> float | None:
    value = result.details.get("max_error_over_tolerance")
    if value is None or result.outcome in (Outcome.SKIP, Outcome.ERROR):
        return None
    return float(f"{float(value):.2g}")


def _reason(text: str) -> str:
    """The whole summary on one line (nothing cut)."""
    return " ".join(text.split())


def _commit() -> str:
    root = Path(__file__).resolve().parents[1]
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=12"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def _library_payload(run: LibraryRun, reproducers: bool = True) -> dict[str, Any]:
    lib, v = run.library, run.validation
    results = []
    for r in v.results:
        finding = lib.finding(r.case.name) if r.outcome is not Outcome.PASS else None
        results.append(
            {
                "case": r.case.name,
                "status": r.outcome.value,
                "ratio": _ratio(r),
                "reason": _reason(r.summary),
                "reproducer": (
                    _reproducer_path(lib.name, r.case.name)
                    if r.reproducer and reproducers
                    else None
                ),
                "finding": None if finding is None else finding.id,
            }
        )
    return {
        "library": lib.name,
        "distribution": lib.distribution,
        "version": lib.version(),
        "versions": lib.versions(),
        "target": lib.target,
        "counts": v.counts(),
        "results": results,
    }


def scoreboard_payload(
    board: Scoreboard, *, date: str | None = None, reproducers: bool = True
) -> dict[str, Any]:
    """The scoreboard as one JSON object (:data:`SCOREBOARD_SCHEMA`).

    Parameters
    ----------
    board : Scoreboard
    date : str, optional
        The ISO date in ``generated`` (today, UTC, when None).
    reproducers : bool
        Whether each FAIL and ERROR names its reproducer file (False: none is written).

    Returns
    -------
    dict
    """
    if not isinstance(board, Scoreboard):
        raise TypeError(f"board must be a Scoreboard; got {type(board).__name__}")
    cases: dict[str, dict[str, Any]] = {}
    for run in board.runs:
        for r in run.validation.results:
            cases.setdefault(
                r.case.name,
                {
                    "case": r.case.name,
                    "capability": r.case.capability,
                    "method": r.case.method,
                    "problem": r.case.problem,
                    "description": r.case.description,
                },
            )
    today = date or datetime.datetime.now(datetime.UTC).date().isoformat()
    return {
        "seed": board.seed,
        "command": REGENERATE.replace("--seed 0", f"--seed {board.seed}"),
        "tolerance_rule": TOLERANCE_RULE,
        "generated": {
            "date": today,
            "commit": _commit(),
            "seconds": {run.library.name: round(run.seconds, 1) for run in board.runs},
        },
        "cases": list(cases.values()),
        "libraries": [_library_payload(run, reproducers) for run in board.runs],
        "not_installed": [
            {"library": lib.name, "install": lib.install} for lib in board.not_installed
        ],
        "findings": [
            {
                "id": f.id,
                "library": run.library.name,
                "kind": f.kind,
                "title": f.title,
                "link": f.link,
            }
            for run in board.runs
            for f in run.library.findings
        ],
    }


def _reproducers(board: Scoreboard, out: Path) -> dict[Path, str]:
    """Every FAIL's and ERROR's stand-alone reproducer (:mod:`.standalone`) by its path."""
    return {
        out / _reproducer_path(run.library.name, r.case.name): standalone_reproducer(
            run.library, r, board.seed
        )
        for run in board.runs
        for r in run.validation.results
        if r.reproducer
    }


def _write_reproducers(board: Scoreboard, texts: dict[Path, str], out: Path) -> list[Path]:
    for run in board.runs:
        folder = out / "reproducers" / run.library.name
        for stale in folder.glob("*.py") if folder.is_dir() else ():
            stale.unlink()  # cases that pass now leave no reproducer behind
    for path, text in texts.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return list(texts)


def write_scoreboard(
    board: Scoreboard, out_dir: Path | str, *, date: str | None = None, reproducers: bool = True
) -> dict[str, Any]:
    """Write ``scoreboard.json``, ``scoreboard.html``, ``scoreboard.md`` and the reproducers.

    The ``*.py`` files already in ``reproducers/<library>/`` of a library that ran are
    replaced, so the folder holds the reproducers of this run only. Each is stand-alone
    (:func:`~laplace_lab.conformance.standalone.standalone_reproducer`): a FAIL or ERROR of a
    (library, capability) without a template raises a ValueError before anything is written.

    Parameters
    ----------
    board : Scoreboard
    out_dir : path
        The folder (created if needed).
    date : str, optional
        As in :func:`scoreboard_payload`.
    reproducers : bool
        False: the pages alone, no reproducer (the versions page reads ``scoreboard.json``
        only, and an older version may fail where no template exists).

    Returns
    -------
    dict
        Paths keyed by ``"json"``, ``"html"``, ``"markdown"`` and ``"reproducers"`` (a list).
    """
    import json

    from laplace_lab.conformance.scoreboard_page import scoreboard_html, scoreboard_markdown

    payload = scoreboard_payload(board, date=date, reproducers=reproducers)
    out = Path(out_dir)
    # a finding without a template raises before any write
    texts = _reproducers(board, out) if reproducers else {}
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Any] = {
        "json": out / "scoreboard.json",
        "html": out / "scoreboard.html",
        "markdown": out / "scoreboard.md",
    }
    paths["json"].write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", "utf-8")
    paths["html"].write_text(scoreboard_html(payload), encoding="utf-8")
    paths["markdown"].write_text(scoreboard_markdown(payload), encoding="utf-8")
    paths["reproducers"] = _write_reproducers(board, texts, out) if reproducers else []
    return paths


def _schema_result() -> dict[str, Any]:
    nullable = {"type": ["string", "null"]}
    return {
        "type": "object",
        "required": ["case", "status", "ratio", "reason", "reproducer", "finding"],
        "properties": {
            "case": {"type": "string", "minLength": 1},
            "status": {"enum": [o.value for o in Outcome]},
            "ratio": {"type": ["number", "null"], "minimum": 0},
            "reason": {"type": "string"},
            "reproducer": nullable,
            "finding": nullable,
        },
        "additionalProperties": False,
    }


def _strings(*names: str) -> dict[str, Any]:
    return {n: {"type": "string"} for n in names}


#: The JSON Schema of ``scoreboard.json``.
SCOREBOARD_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "laplace-lab conformance scoreboard",
    "type": "object",
    "required": [
        "seed",
        "command",
        "tolerance_rule",
        "generated",
        "cases",
        "libraries",
        "not_installed",
        "findings",
    ],
    "properties": {
        "seed": {"type": "integer", "minimum": 0},
        "command": {"type": "string"},
        "tolerance_rule": {"type": "string"},
        "generated": {
            "type": "object",
            "required": ["date", "commit", "seconds"],
            "properties": {
                **_strings("date", "commit"),
                "seconds": {"type": "object", "additionalProperties": {"type": "number"}},
            },
        },
        "cases": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["case", "capability", "method", "problem", "description"],
                "properties": {
                    **_strings("case", "capability", "problem", "description"),
                    "method": {"type": ["string", "null"]},
                },
            },
        },
        "libraries": {
            "type": "array",
            "items": {
                "type": "object",
                "required": [
                    "library",
                    "distribution",
                    "version",
                    "versions",
                    "target",
                    "counts",
                    "results",
                ],
                "properties": {
                    **_strings("library", "distribution", "version", "target"),
                    "versions": {"type": "object", "additionalProperties": {"type": "string"}},
                    "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
                    "results": {"type": "array", "items": _schema_result()},
                },
            },
        },
        "not_installed": {
            "type": "array",
            "items": {"type": "object", "properties": _strings("library", "install")},
        },
        "findings": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "library", "kind", "title", "link"],
                "properties": {
                    **_strings("id", "library", "title", "link"),
                    "kind": {"enum": list(FINDING_KINDS)},
                },
                "additionalProperties": False,
            },
        },
    },
    "additionalProperties": False,
}


def statuses(payload: dict[str, Any]) -> dict[tuple[str, str], str]:
    """(library, case) → status of a scoreboard payload (what the committed page asserts)."""
    return {
        (lib["library"], r["case"]): r["status"]
        for lib in payload["libraries"]
        for r in lib["results"]
    }


def case_names(payload: dict[str, Any]) -> Sequence[str]:
    """The cases of a scoreboard payload, in its order."""
    return [c["case"] for c in payload["cases"]]
