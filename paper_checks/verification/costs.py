"""The recorded CPU seconds of each claim, to hand out the work of a check.

``laplace-lab check --write-results`` in quick mode with the light mutants (``make results``)
writes ``check_seconds.json`` beside each paper's RESULTS.md: per claim, the seconds of its
run and of its light mutants. :func:`work_cost` reads them back so that a check starts the
costliest units of work first (longest processing time first: the two workers of a 2-core
machine then finish close together). Only the order of the work depends on them, never a
verdict; a claim without a record gets a count-based estimate.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from laplace_lab.paper_checks.verification.outcome import Outcome
from laplace_lab.paper_checks.verification.registry import Claim

__all__ = ["COSTS_FILE", "estimated_cost", "work_cost", "write_costs"]

COSTS_FILE = "check_seconds.json"


def estimated_cost(item: Claim) -> float:
    """A claim's cost without a record: one unit for its run and one per light mutant."""
    return 1.0 + sum(1 for m in item.mutants if not m.heavy)


def write_costs(
    outcomes: Sequence[Outcome], meta: dict[str, Any], *, folder_of: Callable[[str], Path]
) -> list[Path]:
    """Write each paper's ``check_seconds.json`` (quick mode with the light mutants only: the
    run whose order it sets); return the files written."""
    if meta.get("mode") != "quick" or meta.get("mutants") != "light":
        return []
    written = []
    for paper in dict.fromkeys(o.claim.paper for o in outcomes):
        seconds = {
            o.claim.name: round(o.seconds + sum(m.seconds for m in o.mutants), 2)
            for o in outcomes
            if o.claim.paper == paper
        }
        path = folder_of(paper) / COSTS_FILE
        path.write_text(json.dumps(seconds, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        written.append(path)
    return written


def work_cost(folder_of: Callable[[str], Path]) -> Callable[[Claim], float]:
    """``cost(claim)``: its recorded seconds where ``folder_of(paper)`` holds a record, else
    twice :func:`estimated_cost` (a light claim and its mutants take about 2 s each here)."""
    records: dict[str, dict[str, float]] = {}

    def recorded(paper: str) -> dict[str, float]:
        if paper not in records:
            try:
                text = (folder_of(paper) / COSTS_FILE).read_text(encoding="utf-8")
                records[paper] = {k: float(v) for k, v in json.loads(text).items()}
            except (OSError, ValueError, TypeError, AttributeError):
                records[paper] = {}
        return records[paper]

    def cost(item: Claim) -> float:
        seconds = recorded(item.paper).get(item.name)
        return seconds if seconds is not None else 2.0 * estimated_cost(item)

    return cost
