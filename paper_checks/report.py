"""Write the verification report: ``report.md`` and ``verdicts.json``.

``verdicts.json`` is a list of objects with the keys ``paper``, ``claim``, ``location``,
``statement``, ``status``, ``expected_status``, ``measured``, ``expected``, ``tolerance``,
``evidence``, ``details``, ``figures`` and ``seconds``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paper_checks.registry import Claim, Status, Verdict

__all__ = ["Outcome", "write_report"]


@dataclass(frozen=True)
class Outcome:
    """A claim together with the verdict it earned and the time it took."""

    claim: Claim
    verdict: Verdict
    seconds: float

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
        }


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _markdown(outcomes: Sequence[Outcome], *, full: bool, seed: int) -> str:
    counts = Counter(o.verdict.status for o in outcomes)
    lines = [
        "# laplace-lab verification report",
        "",
        f"Mode: {'full' if full else 'quick'}; seed {seed}; {len(outcomes)} claims: "
        + ", ".join(f"{counts.get(s, 0)} {s.value}" for s in Status)
        + ".",
        "",
        "| paper | claim | location | verdict | measured | expected | tolerance |",
        "|---|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        v = o.verdict
        lines.append(
            f"| {o.claim.paper} | [{o.claim.name}](#{o.claim.paper}-{o.claim.name}) "
            f"| {o.claim.location} | **{v.status.value}** | {_fmt(v.measured)} "
            f"| {_fmt(v.expected)} | {_fmt(v.tolerance)} |"
        )
    current = None
    for o in outcomes:
        if o.claim.paper != current:
            current = o.claim.paper
            lines += ["", f"## {current}"]
        v = o.verdict
        lines += [
            "",
            f'<a id="{o.claim.paper}-{o.claim.name}"></a>',
            f"### {o.claim.name} — {o.claim.location}: **{v.status.value}**",
            "",
            f"*Claim.* {o.claim.statement}",
            "",
            f"*Measured* {_fmt(v.measured)}; *expected* {_fmt(v.expected)}; "
            f"*tolerance* {_fmt(v.tolerance)}; {o.seconds:.2f} s.",
            "",
            v.evidence.strip() if v.status is not Status.ERROR else f"```\n{v.evidence}\n```",
        ]
        lines += [f"\n![{o.claim.name}]({fig})" for fig in v.figures]
    return "\n".join(lines) + "\n"


def write_report(
    outcomes: Sequence[Outcome], out_dir: Path, *, full: bool = False, seed: int = 0
) -> tuple[Path, Path]:
    """Write ``report.md`` and ``verdicts.json`` into ``out_dir``; return their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    md = out_dir / "report.md"
    md.write_text(_markdown(outcomes, full=full, seed=seed), encoding="utf-8")
    js = out_dir / "verdicts.json"
    js.write_text(json.dumps([o.as_json() for o in outcomes], indent=2) + "\n", encoding="utf-8")
    return md, js
