"""A claim's outcome (verdict, time, mutants' runs) and the JSON schema of ``verdicts.json``.

``verdicts.json`` is an object valid against :data:`VERDICT_SCHEMA` (JSON Schema, draft
2020-12) with two members:

- ``meta``: the run — ``mode`` (quick/full), ``seed``, ``mutants`` (none/light/all), ``date``
  (UTC, ISO 8601), ``seconds``, ``commit`` and ``commit_dirty``, ``python``, ``platform``,
  ``cpu``, ``threads`` (CPU count, usable CPUs, BLAS pools, torch threads), ``load`` (load
  averages at the end of the run and the core count), ``packages`` (versions), ``command``
  (:func:`laplace_lab.paper_checks.verification.run_info.run_metadata`);
- ``claims``: one object per claim — ``paper``, ``claim``, ``location``, ``statement``,
  ``status`` (CONFIRMED / REFUTED / NOT_REPRODUCIBLE_HERE / ERROR), ``expected_status``,
  ``reason`` (the verdict in one line), ``measured``, ``expected``, ``tolerance`` (number,
  string or null), ``evidence`` (a paragraph, or ``- point`` lines), ``details`` (object),
  ``figures`` (paths relative to the report folder) and ``captions`` (path → caption),
  ``recorded`` (stored runs), ``errata`` (anchors of the errata resting on the claim),
  ``seconds``, ``mutants`` (each mutant's name, description, the verdict it must give, the
  verdict it gave, whether it was caught, and the reason) and, for a run at several base seeds
  (``--seeds N``), ``seeds`` (base seed → verdict).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from laplace_lab.paper_checks.verification.errata import errata_of
from laplace_lab.paper_checks.verification.registry import Claim, MutantOutcome, Status, Verdict

__all__ = ["VERDICT_SCHEMA", "Outcome", "format_value", "paper_counts"]

_VALUE = {"type": ["number", "string", "null"]}
_STATUS = {"enum": [s.value for s in Status]}


def _object(properties: dict[str, Any], *, optional: Sequence[str] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "required": [k for k in properties if k not in optional],
        "properties": properties,
        "additionalProperties": False,
    }


_CLAIM = _object(
    {
        "paper": {"type": "string", "minLength": 1},
        "claim": {"type": "string", "minLength": 1},
        "location": {"type": "string", "minLength": 1},
        "statement": {"type": "string", "minLength": 1},
        "status": _STATUS,
        "expected_status": _STATUS,
        "reason": {"type": "string"},
        "measured": _VALUE,
        "expected": _VALUE,
        "tolerance": _VALUE,
        "evidence": {"type": "string"},
        "details": {"type": "object"},
        "figures": {"type": "array", "items": {"type": "string"}},
        "captions": {"type": "object", "additionalProperties": {"type": "string"}},
        "seconds": {"type": "number", "minimum": 0},
        "recorded": {
            "type": "array",
            "items": _object(
                {
                    "command": {"type": "string"},
                    "commit": {"type": "string"},
                    "date": {"type": "string"},
                    "summary": {"type": "string"},
                    "data": {"type": "object"},
                }
            ),
        },
        "errata": {"type": "array", "items": {"type": "string"}},
        "mutants": {
            "type": "array",
            "items": _object(
                {
                    "name": {"type": "string"},
                    "description": {"type": "string"},
                    "expect": _STATUS,
                    "status": _STATUS,
                    "caught": {"type": "boolean"},
                    "reason": {"type": "string"},
                    "seconds": {"type": "number", "minimum": 0},
                }
            ),
        },
        "seeds": {"type": "object", "additionalProperties": _STATUS},
    },
    optional=("seeds",),
)

_META = {
    "type": "object",
    "required": [
        "mode",
        "seed",
        "mutants",
        "date",
        "seconds",
        "commit",
        "python",
        "platform",
        "cpu",
        "threads",
        "packages",
    ],
    "properties": {
        "mode": {"enum": ["quick", "full"]},
        "seed": {"type": "integer", "minimum": 0},
        "mutants": {"enum": ["none", "light", "all"]},
        "date": {"type": "string"},
        "seconds": {"type": "number", "minimum": 0},
        "commit": {"type": "string"},
        "commit_dirty": {"type": ["boolean", "null"]},
        "python": {"type": "string"},
        "platform": {"type": "string"},
        "cpu": {"type": "string"},
        "threads": {"type": "object"},
        "load": {"type": ["object", "null"]},
        "packages": {"type": "object", "additionalProperties": {"type": "string"}},
        "command": {"type": "string"},
    },
}

#: The JSON Schema of ``verdicts.json``.
VERDICT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "laplace-lab verdicts",
    "type": "object",
    "required": ["meta", "claims"],
    "properties": {"meta": _META, "claims": {"type": "array", "items": _CLAIM}},
    "additionalProperties": False,
}


@dataclass(frozen=True)
class Outcome:
    """A claim together with the verdict it earned, the time it took and its mutants' runs."""

    claim: Claim
    verdict: Verdict
    seconds: float
    mutants: tuple[MutantOutcome, ...] = ()
    seeds: tuple[tuple[int, Status], ...] = ()

    @property
    def stable(self) -> bool:
        """The same verdict at every base seed it ran at (trivially, at one seed)."""
        return len({status for _, status in self.seeds}) <= 1

    @property
    def stability(self) -> str:
        """``""`` for one seed; else ``"stable over 5 seeds"`` or the verdict per seed."""
        if len(self.seeds) <= 1:
            return ""
        if self.stable:
            return f"stable over {len(self.seeds)} seeds"
        return "UNSTABLE: " + ", ".join(f"seed {n} {s.value}" for n, s in self.seeds)

    @property
    def power(self) -> str:
        """``"caught/run"`` of the mutants run, ``"–"`` when none ran."""
        if not self.mutants:
            return "–"
        return f"{sum(m.caught for m in self.mutants)}/{len(self.mutants)}"

    @property
    def anchor(self) -> str:
        """The HTML anchor of the claim's section."""
        return f"{self.claim.paper}-{self.claim.name}"

    def as_json(self) -> dict[str, Any]:
        """The JSON object of ``verdicts.json`` for this outcome."""
        v = self.verdict
        return {
            "paper": self.claim.paper,
            "claim": self.claim.name,
            "location": self.claim.location,
            "statement": self.claim.statement,
            "status": v.status.value,
            "expected_status": self.claim.expected.value,
            "reason": v.reason,
            "measured": v.measured,
            "expected": v.expected,
            "tolerance": v.tolerance,
            "evidence": v.evidence_text,
            "details": dict(v.details),
            "figures": [str(f) for f in v.figures],
            "captions": {str(f): f.caption for f in v.figures if getattr(f, "caption", "")},
            "seconds": round(self.seconds, 3),
            "recorded": [r.as_json() for r in v.recorded],
            "errata": [e.anchor for e in errata_of(self.claim.key)],
            "mutants": [
                {
                    "name": m.mutant.name,
                    "description": m.mutant.description,
                    "expect": m.mutant.expect,
                    "status": m.status.value,
                    "caught": m.caught,
                    "reason": m.reason,
                    "seconds": round(m.seconds, 3),
                }
                for m in self.mutants
            ],
            **({"seeds": {str(n): s.value for n, s in self.seeds}} if self.seeds else {}),
        }


def paper_counts(outcomes: Sequence[Outcome]) -> dict[str, dict[str, Any]]:
    """Per paper (in order of appearance): claims, verdict counts, mutants caught and run."""
    out: dict[str, dict[str, Any]] = {}
    for o in outcomes:
        row = out.setdefault(
            o.claim.paper, {"claims": 0, "status": Counter(), "caught": 0, "run": 0, "s": 0.0}
        )
        row["claims"] += 1
        row["status"][o.verdict.status] += 1
        row["caught"] += sum(m.caught for m in o.mutants)
        row["run"] += len(o.mutants)
        row["s"] += o.seconds + sum(m.seconds for m in o.mutants)
    return out


def format_value(value: Any) -> str:
    """A measured/expected/tolerance value as text: "–" for None, 6 significant digits."""
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)
