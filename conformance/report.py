"""Write a validation: ``index.html``, ``report.md`` and ``conformance.json``.

The same form as the verification report of ``laplace-lab check``: a summary line, a table
of every case with its outcome, then one section per case that did not pass, with its
measured numbers and a reproducer that runs on its own. ``conformance.json`` is an object
with ``target``, ``seed``, ``passed``, ``counts``, ``tolerance_rule`` and ``results`` (one
object per case: ``case``, ``capability``, ``method``, ``problem``, ``description``,
``outcome``, ``summary``, ``details``, ``reproducer``, ``seconds``), valid against
:data:`VALIDATION_SCHEMA`.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from laplace_lab.conformance.registry import Outcome
from laplace_lab.conformance.runner import Validation

__all__ = ["TOLERANCE_RULE", "VALIDATION_SCHEMA", "write_validation_report"]

#: One line stating the tolerance rule (the module docstring of ``.tolerance`` derives it).
TOLERANCE_RULE = (
    "|v_target − v_oracle| ≤ 4γ(‖Ω‖₂‖Ω⁻¹g‖² + 2‖g‖‖Ω⁻¹g‖ + gᵀV⁻¹g), γ = (N′ + k + 10)·u, "
    "u = eps(dtype)/2 of the model's dtype; masks tie at 4γ·max|criterion|; samples by "
    "χ² tests at level 5e-4 each"
)

_RESULT = {
    "type": "object",
    "required": [
        "case",
        "capability",
        "method",
        "problem",
        "description",
        "outcome",
        "summary",
        "details",
        "reproducer",
        "seconds",
    ],
    "properties": {
        "case": {"type": "string", "minLength": 1},
        "capability": {"type": "string"},
        "method": {"type": ["string", "null"]},
        "problem": {"type": "string"},
        "description": {"type": "string"},
        "outcome": {"enum": [o.value for o in Outcome]},
        "summary": {"type": "string"},
        "details": {"type": "object"},
        "reproducer": {"type": "string"},
        "seconds": {"type": "number", "minimum": 0},
    },
    "additionalProperties": False,
}

#: The JSON Schema of ``conformance.json``.
VALIDATION_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "laplace-lab conformance",
    "type": "object",
    "required": ["target", "seed", "passed", "counts", "tolerance_rule", "results"],
    "properties": {
        "target": {"type": "string"},
        "seed": {"type": "integer", "minimum": 0},
        "passed": {"type": "boolean"},
        "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
        "tolerance_rule": {"type": "string"},
        "results": {"type": "array", "items": _RESULT},
    },
    "additionalProperties": False,
}


def _markdown(v: Validation) -> str:
    lines = [
        "# laplace-lab conformance report",
        "",
        v.summary(),
        "",
        f"Tolerance rule: {TOLERANCE_RULE}.",
        "",
        "| case | capability | problem | outcome | summary |",
        "|---|---|---|---|---|",
    ]
    for r in v.results:
        anchor = r.case.name.replace("/", "-")
        name = f"[{r.case.name}](#{anchor})" if r.reproducer else r.case.name
        summary = r.summary.replace("|", "\\|")
        lines.append(
            f"| {name} | {r.case.capability} | {r.case.problem} | **{r.outcome.value}** "
            f"| {summary} |"
        )
    for r in v.results:
        if not r.reproducer:
            continue
        lines += [
            "",
            f'<a id="{r.case.name.replace("/", "-")}"></a>',
            f"## {r.case.name}: **{r.outcome.value}**",
            "",
            f"*Case.* {r.case.description} ({r.case.problem}).",
            "",
            f"*Found.* {r.summary}",
            "",
            "*Reproducer:*",
            "",
            "```python",
            r.reproducer.rstrip(),
            "```",
        ]
    return "\n".join(lines) + "\n"


_CSS = """
body{font-family:system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;
line-height:1.45;color:#222}table{border-collapse:collapse;width:100%;font-size:.9rem}
td,th{border:1px solid #ccc;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f3f3f3}.PASS{color:#1a7f37}.FAIL{color:#b42318}.SKIP{color:#9a6700}
.ERROR{color:#8250df}.NA{color:#57606a}section{margin:2rem 0}pre{background:#f6f8fa;padding:.6rem;
overflow-x:auto}
"""


def _html(v: Validation) -> str:
    e = html.escape
    rows = []
    for r in v.results:
        anchor = e(r.case.name.replace("/", "-"))
        name = f"<a href='#{anchor}'>{e(r.case.name)}</a>" if r.reproducer else e(r.case.name)
        rows.append(
            f"<tr><td>{name}</td><td>{e(r.case.capability)}</td><td>{e(r.case.problem)}</td>"
            f"<td class='{r.outcome.name}'><b>{r.outcome.value}</b></td>"
            f"<td>{e(r.summary)}</td></tr>"
        )
    sections = [
        f"<section id='{e(r.case.name.replace('/', '-'))}'><h2>{e(r.case.name)}: "
        f"<span class='{r.outcome.name}'>{r.outcome.value}</span></h2><p><i>Case.</i> "
        f"{e(r.case.description)} ({e(r.case.problem)}).</p><p><i>Found.</i> {e(r.summary)}"
        f"</p><p><i>Reproducer:</i></p><pre>{e(r.reproducer)}</pre></section>"
        for r in v.results
        if r.reproducer
    ]
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>laplace-lab conformance report</title><style>{_CSS}</style></head><body>"
        f"<h1>laplace-lab conformance report</h1><p>{e(v.summary())}</p>"
        f"<p>Tolerance rule: {e(TOLERANCE_RULE)}.</p><table><thead><tr><th>case</th>"
        "<th>capability</th><th>problem</th><th>outcome</th><th>summary</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>{''.join(sections)}</body></html>\n"
    )


def write_validation_report(validation: Validation, out_dir: Path | str) -> dict[str, Path]:
    """Write ``index.html``, ``report.md`` and ``conformance.json`` into ``out_dir``.

    Returns their paths keyed by ``"html"``, ``"markdown"`` and ``"json"``.
    """
    if not isinstance(validation, Validation):
        raise TypeError(f"validation must be a Validation; got {type(validation).__name__}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "html": out / "index.html",
        "markdown": out / "report.md",
        "json": out / "conformance.json",
    }
    paths["html"].write_text(_html(validation))
    paths["markdown"].write_text(_markdown(validation))
    payload = {
        "target": validation.target,
        "seed": validation.seed,
        "passed": validation.passed,
        "counts": validation.counts(),
        "tolerance_rule": TOLERANCE_RULE,
        "results": [r.as_json() for r in validation.results],
    }
    paths["json"].write_text(json.dumps(payload, indent=2, default=float) + "\n")
    return paths
