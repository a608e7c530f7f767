"""The HTML page of the verification report (``index.html``).

Layout, top to bottom: the run in one line (with the count of figures saved without a caption)
and a table per paper of the claims by verdict
(each count split into the paper's setting and substitutes), the errata counted apart, and
mutant power; then per paper its citation, a table of its claims (kind, setting, verdict — the
recorded paper-scale run first where one counts, the quick verdict beside it —, the reason in
one line, measured, tolerance, mutants caught) and a section per claim (statement, reason,
evidence as a list, recorded runs, figures with captions, the mutants and what they gave,
the errata that rest on it); then the errata, each linked to its claims; then the run's
metadata in full. Filters (status, paper, only the verdicts that differ from the expected ones)
sit above the claims; the page needs no external asset. No text is cut: long parts are folded
into ``<details>`` elements.
"""

from __future__ import annotations

import html
import json
import sys
from collections.abc import Sequence
from typing import Any

from laplace_lab.paper_checks.verification.errata import errata_of, registered_errata
from laplace_lab.paper_checks.verification.outcome import Outcome, format_value, paper_counts
from laplace_lab.paper_checks.verification.registry import Status

__all__ = ["differs", "render_html", "uncaptioned"]

e = html.escape

_CSS = """
body{font-family:system-ui,sans-serif;max-width:78rem;margin:1.5rem auto;padding:0 1rem;
line-height:1.45;color:#1f2328}
h1{margin-bottom:.2rem}h2{margin-top:2.5rem;border-bottom:2px solid #d0d7de}
h3{margin:0 0 .4rem}h4{margin:.8rem 0 .3rem;font-size:.95rem}
table{border-collapse:collapse;width:100%;font-size:.85rem;margin:.5rem 0}
td,th{border:1px solid #d0d7de;padding:.25rem .45rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
.badge{display:inline-block;padding:.05rem .45rem;border-radius:.7rem;font-size:.75rem;
font-weight:600;color:#fff;white-space:nowrap}
.CONFIRMED{background:#1a7f37}.REFUTED{background:#b42318}
.NOT_REPRODUCIBLE_HERE{background:#9a6700}.ERROR{background:#8250df}
.INCONCLUSIVE{background:#57606a}.split{color:#57606a;font-size:.75rem;white-space:nowrap}
.zero{color:#8c959f}.why{max-width:26rem}.why.CONFIRMED-why{color:#57606a}
.claim{border:1px solid #d0d7de;border-radius:.5rem;padding:.8rem 1rem;margin:1rem 0}
.meta{color:#57606a;font-size:.9rem}.loc{color:#57606a;font-weight:normal;font-size:.9rem}
.statement{font-style:italic}.reason{background:#f6f8fa;padding:.3rem .6rem;border-radius:.3rem}
.caught{color:#1a7f37;font-weight:600}.missed{color:#b42318;font-weight:600}
figure{margin:.6rem 0}figure img{max-width:min(100%,62rem);border:1px solid #eaeef2}
ul.errata li{margin:.35rem 0}
figcaption{font-size:.85rem;color:#3d444d;max-width:60rem}
pre{background:#f6f8fa;padding:.6rem;overflow-x:auto;font-size:.8rem}
ul.evidence li{margin:.15rem 0}nav a{margin-right:.8rem}
.warn{color:#b42318;font-weight:600}code{font-size:.85em;overflow-wrap:anywhere}
td,.reason,.statement,li,figcaption{overflow-wrap:break-word}
.nocaption{color:#b42318;font-style:italic}details.long summary{cursor:pointer;color:#0969da}
.filters{background:#f6f8fa;border:1px solid #d0d7de;border-radius:.5rem;padding:.5rem .8rem;
margin:.8rem 0;position:sticky;top:0;z-index:1}.filters label{margin-right:.8rem;
white-space:nowrap}.filters .shown{font-weight:600;margin-left:.5rem}
[hidden]{display:none!important}
"""

_LEGEND = (
    "CONFIRMED: the claim holds as measured (within the tolerance of an exact claim; a "
    "significant ordering of a superiority claim; an interval inside the margin taken from the "
    "paper for an equivalence claim). REFUTED: it does not (the counterexample, or the reverse "
    "ordering significant, or the interval beyond the margin, is in the evidence). "
    "INCONCLUSIVE: the check ran here and its data cannot decide at this budget; the evidence "
    "gives the interval, the smallest detectable effect and the replicates that would decide. "
    "NOT_REPRODUCIBLE_HERE: the check could not run here, or a specific number of the paper was "
    "measured on a substitute (the reason is given). ERROR: our own implementation failed a "
    "self-check or crashed — a defect of ours, not a verdict on the paper. Counts are 'paper "
    "setting + substitute'; a recorded paper-scale run, re-decided under the same rules, "
    "outranks quick mode. Errata (inconsistencies of the text, computed or read) are counted "
    "apart from the claims. Mutants caught k/n: each claim "
    "is re-run under deliberately wrong variants of what it relies on; k of n gave the "
    "verdict they must give (a check that cannot say no would catch none)."
)


def _badge(status: Status) -> str:
    return f"<span class='badge {status.value}'>{status.value}</span>"


def _long(value: Any, limit: int = 160) -> str:
    """Escaped text, never cut: longer than ``limit`` characters, it is folded into a
    ``<details>`` element whose summary gives its length."""
    text = format_value(value)
    if len(text) <= limit:
        return e(text)
    return (
        f"<details class='long'><summary>{len(text.split())} words</summary>"
        f"<div>{e(text)}</div></details>"
    )


def differs(o: Outcome) -> bool:
    """The quick verdict differs from the expected one, or a mutant was not caught."""
    return o.verdict.status is not o.claim.expected or any(not m.caught for m in o.mutants)


def _data(o: Outcome) -> str:
    """The attributes the page's filters read."""
    return (
        f" data-status='{o.status.value}' data-paper='{e(o.claim.paper)}'"
        f" data-differs='{int(differs(o))}'"
    )


def _title(paper: str, outcomes: Sequence[Outcome]) -> str:
    """The paper's citation: the first paragraph of its claims package's docstring."""
    for o in outcomes:
        package = sys.modules.get(o.claim.func.__module__.rsplit(".", 1)[0])
        doc = (getattr(package, "__doc__", None) or "").strip()
        if doc and package.__name__.startswith("laplace_lab.paper_checks."):
            first = " ".join(doc.split("\n\n")[0].split()).replace("*", "")
            return first.removeprefix("Claims of ")
    return paper


def _overview(outcomes: Sequence[Outcome], meta: dict[str, Any]) -> str:
    counts = paper_counts(outcomes)
    rows = []
    for paper, row in counts.items():
        cells = "".join(_count_cell(row, s) for s in Status)
        power = f"{row['caught']}/{row['run']}" if row["run"] else "none run"
        missed = row["run"] - row["caught"] or not row["run"]
        rows.append(
            f"<tr><td><a href='#{e(paper)}'>{e(paper)}</a></td><td class='num'>{row['claims']}"
            f"</td>{cells}<td class='num'>{row['errata_found']}</td>"
            f"<td class='num{' warn' if missed else ''}'>{power}</td>"
            f"<td class='num'>{row['s']:.0f} s</td></tr>"
        )
    total = {s: sum(r["status"].get(s, 0) for r in counts.values()) for s in Status}
    caught = sum(r["caught"] for r in counts.values())
    run = sum(r["run"] for r in counts.values())
    claims = sum(r["claims"] for r in counts.values())
    errata = sum(r["errata_found"] for r in counts.values())
    rows.append(
        f"<tr><th>all</th><th class='num'>{claims}</th>"
        + "".join(f"<th class='num'>{total[s]}</th>" for s in Status)
        + f"<th class='num'>{errata}</th>"
        + f"<th class='num'>{caught}/{run}</th><th class='num'>{meta['seconds']:.0f} s</th></tr>"
    )
    head = "".join(f"<th>{_badge(s)}</th>" for s in Status)
    return (
        "<table class='overview'><thead><tr><th>paper</th><th>claims</th>"
        f"{head}<th>errata</th><th>mutants caught</th><th>time</th></tr></thead>"
        f"<tbody>{''.join(rows)}"
        f"</tbody></table><p class='meta'>{e(_LEGEND)}</p>"
    )


def _count_cell(row: dict[str, Any], status: Status) -> str:
    """A count of the overview, split into the paper's setting and substitutes."""
    n = row["status"].get(status, 0)
    split = (
        f"<br><span class='split'>{row['paper'].get(status, 0)} paper + "
        f"{row['substitute'].get(status, 0)} subst.</span>"
        if row["substitute"].get(status, 0)
        else ""
    )
    return f"<td class='num{'' if n else ' zero'}'>{n}{split}</td>"


def _setting(o: Outcome, limit: int = 0) -> str:
    """The claim's setting; a substitute's differences folded into a ``<details>`` element
    beyond ``limit`` characters (0: never, as in the claim's section)."""
    setting = o.claim.setting
    if setting.label == "paper":
        return "paper" + (" (a table's number)" if setting.specific else "")
    what = _long(setting.differs, limit) if limit else e(setting.differs)
    return "substitute" + (" (a table's number)" if setting.specific else "") + f": {what}"


def _verdict_cell(o: Outcome) -> str:
    """The headline status; under it the quick verdict where a paper-scale run decides."""
    cell = _badge(o.status)
    record = o.paper_scale
    if record is not None:
        cell += (
            f"<br><span class='split'>paper-scale run {e(record.date)}; quick: "
            f"{e(o.verdict.status.value)}</span>"
        )
    if not o.stable:
        cell += f"<br><span class='warn'>{e(o.stability)}</span>"
    return cell


def _claims_table(outcomes: Sequence[Outcome]) -> str:
    rows = []
    for o in outcomes:
        v = o.verdict
        missed = any(not m.caught for m in o.mutants)
        rows.append(
            f"<tr class='row'{_data(o)}><td><a href='#{e(o.anchor)}'>{e(o.claim.name)}</a></td>"
            f"<td>{e(o.claim.location)}</td><td>{e(o.claim.kind.value)}</td>"
            f"<td>{_setting(o, 60)}</td><td>{_verdict_cell(o)}</td>"
            f"<td class='why {o.status.value}-why'>{_long(v.full_reason, 240)}</td>"
            f"<td>{_long(v.measured)}</td><td>{_long(v.tolerance)}</td>"
            f"<td class='num{' warn' if missed else ''}'>{e(o.power)}</td></tr>"
        )
    return (
        "<table><thead><tr><th>claim</th><th>location</th><th>kind</th><th>setting</th>"
        "<th>verdict</th><th>why</th><th>measured</th><th>tolerance</th><th>mutants caught</th>"
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _evidence(o: Outcome) -> str:
    v = o.verdict
    if v.status is Status.ERROR:
        return f"<details><summary>traceback</summary><pre>{e(v.evidence_text)}</pre></details>"
    if not v.points:
        return ""
    return "<ul class='evidence'>" + "".join(_point(p) for p in v.points) + "</ul>"


def _point(point: str) -> str:
    """One evidence point as a list item; its ``"\n- "`` parts become sub-items."""
    head, *subs = point.split("\n- ")
    inner = "".join(f"<li>{e(x.strip())}</li>" for x in subs if x.strip())
    return f"<li>{e(head.strip())}" + (f"<ul>{inner}</ul>" if inner else "") + "</li>"


def _mutants(o: Outcome) -> str:
    if not o.mutants:
        return ""
    rows = "".join(
        f"<tr><td><code>{e(m.mutant.name)}</code>{' (heavy)' if m.mutant.heavy else ''}</td>"
        f"<td>{e(m.mutant.description)}</td><td>{_badge(Status(m.mutant.expect))}</td>"
        f"<td>{_badge(m.status)}</td><td class='{'caught' if m.caught else 'missed'}'>"
        f"{'caught' if m.caught else 'not caught'}</td><td>{_long(m.reason, 240)}</td></tr>"
        for m in o.mutants
    )
    return (
        f"<h4>Mutants caught {e(o.power)}</h4><table><thead><tr><th>mutant</th>"
        "<th>what is wrong</th><th>must give</th><th>gave</th><th></th><th>why</th></tr>"
        f"</thead><tbody>{rows}</tbody></table>"
    )


def _claim_section(o: Outcome) -> str:
    v = o.verdict
    figures = "".join(_figure(o, f) for f in v.figures)
    recorded = "".join(
        f"<p><i>Recorded</i> ({e(r.date)}, commit {e(r.commit[:10])}, <code>{e(r.command)}"
        f"</code>): {e(r.summary)}"
        + (
            f" <b>Re-decided under the current rules: {_badge(r.decision.status)}</b> "
            f"({e(r.decision.rule)}{'; counts' if r.counts else '; does not count'}"
            f"{': ' + e(r.why) if r.why else ''}). " + " ".join(e(p) for p in r.decision.points)
            if r.decision is not None
            else ""
        )
        + "</p>"
        for r in v.recorded
    )
    seeds = f"<p><i>Base seeds:</i> {e(o.stability)}.</p>" if o.stability else ""
    errata = errata_of(o.claim.key)
    errata_html = (
        "<p><i>Errata resting on this claim:</i> "
        + ", ".join(
            f"<a href='#{e(x.anchor)}'>{_erratum_label(x)} ({e(x.location)})</a>" for x in errata
        )
        + "</p>"
        if errata
        else ""
    )
    drift = (
        f"<p class='warn'>Recorded verdict: {o.claim.expected.value}; this run gave "
        f"{v.status.value}.</p>"
        if v.status is not o.claim.expected
        else ""
    )
    margin = f" Margin: {e(o.claim.margin)}." if o.claim.margin else ""
    return (
        f"<section class='claim' id='{e(o.anchor)}'{_data(o)}><h3>{_badge(o.status)} "
        f"{e(o.claim.name)} "
        f"<span class='loc'>— {e(o.claim.location)}</span></h3>{drift}"
        f"<p class='statement'>{e(o.claim.statement)}</p>"
        f"<p class='meta'>Kind: {e(o.claim.kind.value)}. Setting: {_setting(o)}.{margin}"
        + (
            f" Quick mode: {_badge(v.status)}; the recorded paper-scale run decides."
            if o.paper_scale is not None
            else ""
        )
        + "</p>"
        f"<p class='reason'><b>Why:</b> {e(v.full_reason)}</p>{seeds}"
        "<table><tr><th>measured</th><th>expected</th><th>tolerance</th><th>time</th></tr>"
        f"<tr><td>{e(format_value(v.measured))}</td><td>{e(format_value(v.expected))}</td>"
        f"<td>{e(format_value(v.tolerance))}</td><td class='num'>{o.seconds:.1f} s</td>"
        "</tr></table>"
        f"<h4>Evidence</h4>{_evidence(o)}{recorded}{figures}{_mutants(o)}{errata_html}"
        "</section>"
    )


def _figure(o: Outcome, f: Any) -> str:
    """A figure with its caption, or a visible placeholder where it was saved without one."""
    caption = getattr(f, "caption", "")
    cap = (
        f"<figcaption>{e(caption)}</figcaption>"
        if caption
        else "<figcaption class='nocaption'>(no caption)</figcaption>"
    )
    return f"<figure><img src='{e(str(f))}' alt='{e(o.claim.name)}: {e(caption)}'>{cap}</figure>"


def uncaptioned(outcomes: Sequence[Outcome]) -> list[str]:
    """The figures of ``outcomes`` saved without a caption."""
    return [str(f) for o in outcomes for f in o.verdict.figures if not getattr(f, "caption", "")]


_SCRIPT = """
(function(){
  var f=document.getElementById('filters');if(!f)return;
  var items=document.querySelectorAll('[data-status]');
  function apply(){
    var on={};
    f.querySelectorAll('input[name=status]').forEach(function(b){on[b.value]=b.checked;});
    var paper=f.querySelector('select[name=paper]').value;
    var only=f.querySelector('input[name=differs]').checked;var shown=0;
    items.forEach(function(el){
      var ok=on[el.dataset.status]&&(!paper||el.dataset.paper===paper)&&
        (!only||el.dataset.differs==='1');
      el.hidden=!ok;if(ok&&el.tagName==='SECTION')shown++;
    });
    f.querySelector('.shown').textContent=shown+' of '+f.dataset.total+' claims shown';
  }
  f.addEventListener('change',apply);apply();
})();
"""


def _filters(outcomes: Sequence[Outcome], papers: Sequence[str]) -> str:
    """The filters by status, by paper and to the verdicts that differ from the expected."""
    present = [s for s in Status if any(o.status is s for o in outcomes)]
    boxes = "".join(
        f"<label><input type='checkbox' name='status' value='{s.value}' checked> "
        f"{_badge(s)}</label>"
        for s in present
    )
    options = "".join(f"<option value='{e(p)}'>{e(p)}</option>" for p in papers)
    return (
        f"<form id='filters' class='filters' data-total='{len(outcomes)}' "
        "onsubmit='return false'><b>Show:</b> "
        f"{boxes}<label>paper <select name='paper'><option value=''>all</option>{options}"
        "</select></label><label><input type='checkbox' name='differs'> only verdicts that "
        "differ from the expected ones (quick verdict or a mutant not caught)</label>"
        f"<span class='shown'>{len(outcomes)} of {len(outcomes)} claims shown</span></form>"
    )


def _erratum_label(x: Any) -> str:
    return f"E{x.anchor.rsplit('-', 1)[1]}"


def _errata(papers: Sequence[str], anchors: set[str]) -> str:
    """The errata of the papers in the report, grouped by paper; a claim is linked where the
    report has its section (``anchors``)."""
    parts = []
    known = registered_errata()
    for paper in (p for p in dict.fromkeys(x.paper for x in known) if p in papers):
        items = []
        for x in (x for x in known if x.paper == paper):
            links = ", ".join(
                f"<a href='#{e(k.replace('/', '-', 1))}'>{e(k.split('/', 1)[1])}</a>"
                if k.replace("/", "-", 1) in anchors
                else f"{e(k.split('/', 1)[1])} (not in this run)"
                for k in x.claims
            )
            items.append(
                f"<li id='{e(x.anchor)}'><b>{_erratum_label(x)} · {e(x.location)}.</b> "
                f"<i>The paper:</i> {e(x.says)} <i>Correction:</i> {e(x.correction)} "
                + (f"<i>Rests on:</i> {links}." if links else "<i>Read from the text.</i>")
                + "</li>"
            )
        parts.append(f"<h3>{e(paper)}</h3><ul class='errata'>{''.join(items)}</ul>")
    return f"<section id='errata'><h2>Errata</h2>{''.join(parts)}</section>"


def _value(v: Any) -> str:
    if isinstance(v, dict):
        return "<br>".join(f"{e(str(k))}: {_value(x)}" for k, x in v.items())
    if isinstance(v, list):
        return "<br>".join(_value(x) for x in v) or "–"
    return e("–" if v is None else v if isinstance(v, str) else json.dumps(v))


def _run(meta: dict[str, Any]) -> str:
    rows = "".join(f"<tr><th>{e(k)}</th><td>{_value(v)}</td></tr>" for k, v in meta.items())
    return f"<section id='run'><h2>Run</h2><table>{rows}</table></section>"


def render_html(outcomes: Sequence[Outcome], meta: dict[str, Any]) -> str:
    """The report page for ``outcomes`` of a run described by ``meta``."""
    papers = list(dict.fromkeys(o.claim.paper for o in outcomes))
    commit = meta["commit"][:10] + (" (modified)" if meta.get("commit_dirty") else "")
    date = meta["date"].replace("T", " ").replace("+00:00", " UTC")
    line = (
        f"{meta['mode']} mode · seed {meta['seed']} · {date} · commit {commit} · "
        f"{len(outcomes)} claims in {meta['seconds']:.0f} s · mutants: {meta['mutants']} · "
        f"{meta['python']} · {meta['threads'].get('usable_cpus', '?')} CPUs"
        + (
            f" · load {meta['load']['15min']:.2f} (15 min)"
            if isinstance(meta.get("load"), dict)
            else ""
        )
    )
    figures = sum(len(o.verdict.figures) for o in outcomes)
    missing = len(uncaptioned(outcomes))
    line += f" · {figures} figures" + (
        f", {missing} without caption" if missing else ", all with captions"
    )
    nav = "".join(f"<a href='#{e(p)}'>{e(p)}</a>" for p in papers)
    body = []
    for paper in papers:
        mine = [o for o in outcomes if o.claim.paper == paper]
        body.append(
            f"<section id='{e(paper)}'><h2>{e(paper)}</h2><p class='meta'>"
            f"{e(_title(paper, mine))}</p>{_claims_table(mine)}"
            + "".join(_claim_section(o) for o in mine)
            + "</section>"
        )
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>laplace-lab verification report</title><style>{_CSS}</style></head><body>"
        f"<h1>laplace-lab verification report</h1><p class='meta'>{e(line)}</p>"
        f"<nav>{nav}<a href='#errata'>errata</a><a href='#run'>run</a></nav>"
        f"{_overview(outcomes, meta)}{_filters(outcomes, papers)}{''.join(body)}"
        f"{_errata(papers, {o.anchor for o in outcomes})}{_run(meta)}"
        f"<script>{_SCRIPT}</script></body></html>\n"
    )
