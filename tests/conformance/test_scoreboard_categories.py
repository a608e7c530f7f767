"""The scoreboard's five statuses and its findings, as a library maintainer reads them.

ERROR is kept for a library that crashed or answered outside the contract on a capability it
offers; a request the library does not offer is refused by its adapter (``NotOffered``,
before the library is called) and reported N/A with the reason. Each finding has one id,
unique across libraries and the same in docs/validation.md, a kind (bug, documented
limitation, default, not offered), and its tag on the page links to its section. Everything
here reads the committed page and the adapters' sources, except the runner test (one cheap
case on a stand-in target) and the page test (a made-up payload).
"""

from __future__ import annotations

import html
import importlib
import json
import re
from pathlib import Path

import pytest

from laplace_lab.conformance import NotOffered, Outcome, Target, validate
from laplace_lab.conformance.libraries import FINDING_KINDS, LIBRARIES
from laplace_lab.conformance.scoreboard_page import scoreboard_html, scoreboard_markdown

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
COMMITTED = json.loads((DOCS / "scoreboard.json").read_text("utf-8"))
VALIDATION = (DOCS / "validation.md").read_text("utf-8")
#: The adapters that refuse what their library does not offer, by library.
REFUSING = {
    "laplace-torch": "laplace_torch",
    "posteriors": "posteriors",
    "laplax": "laplax",
}
#: What the adapters said when they refused with a plain ValueError (reported ERROR before).
OLD_REFUSALS = ("is not served", "has no joint [W b] factor", "no one-logit Bernoulli")


def _results():
    for lib in COMMITTED["libraries"]:
        for r in lib["results"]:
            yield lib, r


def _adapter_source(library: str) -> str:
    return (ROOT / "conformance" / "adapters" / f"{REFUSING[library]}.py").read_text("utf-8")


def test_no_error_is_a_refusal_of_our_adapters():
    reasons = {name: tuple(_not_offered(name).values()) for name in REFUSING}
    wrong = [
        (lib["library"], r["case"], r["reason"])
        for lib, r in _results()
        if r["status"] == "ERROR"
        and (
            r["reason"].startswith("not offered")
            or any(old in r["reason"] for old in OLD_REFUSALS)
            or any(p in r["reason"] for p in reasons.get(lib["library"], ()))
        )
    ]
    assert wrong == []


def _not_offered(library: str) -> dict[str, str]:
    module = importlib.import_module(f"laplace_lab.conformance.adapters.{REFUSING[library]}")
    return module.NOT_OFFERED


def test_every_na_is_a_refusal_naming_the_library_its_version_and_why():
    nas = [(lib, r) for lib, r in _results() if r["status"] == "N/A"]
    assert nas
    for lib, r in nas:
        prefix = f"not offered by {lib['library']} {lib['version']}: "
        assert r["reason"].startswith(prefix), (lib["library"], r["case"], r["reason"])
        assert r["reproducer"] is None and r["ratio"] is None
        assert any(r["reason"].startswith(t) for t in _not_offered(lib["library"]).values())


def test_the_adapters_refuse_with_not_offered_and_never_with_a_plain_value_error():
    for library in REFUSING:
        source = _adapter_source(library)
        assert "raise NotOffered(" in source, library
        plain = [m.end() for m in re.finditer(r"raise ValueError\(", source)]
        refusals = [
            source[i : i + 400].split("raise ")[0]
            for i in plain
            if any(old in source[i : i + 400].split("raise ")[0] for old in OLD_REFUSALS)
        ]
        assert refusals == [], library
        for reason in _not_offered(library).values():
            assert reason.startswith("not offered by "), reason
            assert "(by design)" not in reason, reason


def test_the_runner_reports_a_refusal_na_and_a_crash_error():
    def refuses(model, X_train, y_train, X_test, **kw):
        raise NotOffered("not offered by a stand-in: no reason at all")

    def crashes(model, X_train, y_train, X_test, **kw):
        raise ValueError("a crash inside the library")

    case = "predictive/linear-gaussian"
    refused = validate(Target.from_callable(refuses, "m:refuses"), only=[case]).results[0]
    crashed = validate(Target.from_callable(crashes, "m:crashes"), only=[case]).results[0]
    assert refused.outcome is Outcome.NA and refused.reproducer == ""
    assert refused.summary == "not offered by a stand-in: no reason at all"
    assert crashed.outcome is Outcome.ERROR and crashed.reproducer
    assert validate(Target.from_callable(refuses, "m:refuses"), only=[case]).passed


def test_the_counts_put_na_apart_and_the_headline_says_so():
    page = (DOCS / "scoreboard.md").read_text("utf-8")
    assert "| library | version | PASS | FAIL | ERROR | offered | N/A | SKIP |" in page
    for lib in COMMITTED["libraries"]:
        c = lib["counts"]
        assert set(c) == {o.value for o in Outcome}
        offered = c["PASS"] + c["FAIL"] + c["ERROR"]
        line = (
            f"- {lib['library']} {lib['version']}: {c['PASS']} PASS, {c['FAIL']} FAIL, "
            f"{c['ERROR']} ERROR of {offered} offered cases; apart: {c['N/A']} N/A, "
            f"{c['SKIP']} SKIP"
        )
        assert line in page


def test_finding_ids_are_unique_and_the_same_in_validation_md():
    findings = [f for lib in LIBRARIES.values() for f in lib.findings]
    ids = [f.id for f in findings]
    assert len(ids) == len(set(ids))
    for lib in LIBRARIES.values():
        for n, f in enumerate(lib.findings, 1):
            assert f.id == f"{lib.name} F{n}" and f.kind in FINDING_KINDS
            anchor = f.link.partition("#")[2]
            heading = re.search(rf'<a id="{re.escape(anchor)}"></a>\n#### (.+)', VALIDATION)
            assert heading, f.id
            assert heading.group(1).startswith(f"{f.id}: "), heading.group(1)
            assert heading.group(1).endswith(f"(*{f.kind}*)"), heading.group(1)
    # no finding heading in validation.md that the scoreboard does not know
    documented = re.findall(r"^#### ((?:\S+) F\d+):", VALIDATION, flags=re.M)
    assert sorted(documented) == sorted(ids)
    assert COMMITTED["findings"] == [
        {
            "id": f.id,
            "library": f.id.rsplit(" ", 1)[0],
            "kind": f.kind,
            "title": f.title,
            "link": f.link,
        }
        for f in findings
    ]


def test_the_kinds_of_the_findings_named_in_the_brief():
    by_id = {f.id: f for lib in LIBRARIES.values() for f in lib.findings}
    assert by_id["laplace-torch F4"].kind == "default"  # 100 Adam steps, documented
    assert "Adam" in VALIDATION.split('<a id="laplace-torch-f4"></a>')[1][:600]
    limitation = by_id["laplax F3"]
    assert limitation.kind == "documented limitation" and "input check" in limitation.title
    kinds = {
        (lib["library"], r["status"]): by_id[r["finding"]].kind
        for lib, r in _results()
        if r["finding"] is not None
    }
    for (library, status), kind in kinds.items():
        assert (status == "N/A") == (kind == "not offered"), (library, status, kind)


def _payload() -> dict:
    reason = "ValueError: " + "a long reason that must not be cut " * 12
    return {
        "seed": 0,
        "command": "laplace-lab validate --scoreboard --seed 0 --out docs",
        "tolerance_rule": "rule",
        "generated": {"date": "2000-01-01", "commit": "abc", "seconds": {"lib": 1.0}},
        "cases": [
            {
                "case": "predictive/x",
                "capability": "predictive_variance",
                "method": None,
                "problem": "p",
                "description": "d",
            }
        ],
        "libraries": [
            {
                "library": "lib",
                "distribution": "lib",
                "version": "1",
                "versions": {"lib": "1"},
                "target": "m:f",
                "counts": {"PASS": 0, "FAIL": 0, "ERROR": 1, "N/A": 0, "SKIP": 0},
                "results": [
                    {
                        "case": "predictive/x",
                        "status": "ERROR",
                        "ratio": None,
                        "reason": reason,
                        "reproducer": "reproducers/lib/predictive-x.py",
                        "finding": "lib F1",
                    }
                ],
            }
        ],
        "not_installed": [],
        "findings": [
            {
                "id": "lib F1",
                "library": "lib",
                "kind": "bug",
                "title": "t",
                "link": "validation.md#lib-f1",
            }
        ],
    }


@pytest.mark.parametrize("render", [scoreboard_html, scoreboard_markdown])
def test_the_page_shows_the_whole_reason_and_links_the_finding_tag(render):
    payload = _payload()
    page = render(payload)
    reason = payload["libraries"][0]["results"][0]["reason"]
    assert reason.strip() in page and "…" not in page
    if render is scoreboard_html:
        assert f"<details><summary><b>ERROR</b></summary><p class='reason'>{reason}" in page
        assert "<a class='finding' href='validation.md#lib-f1'>lib F1</a>" in page
        assert "title='ValueError" not in page  # not only on hover
    else:
        assert "[lib F1](validation.md#lib-f1) *bug*" in page


def test_the_committed_html_shows_every_reason_in_its_cell():
    page = (DOCS / "scoreboard.html").read_text("utf-8")
    for _, r in _results():
        if r["status"] in ("FAIL", "ERROR", "N/A"):
            assert f"<p class='reason'>{html.escape(r['reason'])}</p>" in page, r["case"]
    tags = re.findall(r"<a class='finding' href='([^']+)'>([^<]+)</a>", page)
    links = {f["id"]: f["link"] for f in COMMITTED["findings"]}
    assert tags and all(links[html.unescape(i)] == html.unescape(h) for h, i in tags)
