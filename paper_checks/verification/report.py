"""Write the verification report: ``index.html``, ``report.md`` and ``verdicts.json``.

The schema of ``verdicts.json`` is
:data:`laplace_lab.paper_checks.verification.outcome.VERDICT_SCHEMA`.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from laplace_lab.paper_checks.verification.errata import errata_of, registered_errata
from laplace_lab.paper_checks.verification.outcome import (
    VERDICT_SCHEMA,
    Outcome,
    format_value,
    paper_counts,
)
from laplace_lab.paper_checks.verification.registry import Status
from laplace_lab.paper_checks.verification.report_html import (
    render_html,
    uncaptioned,
)
from laplace_lab.paper_checks.verification.run_info import run_metadata

__all__ = ["VERDICT_SCHEMA", "Outcome", "write_report"]


def _md_cell(value: Any) -> str:
    return format_value(value).replace("|", "\\|").replace("\n", " ")


def _markdown(outcomes: Sequence[Outcome], meta: dict[str, Any]) -> str:
    counts = paper_counts(outcomes)
    lines = [
        "# laplace-lab verification report",
        "",
        f"{meta['mode']} mode · seed {meta['seed']} · {meta['date']} · commit "
        f"{meta['commit'][:10]}{' (modified)' if meta.get('commit_dirty') else ''} · "
        f"{len(outcomes)} claims in {meta['seconds']:.0f} s · mutants: {meta['mutants']} · "
        f"{sum(len(o.verdict.figures) for o in outcomes)} figures, "
        f"{len(uncaptioned(outcomes))} without caption",
        "",
        "Counts are the claims about the methods by their best evidence (a recorded "
        "paper-scale run re-decided under the same rules outranks quick mode), as 'paper "
        "setting + substitute' where substitutes are among them; errata are counted apart.",
        "",
        "| paper | claims | "
        + " | ".join(s.value for s in Status)
        + " | errata | mutants caught |",
        "|---|---|" + "---|" * len(Status) + "---|---|",
    ]
    for paper, row in counts.items():
        lines.append(
            f"| [{paper}](#{paper}) | {row['claims']} | "
            + " | ".join(_split(row, s) for s in Status)
            + f" | {row['errata_found']} | {row['caught']}/{row['run']} |"
        )
    for paper in counts:
        lines += [
            "",
            f'<a id="{paper}"></a>',
            f"## {paper}",
            "",
            "| claim | location | kind | setting | verdict | quick | why | measured | "
            "tolerance | mutants caught |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        mine = [o for o in outcomes if o.claim.paper == paper]
        for o in mine:
            v = o.verdict
            lines.append(
                f"| [{o.claim.name}](#{o.anchor}) | {_md_cell(o.claim.location)} | "
                f"{o.claim.kind.value} | {o.claim.setting.label} | **{o.status.value}** | "
                f"{v.status.value} | {_md_cell(v.full_reason)} | {_md_cell(v.measured)} | "
                f"{_md_cell(v.tolerance)} | {o.power} |"
            )
        for o in mine:
            lines += _markdown_claim(o)
    lines += ["", '<a id="errata"></a>', "## Errata", ""]
    for e in (e for e in registered_errata() if e.paper in counts):
        links = ", ".join(f"[{k.split('/', 1)[1]}](#{k.replace('/', '-')})" for k in e.claims)
        lines.append(
            f'- <a id="{e.anchor}"></a>**{e.paper}, {e.location}.** {e.says} — {e.correction}'
            + (f" *Rests on:* {links}." if links else " *Read from the text.*")
        )
    lines += ["", "## Run", ""]
    lines += [f"- **{k}**: {json.dumps(v, ensure_ascii=False)}" for k, v in meta.items()]
    return "\n".join(lines) + "\n"


def _split(row: dict[str, Any], status: Status) -> str:
    n, sub = row["status"].get(status, 0), row["substitute"].get(status, 0)
    return f"{n} ({n - sub} + {sub})" if sub else str(n)


def _markdown_claim(o: Outcome) -> list[str]:
    v = o.verdict
    setting = o.claim.setting
    lines = [
        "",
        f'<a id="{o.anchor}"></a>',
        f"### {o.claim.name} — {o.claim.location}: **{o.status.value}**",
        "",
        f"*Claim.* {o.claim.statement}",
        "",
        f"*Kind:* {o.claim.kind.value}. *Setting:* "
        + ("the paper's" if setting.label == "paper" else f"a substitute ({setting.differs})")
        + (f". *Margin:* {o.claim.margin}" if o.claim.margin else "")
        + (f". *Quick mode:* {v.status.value}" if o.paper_scale is not None else "")
        + ".",
        "",
        f"*Why.* {v.full_reason}",
        "",
        f"*Measured* {format_value(v.measured)}; *expected* {format_value(v.expected)}; "
        f"*tolerance* {format_value(v.tolerance)}; {o.seconds:.2f} s.",
        "",
        *([f"*Base seeds:* {o.stability}.", ""] if o.stability else []),
    ]
    if v.status is Status.ERROR:
        lines.append(f"```\n{v.evidence_text}\n```")
    else:
        lines += [f"- {p}".replace("\n- ", "\n    - ") for p in v.points]
    for r in v.recorded:
        lines += ["", f"*Recorded* ({r.date}, commit {r.commit[:10]}, `{r.command}`): {r.summary}"]
        if r.decision is not None:
            lines[-1] += (
                f" Re-decided under the current rules: **{r.decision.status.value}** "
                f"({r.decision.rule}; {'counts' if r.counts else 'does not count'}"
                f"{': ' + r.why if r.why else ''})."
            )
    for fig in v.figures:
        lines += ["", f"![{o.claim.name}]({fig})"]
        lines += ["", f"*{getattr(fig, 'caption', '') or '(no caption)'}*"]
    if o.mutants:
        lines += ["", f"*Mutants caught {o.power}:*"]
        lines += [
            f"- `{m.mutant.name}` ({m.mutant.description}): {m.status.value}, must be "
            f"{m.mutant.expect} — {'caught' if m.caught else '**not caught**'}"
            + (f": {m.reason}" if m.reason else "")
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

    ``meta`` is the run's metadata
    (:func:`laplace_lab.paper_checks.verification.run_info.run_metadata`); without it a minimal one
    is built from ``full`` and ``seed``. Returns the paths keyed by ``"html"``, ``"markdown"`` and
    ``"json"``.
    """
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
