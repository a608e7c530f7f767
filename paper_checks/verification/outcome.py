"""A claim's outcome (verdict, time, mutants' runs) and the JSON schema of ``verdicts.json``.

``verdicts.json`` is an object valid against :data:`VERDICT_SCHEMA` (JSON Schema, draft
2020-12) with two members:

- ``meta``: the run — ``mode`` (quick/full), ``seed``, ``mutants`` (none/light/all), ``date``
  (UTC, ISO 8601), ``seconds``, ``commit`` and ``commit_dirty``, ``python``, ``platform``,
  ``cpu``, ``threads`` (CPU count, usable CPUs, BLAS pools, torch threads), ``load`` (load
  averages at the end of the run and the core count), ``packages`` (versions), ``command``
  (:func:`laplace_lab.paper_checks.verification.run_info.run_metadata`);
- ``claims``: one object per claim — ``paper``, ``claim``, ``location``, ``statement``,
  ``kind`` (exact, superiority, equivalence, existence, cost, erratum), ``setting``
  (``label`` paper or substitute, ``differs``: what differs, ``specific``: a specific number
  of a table), ``margin`` (an equivalence claim's margin and its source), ``status`` (the best
  evidence: the recorded paper-scale run re-decided under the current rules where one counts,
  else this run's verdict; CONFIRMED / REFUTED / INCONCLUSIVE / NOT_REPRODUCIBLE_HERE /
  ERROR), ``quick_status`` (this run's verdict), ``paper_scale`` (the record that decides
  ``status``: its command, commit, date, status and why; null when none counts),
  ``decision`` (the rule that decided this run's verdict, or null), ``expected_status`` (the
  verdict this run is recorded to earn),
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

from laplace_lab.paper_checks.verification.errata import errata_of, registered_errata
from laplace_lab.paper_checks.verification.kinds import Kind
from laplace_lab.paper_checks.verification.recorded import Recorded
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
        "kind": {"enum": [k.value for k in Kind]},
        "setting": _object(
            {
                "label": {"enum": ["paper", "substitute"]},
                "differs": {"type": "string"},
                "specific": {"type": "boolean"},
            }
        ),
        "margin": {"type": "string"},
        "status": _STATUS,
        "quick_status": _STATUS,
        "paper_scale": {
            "oneOf": [
                {"type": "null"},
                _object(
                    {
                        "command": {"type": "string"},
                        "commit": {"type": "string"},
                        "date": {"type": "string"},
                        "status": _STATUS,
                        "why": {"type": "string"},
                    }
                ),
            ]
        },
        "decision": {"type": ["object", "null"]},
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
                    "status": _STATUS,
                    "decision": {"type": "object"},
                    "counts": {"type": "boolean"},
                    "why": {"type": "string"},
                },
                optional=("status", "decision", "counts", "why"),
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
    def paper_scale(self) -> Recorded | None:
        """The recorded paper-scale run whose decision counts for this claim, if any."""
        return next(
            (r for r in self.verdict.recorded if r.counts and r.decision is not None), None
        )

    @property
    def status(self) -> Status:
        """The best evidence: the counting record's status under the current rules, else this
        run's verdict (an ERROR of this run stays an ERROR: the code is broken). A record
        deciding a specific number of a table on a substitute gives NOT_REPRODUCIBLE_HERE, as a
        quick verdict does."""
        record = self.paper_scale
        if record is None or self.verdict.status is Status.ERROR:
            return self.verdict.status
        setting = self.claim.setting
        decided = record.decision.status in (Status.REFUTED, Status.CONFIRMED)
        if decided and setting.specific and setting.differs:
            return Status.NOT_REPRODUCIBLE_HERE  # a table's number, on a substitute
        return record.decision.status

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
            "kind": self.claim.kind.value,
            "setting": self.claim.setting.as_json(),
            "margin": self.claim.margin,
            "status": self.status.value,
            "quick_status": v.status.value,
            "paper_scale": (
                None
                if self.paper_scale is None
                else {
                    "command": self.paper_scale.command,
                    "commit": self.paper_scale.commit,
                    "date": self.paper_scale.date,
                    "status": self.paper_scale.decision.status.value,
                    "why": self.paper_scale.why,
                }
            ),
            "decision": None if v.decision is None else v.decision.as_json(),
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
    """Per paper (in order of appearance): the claims about the methods by status (the best
    evidence) in all, ``paper`` (in the paper's setting) and ``substitute``; ``quick`` (this
    run's verdicts); the errata apart — ``errata_checked`` (erratum claims run),
    ``errata_found`` (the registered errata, plus the erratum claims that found one no
    registered erratum rests on: each erratum counted once); mutants caught and run; seconds."""
    out: dict[str, dict[str, Any]] = {}
    for o in outcomes:
        row = out.setdefault(
            o.claim.paper,
            {
                "claims": 0,
                "status": Counter(),
                "paper": Counter(),
                "substitute": Counter(),
                "quick": Counter(),
                "errata_checked": 0,
                "errata_found": sum(1 for e in registered_errata() if e.paper == o.claim.paper),
                "caught": 0,
                "run": 0,
                "s": 0.0,
            },
        )
        if o.claim.kind is Kind.ERRATUM:
            row["errata_checked"] += 1
            written = any(o.claim.key in e.claims for e in registered_errata())
            row["errata_found"] += o.status is Status.REFUTED and not written
        else:
            row["claims"] += 1
            row["status"][o.status] += 1
            row[o.claim.setting.label][o.status] += 1
            row["quick"][o.verdict.status] += 1
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
