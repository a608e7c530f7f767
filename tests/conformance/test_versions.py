"""The laplace-torch scoreboard across versions: the committed page (docs/versions.*) is
consistent with itself, with the libraries' findings and with the scoreboard, and the page
marks the findings of one version as such. No environment is built here (that needs the
package registry: ``make versions``)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from laplace_lab.cli import main
from laplace_lab.conformance import cases, versions
from laplace_lab.conformance.libraries import LIBRARIES
from laplace_lab.conformance.versions import (
    ENVIRONMENTS,
    REGENERATE,
    VERSION_FINDINGS,
    EnvironmentRun,
    VersionFinding,
    VersionsBoard,
    versions_markdown,
    versions_payload,
)

DOCS = Path(__file__).resolve().parents[2] / "docs"
COMMITTED = json.loads((DOCS / "versions.json").read_text("utf-8"))
SCOREBOARD = json.loads((DOCS / "scoreboard.json").read_text("utf-8"))
KNOWN = {f.id: f for f in LIBRARIES["laplace-torch"].findings}
OWN = {f.id: f for f in VERSION_FINDINGS}


def test_the_committed_page_covers_every_environment_and_case():
    assert COMMITTED["versions"] == list(ENVIRONMENTS)
    assert COMMITTED["command"] == REGENERATE and COMMITTED["seed"] == 0
    assert COMMITTED["cases"] == [c["case"] for c in SCOREBOARD["cases"]]
    page = (DOCS / "versions.md").read_text("utf-8")
    assert REGENERATE in page and COMMITTED["generated"]["date"] in page
    for env in COMMITTED["environments"]:
        pins = ENVIRONMENTS[env["version"]].no_deps()
        assert all(p.replace("==", " ") in _installed(env) for p in pins)
        assert env["packages"]["torch"] == "2.13.0+cpu" and "torchvision" not in env["packages"]
        assert [r["case"] for r in env["results"]] == COMMITTED["cases"]


def _installed(env):
    return {f"{name} {version}" for name, version in env["packages"].items()}


def test_each_versions_counts_are_its_cases_statuses():
    for env in COMMITTED["environments"]:
        tally = Counter(r["status"] for r in env["results"])
        assert env["counts"] == {s: tally.get(s, 0) for s in versions.STATUSES}
        assert sum(env["counts"].values()) == len(COMMITTED["cases"]) == len(cases())


def test_every_finding_named_is_a_librarys_or_a_described_version_finding():
    named = {r["finding"] for e in COMMITTED["environments"] for r in e["results"]} - {None}
    listed = {f["id"]: f for f in COMMITTED["findings"]}
    assert named == set(listed)
    for fid, f in listed.items():
        if fid in KNOWN:
            assert f["link"] == KNOWN[fid].link and f["title"] == KNOWN[fid].title
        else:
            assert fid in OWN and f["description"] == OWN[fid].description != ""
            assert {v for v, n in f["cases"].items() if n} <= set(OWN[fid].versions)
    for e in COMMITTED["environments"]:  # every FAIL, ERROR and N/A explained, in every version
        for r in e["results"]:
            assert (r["finding"] is None) == (r["status"] in ("PASS", "SKIP")), (e["version"], r)


def test_the_newest_column_is_the_scoreboards_laplace_torch():
    (lib,) = [lib for lib in SCOREBOARD["libraries"] if lib["library"] == "laplace-torch"]
    (env,) = [e for e in COMMITTED["environments"] if e["version"] == lib["version"]]
    assert env["counts"] == lib["counts"]
    assert [(r["case"], r["status"]) for r in env["results"]] == [
        (r["case"], r["status"]) for r in lib["results"]
    ]
    assert env["packages"]["curvlinops-for-pytorch"] == lib["versions"]["curvlinops-for-pytorch"]


def _run(version, statuses, findings):
    results = [
        {"case": c, "status": s, "ratio": None, "reason": "", "reproducer": None, "finding": f}
        for (c, s), f in zip(statuses.items(), findings, strict=True)
    ]
    counts = Counter(s for s in statuses.values())
    library = {"counts": dict(counts), "results": results}
    env = versions.Environment(version, curvlinops="9.9")
    return EnvironmentRun(env, library, {"torch": "2.13.0+cpu"}, 10.0, 2.0)


def test_the_page_marks_a_finding_of_one_version(monkeypatch):
    own = VersionFinding(
        "laplace-torch 0.1 V1", "bug", "the old bug", "what it was", ("0.1",), ("b/",)
    )
    monkeypatch.setattr(versions, "VERSION_FINDINGS", (own,))
    f1, f6 = "laplace-torch F1", "laplace-torch F6"
    old = _run("0.1", {"a": "FAIL", "b/x": "ERROR", "c": "N/A"}, [f1, "ignored", f6])
    new = _run("0.2", {"a": "FAIL", "b/x": "PASS", "c": "PASS"}, [f1, None, None])
    board = VersionsBoard(0, (old, new), ("a", "b/x", "c"), "abc")
    payload = versions_payload(board, date="2000-01-01")
    got = {f["id"]: (f["cases"], f["specific"]) for f in payload["findings"]}
    assert got == {
        f1: ({"0.1": 1, "0.2": 1}, False),
        f6: ({"0.1": 1, "0.2": 0}, True),
        own.id: ({"0.1": 1, "0.2": 0}, True),
    }
    assert payload["differences"] == [
        {"case": "b/x", "statuses": {"0.1": "ERROR", "0.2": "PASS"}},
        {"case": "c", "statuses": {"0.1": "N/A", "0.2": "PASS"}},
    ]
    page = versions_markdown(payload)
    link = "validation.md#laplace-torch-f6"
    assert f"| [{f6}]({link}): {KNOWN[f6].title} | not offered | 1 | — | **0.1 only** |" in page
    assert (
        f"| [{own.id}](#laplace-torch-01-v1): the old bug | bug | 1 | — | **0.1 only** |" in page
    )
    assert f"| [{f1}](validation.md#laplace-torch-f1): {KNOWN[f1].title} | bug | 1 | 1 |" in page
    assert '<a id="laplace-torch-01-v1"></a>' in page and "what it was" in page
    assert "| `b/x` | ERROR (laplace-torch 0.1 V1) | PASS |" in page
    assert "| `a` |" not in page  # the same status in both versions
    assert "| 0.1 | 0 | 1 | 1 | 1 | 0 | 3 | 10 | 2 |" in page


def test_an_unknown_version_is_one_line_naming_the_known_ones(tmp_path, capsys):
    status = main(["validate", "--versions", "0.1.9", "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    assert status == 2 and out == "" and err.count("\n") == 1
    assert "got versions=['0.1.9']" in err and str(list(ENVIRONMENTS)) in err
    status = main(["validate", "--versions", "--target", "laplace-lab", "--out", str(tmp_path)])
    assert status == 2 and "drop --target" in capsys.readouterr().err
    with pytest.raises(ValueError, match="got versions=\\[\\]"):
        versions.run_versions([])


def test_the_scoreboard_runs_the_libraries_named(tmp_path, capsys):
    argv = ["validate", "--scoreboard", "--library", "laplace-lab"]
    argv += ["--case", "predictive/linear-gaussian", "--out", str(tmp_path)]
    assert main(argv) == 0
    payload = json.loads((tmp_path / "scoreboard.json").read_text("utf-8"))
    assert [lib["library"] for lib in payload["libraries"]] == ["laplace-lab"]
    status = main(["validate", "--scoreboard", "--library", "laplace-jax", "--out", str(tmp_path)])
    assert status == 2 and "got target='laplace-jax'" in capsys.readouterr().err
    status = main(["validate", "--target", "laplace-lab", "--library", "laplace-lab"])
    assert status == 2 and "--library goes with --scoreboard" in capsys.readouterr().err
