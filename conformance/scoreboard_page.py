"""The scoreboard as a page: HTML and Markdown renderings of one ``scoreboard.json`` payload.

A table per capability, a row per case, a column per library; each cell the status and the
error-to-tolerance ratio max |error| / tolerance (below 1 passes), a FAIL or ERROR linked to
its reproducer, and a cell that is not a PASS tagged with the finding that explains it
(``laplace-torch F1``: its id, the same in ``docs/validation.md``, linked to its section
there, and its kind: bug, documented limitation, default or not offered). The reason of every
cell that is not a PASS is shown whole: in the HTML page in the cell, one click away
(``<details>``), in the Markdown page in a list under each table. The header holds everything
that changes from run to run: versions, date, commit and run times.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

__all__ = ["format_ratio", "scoreboard_html", "scoreboard_markdown"]

#: The counted statuses: the cases a library offers (PASS, FAIL, ERROR), then those counted
#: apart, N/A (not offered: refused by the adapter before the call) and SKIP (not declared).
_OFFERED = ("PASS", "FAIL", "ERROR")
_APART = ("N/A", "SKIP")
#: What the statuses mean (the legend of both pages).
LEGEND = (
    ("PASS", "max |error| / tolerance ≤ 1 (the number in the cell)"),
    ("FAIL", "the library disagrees with the oracle beyond the tolerance"),
    ("ERROR", "the library crashed, or returned a malformed answer, on a capability it offers"),
    (
        "N/A",
        "not offered: the adapter refuses the request before calling the library, and says why",
    ),
    ("SKIP", "the adapter does not declare the capability (or the library is not installed)"),
)


def format_ratio(ratio: float | None) -> str:
    """The ratio in a cell: two significant digits, powers of ten for the very small or large.

    Parameters
    ----------
    ratio : float or None
        max |error| / tolerance, None where a case measures none (samples, ERROR, N/A, SKIP).

    Returns
    -------
    str
        ``""`` for None, e.g. ``"0.31"``, ``"610"``, ``"1.8e-3"``, ``"7.7e4"``.
    """
    if ratio is None:
        return ""
    if ratio == 0:
        return "0"
    if 0.01 <= ratio < 1000:
        return f"{float(f'{ratio:.2g}'):g}"
    mantissa, exponent = f"{ratio:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _findings(payload: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Finding id → the finding (id, library, kind, title, link)."""
    return {f["id"]: f for f in payload["findings"]}


def _groups(payload: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for case in payload["cases"]:
        groups.setdefault(case["capability"], []).append(case)
    return groups


def _cells(payload: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(lib["library"], r["case"]): r for lib in payload["libraries"] for r in lib["results"]}


def _versions(lib: dict[str, Any]) -> str:
    rest = ", ".join(f"{d} {v}" for d, v in lib["versions"].items() if d != lib["distribution"])
    return f"{lib['library']} {lib['version']}" + (f" ({rest})" if rest else "")


def _header_lines(payload: dict[str, Any]) -> list[str]:
    gen = payload["generated"]
    times = ", ".join(f"{n} {s:.1f} s" for n, s in gen["seconds"].items())
    lines = [
        f"Seed {payload['seed']}; generated {gen['date']} at commit {gen['commit']}"
        + (f"; run times {times}." if times else "."),
        "Versions: " + "; ".join(_versions(lib) for lib in payload["libraries"]) + ".",
    ]
    for missing in payload["not_installed"]:
        lines.append(f"Not installed: {missing['library']} ({missing['install']}).")
    return lines


def _headline(lib: dict[str, Any]) -> str:
    """``laplace-torch 0.3: 59 PASS, 27 FAIL, 8 ERROR of 94 offered cases; apart: 11 N/A, …``"""
    c = lib["counts"]
    offered = sum(c.get(o, 0) for o in _OFFERED)
    main = ", ".join(f"{c.get(o, 0)} {o}" for o in _OFFERED)
    apart = ", ".join(f"{c.get(o, 0)} {o}" for o in _APART)
    return f"{lib['library']} {lib['version']}: {main} of {offered} offered cases; apart: {apart}"


def _counts_table(payload: dict[str, Any], row: Callable[[list[str]], str]) -> list[str]:
    rows = [row(["library", "version", *_OFFERED, "offered", *_APART])]
    for lib in payload["libraries"]:
        c = lib["counts"]
        offered = str(sum(c.get(o, 0) for o in _OFFERED))
        values = [str(c.get(o, 0)) for o in _OFFERED] + [offered]
        values += [str(c.get(o, 0)) for o in _APART]
        rows.append(row([lib["library"], lib["version"], *values]))
    return rows


def _has_reason(cell: dict[str, Any] | None) -> bool:
    return cell is not None and cell["status"] != "PASS" and bool(cell["reason"])


def _cell_markdown(cell: dict[str, Any] | None, finding: dict[str, Any] | None) -> str:
    if cell is None:
        return ""
    status, ratio = cell["status"], format_ratio(cell["ratio"])
    text = status if status in ("PASS", "SKIP") else f"**{status}**"
    text += f" {ratio}" if ratio else ""
    if cell["reproducer"]:
        text += f" [reproducer]({cell['reproducer']})"
    if finding is not None:
        text += f" [{finding['id']}]({finding['link']}) *{finding['kind']}*"
    return text


def scoreboard_markdown(payload: dict[str, Any]) -> str:
    """The Markdown page of a scoreboard payload (``docs/scoreboard.md``).

    Parameters
    ----------
    payload : dict
        As returned by :func:`~laplace_lab.conformance.scoreboard.scoreboard_payload`.

    Returns
    -------
    str
    """
    libs = [lib["library"] for lib in payload["libraries"]]
    findings = _findings(payload)
    cells = _cells(payload)

    def row(values: list[str]) -> str:
        return "| " + " | ".join(v.replace("|", "\\|") for v in values) + " |"

    counts = _counts_table(payload, row)
    lines = [
        "# Conformance scoreboard",
        "",
        "Every installed library of `laplace_lab.conformance.libraries.LIBRARIES` on every "
        "conformance case ([validation.md](validation.md): the contract, the oracles, the "
        "tolerance rule). A cell is the status and max |error| / tolerance (PASS below 1); "
        "each FAIL and ERROR links to a stand-alone reproducer, and each cell that is not a "
        "PASS to the finding that explains it (its id and kind: *bug*, *documented "
        "limitation*, *default* or *not offered*); every such cell's reason is listed, whole, "
        "under its table. Regenerate this page, `scoreboard.json`, `scoreboard.html` and the "
        "reproducers with",
        "",
        "```",
        payload["command"],
        "```",
        "",
        *(line + "  " for line in _header_lines(payload)),
        "",
        *(f"- {status}: {meaning}" for status, meaning in LEGEND),
        "",
        *(f"- {_headline(lib)}" for lib in payload["libraries"]),
        "",
        counts[0],
        "|---|---|" + "---:|" * (len(_OFFERED) + 1 + len(_APART)),
        *counts[1:],
    ]
    if findings:
        lines += ["", "Findings:", ""]
        for f in findings.values():
            lines.append(f"- [{f['id']}]({f['link']}) (*{f['kind']}*): {f['title']}")
    for capability, group in _groups(payload).items():
        lines += ["", f"## {capability}", "", row(["case", *libs])]
        lines.append("|---" * (1 + len(libs)) + "|")
        reasons = []
        for case in group:
            values = [f"`{case['case']}`"]
            for lib in libs:
                cell = cells.get((lib, case["case"]))
                finding = None if cell is None else findings.get(cell["finding"] or "")
                values.append(_cell_markdown(cell, finding))
                if _has_reason(cell) and cell["status"] != "SKIP":
                    status, reason = cell["status"], cell["reason"]
                    reasons.append(f"- `{case['case']}`, {lib}, {status}: {reason}")
            lines.append(row(values))
        if reasons:
            lines += ["", "Reasons (a SKIP's: the target does not declare the capability):", ""]
            lines += reasons
    return "\n".join(lines) + "\n"


_CSS = """
body{font-family:system-ui,sans-serif;max-width:90rem;margin:2rem auto;padding:0 1rem;
line-height:1.4;color:#222}table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}
td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.PASS{background:#dafbe1}td.FAIL{background:#ffebe9}
td.ERROR{background:#f3e8ff}td.NA{background:#eef2f7}td.SKIP{background:#fff8c5}
tr.group th{background:#e6e6e6;text-align:left}code{font-size:.85rem}
td details{max-width:22rem}td summary{cursor:pointer}
td details p{margin:.25rem 0;white-space:normal;overflow-wrap:anywhere}
.kind{font-style:italic;color:#555}
"""


def _css_class(status: str) -> str:
    return "NA" if status == "N/A" else status


def _finding_tag(finding: dict[str, Any]) -> str:
    e = html.escape
    return (
        f"<a class='finding' href='{e(finding['link'])}'>{e(finding['id'])}</a> "
        f"<span class='kind'>{e(finding['kind'])}</span>"
    )


def _cell_html(cell: dict[str, Any] | None, finding: dict[str, Any] | None) -> str:
    e = html.escape
    if cell is None:
        return "<td></td>"
    status, ratio = cell["status"], format_ratio(cell["ratio"])
    head = f"<b>{e(status)}</b>" + (f" {e(ratio)}" if ratio else "")
    links = ""
    if cell["reproducer"]:
        links += f" <a href='{e(cell['reproducer'])}'>reproducer</a>"
    if finding is not None:
        links += " " + _finding_tag(finding)
    if _has_reason(cell):
        inner = (
            f"<details><summary>{head}</summary><p class='reason'>{e(cell['reason'])}</p>"
            f"</details>{links}"
        )
    else:
        inner = head + links
    return f"<td class='{_css_class(status)}'>{inner}</td>"


def scoreboard_html(payload: dict[str, Any]) -> str:
    """The HTML page of a scoreboard payload (``scoreboard.html``, one file, no scripts).

    Parameters
    ----------
    payload : dict
        As returned by :func:`~laplace_lab.conformance.scoreboard.scoreboard_payload`.

    Returns
    -------
    str
    """
    e = html.escape
    libs = [lib["library"] for lib in payload["libraries"]]
    findings = _findings(payload)
    cells = _cells(payload)

    def row(values: list[str]) -> str:
        return "<tr>" + "".join(f"<td>{e(v)}</td>" for v in values) + "</tr>"

    counts = _counts_table(payload, row)
    counts[0] = counts[0].replace("<td>", "<th>").replace("</td>", "</th>")
    listed = "".join(f"<li>{_finding_tag(f)}: {e(f['title'])}</li>" for f in findings.values())
    legend = "".join(f"<li><b>{e(s)}</b>: {e(m)}</li>" for s, m in LEGEND)
    headlines = "".join(f"<li>{e(_headline(lib))}</li>" for lib in payload["libraries"])
    head = "".join(f"<th>{e(lib)}</th>" for lib in libs)
    body = []
    for capability, group in _groups(payload).items():
        body.append(f"<tr class='group'><th colspan='{1 + len(libs)}'>{e(capability)}</th></tr>")
        for case in group:
            tds = "".join(
                _cell_html(
                    cell := cells.get((lib, case["case"])),
                    None if cell is None else findings.get(cell["finding"] or ""),
                )
                for lib in libs
            )
            body.append(
                f"<tr><td title='{e(case['description'])}'><code>{e(case['case'])}</code></td>"
                f"{tds}</tr>"
            )
    header = "".join(f"<p>{e(line)}</p>" for line in _header_lines(payload))
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>laplace-lab conformance scoreboard</title><style>{_CSS}</style></head><body>"
        "<h1>Conformance scoreboard</h1><p>Each cell: the status and max |error| / tolerance "
        "(PASS below 1); open a cell that is not a PASS for its whole reason; its tag is the "
        "finding that explains it, linked to its section of docs/validation.md. Regenerate "
        f"with <code>{e(payload['command'])}</code>.</p>{header}"
        f"<p>Tolerance rule: {e(payload['tolerance_rule'])}.</p><ul>{legend}</ul>"
        f"<ul>{headlines}</ul><table>{''.join(counts)}</table>"
        + (f"<p>Findings:</p><ul>{listed}</ul>" if listed else "")
        + f"<table><thead><tr><th>case</th>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table></body></html>\n"
    )
