"""The scoreboard as a page: HTML and Markdown renderings of one ``scoreboard.json`` payload.

A table per capability, a row per case, a column per library; each cell the status and the
error-to-tolerance ratio max |error| / tolerance (below 1 passes), a FAIL or ERROR linked to
its reproducer and marked with the library's documented finding (F1, F2, …) that explains
it. The header holds everything that changes from run to run: versions, date, commit and
run times.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

__all__ = ["format_ratio", "scoreboard_html", "scoreboard_markdown"]

_OUTCOMES = ("PASS", "FAIL", "ERROR", "SKIP")


def format_ratio(ratio: float | None) -> str:
    """The ratio in a cell: two significant digits, powers of ten for the very small or large.

    Parameters
    ----------
    ratio : float or None
        max |error| / tolerance, None where a case measures none (samples, ERROR, SKIP).

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


def _finding_labels(payload: dict[str, Any]) -> dict[tuple[str, str], str]:
    """(library, link) → "F1", "F2", … in the order the library lists its findings."""
    labels: dict[tuple[str, str], str] = {}
    for f in payload["findings"]:
        n = sum(1 for key in labels if key[0] == f["library"]) + 1
        labels.setdefault((f["library"], f["link"]), f"F{n}")
    return labels


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


def _cell_markdown(cell: dict[str, Any] | None, label: str | None) -> str:
    if cell is None:
        return ""
    status, ratio = cell["status"], format_ratio(cell["ratio"])
    text = status if status in ("PASS", "SKIP") else f"**{status}**"
    text += f" {ratio}" if ratio else ""
    if cell["reproducer"]:
        text += f" [reproducer]({cell['reproducer']})"
    if label:
        text += f" [{label}]({cell['finding']})"
    return text


def _counts_table(payload: dict[str, Any], row: Callable[[list[str]], str]) -> list[str]:
    rows = [row(["library", "version", *_OUTCOMES])]
    for lib in payload["libraries"]:
        counts = [str(lib["counts"].get(o, 0)) for o in _OUTCOMES]
        rows.append(row([lib["library"], lib["version"], *counts]))
    return rows


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
    labels = _finding_labels(payload)
    cells = _cells(payload)

    def row(values: list[str]) -> str:
        return "| " + " | ".join(v.replace("|", "\\|") for v in values) + " |"

    lines = [
        "# Conformance scoreboard",
        "",
        "Every installed library of `laplace_lab.conformance.libraries.LIBRARIES` on every "
        "conformance case ([validation.md](validation.md): the contract, the oracles, the "
        "tolerance rule). A cell is the status and max |error| / tolerance (PASS below 1); "
        "each FAIL and ERROR links to a stand-alone reproducer and to the documented finding "
        "that explains it. Regenerate this page, `scoreboard.json`, `scoreboard.html` and "
        "the reproducers with",
        "",
        "```",
        payload["command"],
        "```",
        "",
        *(line + "  " for line in _header_lines(payload)),
        "",
        *_counts_table(payload, row)[:1],
        "|---|---|---:|---:|---:|---:|",
        *_counts_table(payload, row)[1:],
    ]
    if payload["findings"]:
        lines += ["", "Findings:", ""]
        for f in payload["findings"]:
            label = labels[(f["library"], f["link"])]
            lines.append(f"- {f['library']} {label}: [{f['title']}]({f['link']})")
    for capability, group in _groups(payload).items():
        lines += ["", f"## {capability}", "", row(["case", *libs])]
        lines.append("|---" * (1 + len(libs)) + "|")
        for case in group:
            values = [f"`{case['case']}`"]
            for lib in libs:
                cell = cells.get((lib, case["case"]))
                label = None if cell is None else labels.get((lib, cell["finding"] or ""))
                values.append(_cell_markdown(cell, label))
            lines.append(row(values))
    return "\n".join(lines) + "\n"


_CSS = """
body{font-family:system-ui,sans-serif;max-width:80rem;margin:2rem auto;padding:0 1rem;
line-height:1.4;color:#222}table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}
td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:left}th{background:#f3f3f3}
td.PASS{background:#dafbe1}td.FAIL{background:#ffebe9}td.ERROR{background:#f3e8ff}
td.SKIP{background:#fff8c5}tr.group th{background:#e6e6e6;text-align:left}code{font-size:.85rem}
"""


def _cell_html(cell: dict[str, Any] | None, label: str | None) -> str:
    e = html.escape
    if cell is None:
        return "<td></td>"
    status, ratio = cell["status"], format_ratio(cell["ratio"])
    inner = f"<b>{status}</b>" + (f" {e(ratio)}" if ratio else "")
    if cell["reproducer"]:
        inner += f" <a href='{e(cell['reproducer'])}'>reproducer</a>"
    if label:
        inner += f" <span title='docs/{e(cell['finding'])}'>{label}</span>"
    return f"<td class='{status}' title='{e(cell['reason'])}'>{inner}</td>"


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
    labels = _finding_labels(payload)
    cells = _cells(payload)

    def row(values: list[str]) -> str:
        return "<tr>" + "".join(f"<td>{e(v)}</td>" for v in values) + "</tr>"

    counts = _counts_table(payload, row)
    counts[0] = counts[0].replace("<td>", "<th>").replace("</td>", "</th>")
    findings = "".join(
        f"<li>{e(f['library'])} {labels[(f['library'], f['link'])]}: {e(f['title'])} "
        f"(docs/{e(f['link'])})</li>"
        for f in payload["findings"]
    )
    head = "".join(f"<th>{e(lib)}</th>" for lib in libs)
    body = []
    for capability, group in _groups(payload).items():
        body.append(f"<tr class='group'><th colspan='{1 + len(libs)}'>{e(capability)}</th></tr>")
        for case in group:
            tds = "".join(
                _cell_html(
                    cell := cells.get((lib, case["case"])),
                    None if cell is None else labels.get((lib, cell["finding"] or "")),
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
        "(PASS below 1); hover for the reason. Regenerate with "
        f"<code>{e(payload['command'])}</code>.</p>{header}"
        f"<p>Tolerance rule: {e(payload['tolerance_rule'])}.</p>"
        f"<table>{''.join(counts)}</table>"
        + (f"<p>Findings:</p><ul>{findings}</ul>" if findings else "")
        + f"<table><thead><tr><th>case</th>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table></body></html>\n"
    )
