"""Write the verification report: ``index.html``, ``report.md`` and ``verdicts.json``.

``verdicts.json`` is a list of objects, one per claim, valid against :data:`VERDICT_SCHEMA`
(JSON Schema, draft 2020-12): ``paper``, ``claim``, ``location``, ``statement``, ``status``
(CONFIRMED / REFUTED / NOT_REPRODUCIBLE_HERE / ERROR), ``expected_status``, ``measured``,
``expected``, ``tolerance`` (number, string or null), ``evidence``, ``details`` (object),
``figures`` (paths relative to the report folder) and ``seconds``.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from laplace_lab.paper_checks.errata import ERRATA
from laplace_lab.paper_checks.registry import Claim, MutantOutcome, Status, Verdict

__all__ = ["VERDICT_SCHEMA", "Outcome", "write_report"]

_VALUE = {"type": ["number", "string", "null"]}

#: The JSON Schema of ``verdicts.json``.
VERDICT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "laplace-lab verdicts",
    "type": "array",
    "items": {
        "type": "object",
        "required": [
            "paper",
            "claim",
            "location",
            "statement",
            "status",
            "expected_status",
            "measured",
            "expected",
            "tolerance",
            "evidence",
            "details",
            "figures",
            "seconds",
            "mutants",
            "recorded",
        ],
        "properties": {
            "paper": {"type": "string", "minLength": 1},
            "claim": {"type": "string", "minLength": 1},
            "location": {"type": "string", "minLength": 1},
            "statement": {"type": "string", "minLength": 1},
            "status": {"enum": [s.value for s in Status]},
            "expected_status": {"enum": [s.value for s in Status]},
            "measured": _VALUE,
            "expected": _VALUE,
            "tolerance": _VALUE,
            "evidence": {"type": "string"},
            "details": {"type": "object"},
            "figures": {"type": "array", "items": {"type": "string"}},
            "seconds": {"type": "number", "minimum": 0},
            "recorded": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["command", "commit", "date", "summary", "data"],
                    "properties": {
                        "command": {"type": "string"},
                        "commit": {"type": "string"},
                        "date": {"type": "string"},
                        "summary": {"type": "string"},
                        "data": {"type": "object"},
                    },
                    "additionalProperties": False,
                },
            },
            "mutants": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["name", "description", "expect", "status", "caught"],
                    "properties": {
                        "name": {"type": "string"},
                        "description": {"type": "string"},
                        "expect": {"enum": [s.value for s in Status]},
                        "status": {"enum": [s.value for s in Status]},
                        "caught": {"type": "boolean"},
                    },
                    "additionalProperties": False,
                },
            },
        },
        "additionalProperties": False,
    },
}


@dataclass(frozen=True)
class Outcome:
    """A claim together with the verdict it earned and the time it took."""

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
            "measured": v.measured,
            "expected": v.expected,
            "tolerance": v.tolerance,
            "evidence": v.evidence,
            "details": dict(v.details),
            "figures": list(v.figures),
            "seconds": round(self.seconds, 3),
            "recorded": [r.as_json() for r in v.recorded],
            "mutants": [
                {
                    "name": m.mutant.name,
                    "description": m.mutant.description,
                    "expect": m.mutant.expect,
                    "status": m.status.value,
                    "caught": m.caught,
                }
                for m in self.mutants
            ],
        }


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _summary(outcomes: Sequence[Outcome], *, full: bool, seed: int) -> str:
    counts = Counter(o.verdict.status for o in outcomes)
    return (
        f"Mode: {'full' if full else 'quick'}; seed {seed}; {len(outcomes)} claims: "
        + ", ".join(f"{counts.get(s, 0)} {s.value}" for s in Status)
        + "."
    )


def _anchor(o: Outcome) -> str:
    return f"{o.claim.paper}-{o.claim.name}"


def _markdown(outcomes: Sequence[Outcome], *, full: bool, seed: int) -> str:
    lines = [
        "# laplace-lab verification report",
        "",
        _summary(outcomes, full=full, seed=seed),
        "",
        "| paper | claim | location | verdict | measured | expected | tolerance "
        "| mutants caught |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        v = o.verdict
        lines.append(
            f"| {o.claim.paper} | [{o.claim.name}](#{_anchor(o)}) | {o.claim.location} "
            f"| **{v.status.value}** | {_fmt(v.measured)} | {_fmt(v.expected)} "
            f"| {_fmt(v.tolerance)} | {o.power} |"
        )
    current = None
    for o in outcomes:
        if o.claim.paper != current:
            current = o.claim.paper
            lines += ["", f"## {current}"]
        v = o.verdict
        lines += [
            "",
            f'<a id="{_anchor(o)}"></a>',
            f"### {o.claim.name} — {o.claim.location}: **{v.status.value}**",
            "",
            f"*Claim.* {o.claim.statement}",
            "",
            f"*Measured* {_fmt(v.measured)}; *expected* {_fmt(v.expected)}; "
            f"*tolerance* {_fmt(v.tolerance)}; {o.seconds:.2f} s.",
            "",
            v.evidence.strip() if v.status is not Status.ERROR else f"```\n{v.evidence}\n```",
        ]
        for r in v.recorded:
            lines += [
                "",
                f"*Recorded* ({r.date}, commit {r.commit[:10]}, `{r.command}`): {r.summary}",
            ]
        if o.mutants:
            lines += ["", f"*Mutants caught {o.power}:*"]
            lines += [
                f"- `{m.mutant.name}` ({m.mutant.description}): {m.status.value}, must be "
                f"{m.mutant.expect} — {'caught' if m.caught else '**not caught**'}"
                for m in o.mutants
            ]
        lines += [f"\n![{o.claim.name}]({fig})" for fig in v.figures]
    lines += ["", "## Errata", ""]
    for e in ERRATA:
        see = f" (*Evidence:* {e.evidence}.)" if e.evidence else ""
        lines.append(f"- **{e.paper}, {e.location}.** {e.says} — {e.correction}{see}")
    return "\n".join(lines) + "\n"


_CSS = """
body{font-family:system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;
line-height:1.45;color:#222}table{border-collapse:collapse;width:100%;font-size:.9rem}
td,th{border:1px solid #ccc;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f3f3f3}.CONFIRMED{color:#1a7f37}.REFUTED{color:#b42318}
.NOT_REPRODUCIBLE_HERE{color:#9a6700}.ERROR{color:#8250df}section{margin:2rem 0}
pre{background:#f6f8fa;padding:.6rem;overflow-x:auto}img{max-width:100%}
"""


def _html(outcomes: Sequence[Outcome], *, full: bool, seed: int) -> str:
    e = html.escape
    rows = "".join(
        f"<tr><td>{e(o.claim.paper)}</td><td><a href='#{e(_anchor(o))}'>{e(o.claim.name)}</a>"
        f"</td><td>{e(o.claim.location)}</td><td class='{o.verdict.status.value}'><b>"
        f"{o.verdict.status.value}</b></td><td>{e(_fmt(o.verdict.measured))}</td>"
        f"<td>{e(_fmt(o.verdict.expected))}</td><td>{e(_fmt(o.verdict.tolerance))}</td>"
        f"<td>{e(o.power)}</td></tr>"
        for o in outcomes
    )
    sections = []
    for o in outcomes:
        v = o.verdict
        body = (
            f"<pre>{e(v.evidence)}</pre>"
            if v.status is Status.ERROR
            else f"<p>{e(v.evidence.strip())}</p>"
        )
        figs = "".join(f"<p><img src='{e(f)}' alt='{e(o.claim.name)}'></p>" for f in v.figures)
        if o.mutants:
            figs += (
                f"<p><i>Mutants caught {e(o.power)}:</i></p><ul>"
                + "".join(
                    f"<li><code>{e(m.mutant.name)}</code> ({e(m.mutant.description)}): "
                    f"{m.status.value}, must be {m.mutant.expect} — "
                    f"{'caught' if m.caught else '<b>not caught</b>'}</li>"
                    for m in o.mutants
                )
                + "</ul>"
            )
        sections.append(
            f"<section id='{e(_anchor(o))}'><h3>{e(o.claim.paper)}: {e(o.claim.name)} — "
            f"{e(o.claim.location)}: <span class='{v.status.value}'>{v.status.value}</span>"
            f"</h3><p><i>Claim.</i> {e(o.claim.statement)}</p><p><i>Measured</i> "
            f"{e(_fmt(v.measured))}; <i>expected</i> {e(_fmt(v.expected))}; <i>tolerance</i> "
            f"{e(_fmt(v.tolerance))}; {o.seconds:.2f} s.</p>{body}{figs}</section>"
        )
    errata = "".join(
        f"<li><b>{e(x.paper)}, {e(x.location)}.</b> {e(x.says)} — {e(x.correction)}"
        + (f" <i>(Evidence: {e(x.evidence)}.)</i>" if x.evidence else "")
        + "</li>"
        for x in ERRATA
    )
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>laplace-lab verification report</title><style>{_CSS}</style></head><body>"
        f"<h1>laplace-lab verification report</h1><p>{e(_summary(outcomes, full=full, seed=seed))}"
        "</p><table><thead><tr><th>paper</th><th>claim</th><th>location</th><th>verdict</th>"
        f"<th>measured</th><th>expected</th><th>tolerance</th><th>mutants caught</th></tr>"
        f"</thead><tbody>{rows}"
        f"</tbody></table>{''.join(sections)}<section id='errata'><h2>Errata</h2><ul>{errata}"
        "</ul></section></body></html>\n"
    )


def write_report(
    outcomes: Sequence[Outcome], out_dir: Path, *, full: bool = False, seed: int = 0
) -> dict[str, Path]:
    """Write ``index.html``, ``report.md`` and ``verdicts.json`` into ``out_dir``.

    Returns their paths keyed by ``"html"``, ``"markdown"`` and ``"json"``.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {
        "html": out_dir / "index.html",
        "markdown": out_dir / "report.md",
        "json": out_dir / "verdicts.json",
    }
    paths["html"].write_text(_html(outcomes, full=full, seed=seed), encoding="utf-8")
    paths["markdown"].write_text(_markdown(outcomes, full=full, seed=seed), encoding="utf-8")
    payload = json.dumps([o.as_json() for o in outcomes], indent=2, allow_nan=False)
    paths["json"].write_text(payload + "\n", encoding="utf-8")
    return paths
