"""Evidence from runs too costly for ``make check``, recorded as data in the repository.

A full-mode result (the Wheel bandit at the paper's horizon, the 25-seed tables, a network
run of hours) is stored as a JSON file beside its paper's claims with the command that
produced it, the commit and the date; the claim attaches it to its verdict and the report
shows it as "recorded", next to what the quick run measured now.

A recorded paper-scale run outranks quick mode. A claim re-decides each record under the
current rules from its stored raw values (:meth:`Recorded.decided`, with a
:class:`~laplace_lab.paper_checks.verification.decisions.Decision`); the record that counts
(``counts=True``; where several are recorded, the claim says which and why) gives the claim's
headline status, and the quick verdict stands beside it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from laplace_lab.paper_checks.verification.decisions import Decision

__all__ = ["Recorded", "load_recorded"]

_FIELDS = ("command", "commit", "date", "summary")


@dataclass(frozen=True)
class Recorded:
    """One recorded run.

    Parameters
    ----------
    command : str
        The command that produced it, runnable from the repository root.
    commit : str
        The git commit it ran at.
    date : str
        ISO date of the run.
    summary : str
        What it measured, in a sentence or a short list.
    data : mapping
        The numbers (JSON).
    decision : Decision or None
        The record re-decided under the current rules from its stored values
        (:meth:`decided`); None when the claim does not decide on it.
    counts : bool
        This record's decision is the claim's headline status (the paper-scale evidence).
    why : str
        Why this record counts, or does not, where a claim has several.
    """

    command: str
    commit: str
    date: str
    summary: str
    data: Mapping[str, Any] = field(default_factory=dict)
    decision: Decision | None = None
    counts: bool = False
    why: str = ""

    def decided(self, decision: Decision, *, counts: bool = True, why: str = "") -> Recorded:
        """This record with its ``decision`` under the current rules (and whether it counts)."""
        return replace(self, decision=decision, counts=bool(counts), why=str(why))

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "command": self.command,
            "commit": self.commit,
            "date": self.date,
            "summary": self.summary,
            "data": dict(self.data),
        }
        if self.decision is not None:
            out["status"] = self.decision.status.value
            out["decision"] = self.decision.as_json()
            out["counts"] = self.counts
            out["why"] = self.why
        return out


def load_recorded(path: str | Path) -> Recorded:
    """Read a recorded run from a JSON file.

    The file holds ``command``, ``commit``, ``date``, ``summary`` and ``data``; a missing
    field is a ValueError naming the file.
    """
    path = Path(path)
    raw = json.loads(path.read_text(encoding="utf-8"))
    missing = [f for f in _FIELDS if not isinstance(raw.get(f), str) or not raw.get(f)]
    if missing:
        raise ValueError(f"recorded run {path} lacks {missing}")
    return Recorded(*(raw[f] for f in _FIELDS), data=raw.get("data", {}))
