"""The full-mode check recorded claim by claim: the paper-scale column of every report.

``laplace-lab check --full --record`` (``make full``) writes, for every claim the full run
decided (CONFIRMED, REFUTED or INCONCLUSIVE), one file ``recorded/full_<claim>.json`` beside
its paper's claims: the command, the commit, the date, the claim's seconds and CPU-hours, its
status and its decision with the replicates it rests on (:meth:`.decisions.Decision.as_json`).
A claim the full run could not decide here (ERROR, NOT_REPRODUCIBLE_HERE) writes nothing and
leaves an earlier record in place.

Every later check, quick mode included, attaches a claim's record to its verdict re-decided
under the current rules (:meth:`.decisions.Decision.redecided`): the report, RESULTS.md and
``verdicts.json`` show it as the paper-scale evidence, the quick verdict beside it. It counts
where the claim has no counting record of its own (a claim that reads a record of its own,
e.g. the Wheel bandit's 25-seed tables, keeps it) and where the full run's code is the code
that runs now: a record whose claim module changed since its commit is shown but does not
count, as the run it records is not the one this code would make.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from laplace_lab.paper_checks.verification.decisions import Decision
from laplace_lab.paper_checks.verification.kinds import Status
from laplace_lab.paper_checks.verification.recorded import Recorded, load_recorded

__all__ = ["PREFIX", "attach", "record_path", "write_records"]

#: The file name prefix of a claim's full-mode record in its paper's ``recorded/``.
PREFIX = "full_"
_DECIDED = (Status.CONFIRMED, Status.REFUTED, Status.INCONCLUSIVE)


def record_path(module: str, name: str) -> Path | None:
    """``recorded/full_<name>.json`` beside the module that registers the claim (None for a
    module without a file, e.g. one built in memory)."""
    source = getattr(sys.modules.get(module), "__file__", None)
    if source is None:
        return None
    return Path(source).with_name("recorded") / f"{PREFIX}{name}.json"


def _changed_since(path: Path, commit: str) -> bool:
    """Whether the claim's module file differs from its state at ``commit`` (True when git
    cannot say: an installed copy without history never counts a record as current)."""
    try:
        out = subprocess.run(
            ["git", "diff", "--quiet", commit, "--", path.name],
            cwd=path.parent,
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return True
    return out.returncode != 0


def write_records(outcomes: Sequence[Any], *, command: str, commit: str, date: str) -> list[Path]:
    """One record per claim the full run decided (module docstring; a claim module without a
    file has nowhere to keep one); the paths written. ``outcomes`` are the run's
    :class:`~laplace_lab.paper_checks.verification.outcome.Outcome` objects (not imported
    here: the registry imports this module, and the outcome module the registry)."""
    written = []
    for o in outcomes:
        v = o.verdict
        if v.status not in _DECIDED:
            continue
        decision = v.decision or Decision(
            o.claim.kind, v.status, "the full run's verdict", points=(v.full_reason,)
        )
        data = {
            "claim": o.claim.key,
            "mode": "full",
            "status": v.status.value,
            "seconds": round(o.seconds, 3),
            "cpu_hours": float(f"{o.seconds / 3600.0:.6g}"),  # one single-thread worker
            "decision": decision.as_json(),
            "measured": v.measured,
        }
        path = record_path(o.claim.func.__module__, o.claim.name)
        if path is None:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {
            "command": command,
            "commit": commit,
            "date": date,
            "summary": f"{v.status.value} in full mode: {v.full_reason}",
            "data": data,
        }
        path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", "utf-8")
        written.append(path)
    return written


def attach(module: str, name: str, recorded: tuple[Recorded, ...]) -> tuple[Recorded, ...]:
    """``recorded`` with the claim's full-mode record, re-decided, appended (unchanged when
    there is none). It counts when nothing in ``recorded`` counts and the claim's module is
    unchanged since the record's commit."""
    path = record_path(module, name)
    if path is None or not path.is_file():
        return recorded
    record = load_recorded(path)
    decision = Decision.redecided(dict(record.data["decision"]))
    own = any(r.counts for r in recorded)
    stale = _changed_since(
        path.parent.parent / Path(sys.modules[module].__file__).name, record.commit
    )
    why = (
        "the claim's own record counts"
        if own
        else "its claim module changed since the recorded commit: shown, not counted"
        if stale
        else "the full-mode run of this code (`make full`), re-decided under the current rules"
    )
    return (*recorded, replace(record).decided(decision, counts=not (own or stale), why=why))
