"""Write the verification report: ``index.html``, ``report.md`` and ``verdicts.json``.

``verdicts.json`` is an object valid against :data:`VERDICT_SCHEMA` (JSON Schema, draft
2020-12) with two members:

- ``meta``: the run — ``mode`` (quick/full), ``seed``, ``mutants`` (none/light/all), ``date``
  (UTC, ISO 8601), ``seconds``, ``commit`` and ``commit_dirty``, ``python``, ``platform``,
  ``cpu``, ``threads`` (CPU count, usable CPUs, BLAS pools, torch threads) and ``packages``
  (versions), ``command`` (:func:`laplace_lab.paper_checks.run_info.run_metadata`);
- ``claims``: one object per claim — ``paper``, ``claim``, ``location``, ``statement``,
  ``status`` (CONFIRMED / REFUTED / NOT_REPRODUCIBLE_HERE / ERROR), ``expected_status``,
  ``reason`` (the verdict in one line), ``measured``, ``expected``, ``tolerance`` (number,
  string or null), ``evidence`` (a paragraph, or ``- point`` lines), ``details`` (object),
  ``figures`` (paths relative to the report folder) and ``captions`` (path → caption),
  ``recorded`` (stored runs), ``errata`` (anchors of the errata resting on the claim),
  ``seconds`` and ``mutants`` (each mutant's name, description, the verdict it must give, the
  verdict it gave, whether it was caught, and the reason).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from laplace_lab.paper_checks.errata import ERRATA, errata_of
from laplace_lab.paper_checks.registry import Claim, MutantOutcome, Status, Verdict

__all__ = ["VERDICT_SCHEMA", "Outcome", "format_value", "paper_counts", "write_report"]

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
    }
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


def _md_cell(value: Any) -> str:
    return format_value(value).replace("|", "\\|").replace("\n", " ")


def _markdown(outcomes: Sequence[Outcome], meta: dict[str, Any]) -> str:
    counts = paper_counts(outcomes)
    lines = [
        "# laplace-lab verification report",
        "",
        f"{meta['mode']} mode · seed {meta['seed']} · {meta['date']} · commit "
        f"{meta['commit'][:10]}{' (modified)' if meta.get('commit_dirty') else ''} · "
        f"{len(outcomes)} claims in {meta['seconds']:.0f} s · mutants: {meta['mutants']}",
        "",
        "| paper | claims | " + " | ".join(s.value for s in Status) + " | mutants caught |",
        "|---|---|" + "---|" * len(Status) + "---|",
    ]
    for paper, row in counts.items():
        lines.append(
            f"| [{paper}](#{paper}) | {row['claims']} | "
            + " | ".join(str(row["status"].get(s, 0)) for s in Status)
            + f" | {row['caught']}/{row['run']} |"
        )
    for paper in counts:
        lines += [
            "",
            f'<a id="{paper}"></a>',
            f"## {paper}",
            "",
            "| claim | location | verdict | why | measured | tolerance | mutants caught |",
            "|---|---|---|---|---|---|---|",
        ]
        mine = [o for o in outcomes if o.claim.paper == paper]
        for o in mine:
            v = o.verdict
            lines.append(
                f"| [{o.claim.name}](#{o.anchor}) | {_md_cell(o.claim.location)} | "
                f"**{v.status.value}** | {_md_cell(v.reason)} | {_md_cell(v.measured)} | "
                f"{_md_cell(v.tolerance)} | {o.power} |"
            )
        for o in mine:
            lines += _markdown_claim(o)
    lines += ["", '<a id="errata"></a>', "## Errata", ""]
    for e in (e for e in ERRATA if e.paper in counts):
        links = ", ".join(f"[{k.split('/', 1)[1]}](#{k.replace('/', '-')})" for k in e.claims)
        lines.append(
            f'- <a id="{e.anchor}"></a>**{e.paper}, {e.location}.** {e.says} — {e.correction}'
            + (f" *Rests on:* {links}." if links else " *Read from the text.*")
        )
    lines += ["", "## Run", ""]
    lines += [f"- **{k}**: {json.dumps(v, ensure_ascii=False)}" for k, v in meta.items()]
    return "\n".join(lines) + "\n"


def _markdown_claim(o: Outcome) -> list[str]:
    v = o.verdict
    lines = [
        "",
        f'<a id="{o.anchor}"></a>',
        f"### {o.claim.name} — {o.claim.location}: **{v.status.value}**",
        "",
        f"*Claim.* {o.claim.statement}",
        "",
        f"*Why.* {v.reason}",
        "",
        f"*Measured* {format_value(v.measured)}; *expected* {format_value(v.expected)}; "
        f"*tolerance* {format_value(v.tolerance)}; {o.seconds:.2f} s.",
        "",
    ]
    if v.status is Status.ERROR:
        lines.append(f"```\n{v.evidence_text}\n```")
    else:
        lines.append(v.evidence_text)
    for r in v.recorded:
        lines += ["", f"*Recorded* ({r.date}, commit {r.commit[:10]}, `{r.command}`): {r.summary}"]
    for fig in v.figures:
        lines += ["", f"![{o.claim.name}]({fig})"]
        if getattr(fig, "caption", ""):
            lines += ["", f"*{fig.caption}*"]
    if o.mutants:
        lines += ["", f"*Mutants caught {o.power}:*"]
        lines += [
            f"- `{m.mutant.name}` ({m.mutant.description}): {m.status.value}, must be "
            f"{m.mutant.expect} — {'caught' if m.caught else '**not caught**'}"
            for m in o.mutants
        ]
    errata = errata_of(o.claim.key)
    if errata:
        lines += ["", "*Errata resting on this claim:* "]
        lines[-1] += ", ".join(f"[{e.location}](#{e.anchor})" for e in errata)
    return lines


def write_report(
    outcomes: Sequence[Outcome],
    out_dir: Path,
    *,
    full: bool = False,
    seed: int = 0,
    meta: dict[str, Any] | None = None,
) -> dict[str, Path]:
    """Write ``index.html``, ``report.md`` and ``verdicts.json`` into ``out_dir``.

    ``meta`` is the run's metadata (:func:`laplace_lab.paper_checks.run_info.run_metadata`);
    without it a minimal one is built from ``full`` and ``seed``. Returns the paths keyed by
    ``"html"``, ``"markdown"`` and ``"json"``.
    """
    import datetime

    from laplace_lab.paper_checks.report_html import render_html
    from laplace_lab.paper_checks.run_info import run_metadata

    if meta is None:
        meta = run_metadata(
            full=full,
            seed=seed,
            mutants="light" if any(o.mutants for o in outcomes) else "none",
            seconds=sum(o.seconds + sum(m.seconds for m in o.mutants) for o in outcomes),
            started=datetime.datetime.now(datetime.UTC),
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {
        "html": out_dir / "index.html",
        "markdown": out_dir / "report.md",
        "json": out_dir / "verdicts.json",
    }
    paths["html"].write_text(render_html(outcomes, meta), encoding="utf-8")
    paths["markdown"].write_text(_markdown(outcomes, meta), encoding="utf-8")
    payload = {"meta": meta, "claims": [o.as_json() for o in outcomes]}
    paths["json"].write_text(json.dumps(payload, indent=2, allow_nan=False) + "\n", "utf-8")
    return paths
