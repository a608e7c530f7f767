"""The scoreboard: libraries by name on the command line, the page (HTML, Markdown, JSON) with
a reproducer per failure, and the committed page (docs/scoreboard.*) against a fresh run."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import runpy
from pathlib import Path

import jsonschema
import pytest

from laplace_lab.cli import main
from laplace_lab.conformance import cases
from laplace_lab.conformance.contract import Target
from laplace_lab.conformance.libraries import LIBRARIES, get_library, target_spec
from laplace_lab.conformance.runner import import_block, reproducer
from laplace_lab.conformance.scoreboard import (
    REGENERATE,
    SCOREBOARD_SCHEMA,
    case_names,
    run_scoreboard,
    scoreboard_payload,
    statuses,
    write_scoreboard,
)
from laplace_lab.conformance.scoreboard_page import format_ratio

# One worker runs the module (``--dist loadgroup``), so the fresh run is made once.
pytestmark = pytest.mark.xdist_group("scoreboard")

DOCS = Path(__file__).resolve().parents[2] / "docs"
COMMITTED = json.loads((DOCS / "scoreboard.json").read_text("utf-8"))
INSTALLED = [name for name, lib in LIBRARIES.items() if lib.installed()]
HAS_LAPLACE_TORCH = "laplace-torch" in INSTALLED
HEAVY = frozenset(name for name, case in cases().items() if case.heavy)
CHEAP = "predictive/linear-gaussian"  # laplace-torch fails it (float32 GGN), 0.03 s each


@pytest.fixture(scope="module")
def fresh(scoreboard_run, tmp_path_factory):
    """Every installed library on every case at seed 0, written to a temporary folder."""
    out = tmp_path_factory.mktemp("scoreboard")
    paths = write_scoreboard(scoreboard_run, out, date="2000-01-01")
    return scoreboard_run, json.loads(paths["json"].read_text("utf-8")), out


def _regenerate(why: str) -> str:
    return f"{why}: regenerate the committed page with `{REGENERATE}`"


def test_the_committed_page_has_every_registered_case():
    committed, registered = set(case_names(COMMITTED)), set(cases())
    added, removed = sorted(registered - committed), sorted(committed - registered)
    assert not added and not removed, _regenerate(f"cases added {added}, removed {removed}")
    page = (DOCS / "scoreboard.md").read_text("utf-8")
    assert REGENERATE in page
    assert {n for n in registered if f"`{n}`" not in page} == set()


def test_the_committed_statuses_are_those_of_a_fresh_run_at_seed_0(fresh):
    _, payload, _ = fresh
    assert COMMITTED["seed"] == payload["seed"] == 0
    ran = {lib for lib, _ in statuses(payload)}
    committed = {k: v for k, v in statuses(COMMITTED).items() if k[0] in ran and k[1] not in HEAVY}
    now = statuses(payload)
    changed = sorted(
        f"{lib} {case}: {committed.get((lib, case))} → {now.get((lib, case))}"
        for lib, case in committed.keys() | now.keys()
        if committed.get((lib, case)) != now.get((lib, case))
    )
    assert not changed, _regenerate(f"statuses changed {changed}")
    assert ran == set(INSTALLED)


def test_the_committed_page_explains_every_failure_with_a_reproducer_file():
    by_library = {lib["library"]: lib for lib in COMMITTED["libraries"]}
    ours = by_library["laplace-lab"]
    assert ours["counts"]["PASS"] == len(COMMITTED["cases"]) == len(ours["results"])
    failed = [
        (lib["library"], r)
        for lib in COMMITTED["libraries"]
        for r in lib["results"]
        if r["status"] in ("FAIL", "ERROR")
    ]
    assert len(failed) >= 20  # laplace-torch's findings 1–5
    assert [r["case"] for _, r in failed if not (DOCS / r["reproducer"]).is_file()] == []
    assert [r["case"] for _, r in failed if r["finding"] is None] == []
    not_offered = [
        r for lib in COMMITTED["libraries"] for r in lib["results"] if r["status"] == "N/A"
    ]
    assert not_offered and [r["case"] for r in not_offered if r["finding"] is None] == []
    links = {f["link"].partition("#")[2] for f in COMMITTED["findings"]}
    validation = (DOCS / "validation.md").read_text("utf-8")
    assert {a for a in links if f'<a id="{a}"></a>' not in validation} == set()
    on_disk = {p.relative_to(DOCS).as_posix() for p in (DOCS / "reproducers").rglob("*.py")}
    assert on_disk == {r["reproducer"] for _, r in failed}  # none left from an older run


def test_the_json_is_valid_and_every_ratio_agrees_with_its_status(fresh):
    _, payload, _ = fresh
    jsonschema.validate(payload, SCOREBOARD_SCHEMA)
    jsonschema.validate(COMMITTED, SCOREBOARD_SCHEMA)
    n = len(payload["cases"])
    assert n == len(cases()) - len(HEAVY)  # the fresh run leaves the heavy cases out
    for lib in payload["libraries"]:
        assert sum(lib["counts"].values()) == n == len(lib["results"])
        assert lib["version"] == lib["versions"][lib["distribution"]] != "not installed"
        for r in lib["results"]:
            if r["ratio"] is not None:  # PASS iff max |error| ≤ tolerance
                assert (r["ratio"] <= 1) == (r["status"] == "PASS"), (lib["library"], r)
            assert (r["reproducer"] is not None) == (r["status"] in ("FAIL", "ERROR"))
            assert "\n" not in r["reason"] and not r["reason"].endswith("…")


def test_the_html_shows_every_case_and_library_and_links_each_failure(fresh):
    _, payload, out = fresh
    page = (out / "scoreboard.html").read_text("utf-8")
    assert [n for n in cases() if n not in HEAVY and f"<code>{n}</code>" not in page] == []
    for lib in payload["libraries"]:
        assert f"<th>{lib['library']}</th>" in page and lib["version"] in page
    for status in ("PASS", "FAIL", "ERROR", "N/A", "SKIP"):
        total = sum(lib["counts"][status] for lib in payload["libraries"])
        css = "NA" if status == "N/A" else status
        assert page.count(f"<td class='{css}'") == total, status
    hrefs = re.findall(r"href='(reproducers/[^']+)'", page)
    wanted = sum(lib["counts"]["FAIL"] + lib["counts"]["ERROR"] for lib in payload["libraries"])
    assert len(hrefs) == len(set(hrefs)) == wanted
    assert [h for h in hrefs if not (out / h).is_file()] == []
    assert "2000-01-01" in page and payload["generated"]["commit"] in page


@pytest.mark.skipif(not HAS_LAPLACE_TORCH, reason="laplace-torch is not installed")
def test_a_fail_cell_links_to_a_reproducer_that_shows_the_failure_on_its_own(fresh, capsys):
    _, payload, out = fresh
    cell = next(
        r
        for lib in payload["libraries"]
        if lib["library"] == "laplace-torch"
        for r in lib["results"]
        if r["case"] == CHEAP
    )
    assert cell["status"] == "FAIL" and cell["finding"] == "laplace-torch F1"
    assert cell["ratio"] > 1e3  # float32 roundoff against a float64 tolerance
    code = (out / cell["reproducer"]).read_text("utf-8")
    assert "laplace_lab" not in code.split("# fmt: off")[1]  # stand-alone
    tol = float(re.search(r"^tolerance = (\S+)$", code, re.M).group(1))
    with pytest.raises(AssertionError) as failed:  # exit code 1 as a script
        runpy.run_path(str(out / cell["reproducer"]), run_name="__main__")
    shown = re.search(r"max \|error\|/tolerance = (\S+)", str(failed.value)).group(1)
    assert float(shown) == pytest.approx(cell["ratio"], rel=0.05)
    printed = capsys.readouterr().out
    got, oracle = map(float, re.search(r"got (\S+), oracle (\S+),", printed).groups())
    assert abs(got - oracle) > 1e3 * tol  # what the case measured, printed in full


def _cli(argv, capsys):
    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def test_validate_takes_a_library_name_or_module_callable(tmp_path, capsys):
    ours = LIBRARIES["laplace-lab"].target
    for target in ("laplace-lab", ours):
        status, _, _ = _cli(
            ["validate", "--target", target, "--case", CHEAP, "--out", str(tmp_path)], capsys
        )
        report = json.loads((tmp_path / "conformance.json").read_text("utf-8"))
        assert status == 0 and report["target"] == ours and report["counts"]["PASS"] == 1
    if HAS_LAPLACE_TORCH:
        argv = ["validate", "--target", "laplace-torch", "--case", CHEAP, "--out", str(tmp_path)]
        status, _, err = _cli(argv, capsys)
        report = json.loads((tmp_path / "conformance.json").read_text("utf-8"))
        assert status == 1 and report["target"] == LIBRARIES["laplace-torch"].target
        assert report["results"][0]["outcome"] == "FAIL" and CHEAP in err
    assert target_spec("pkg.mod:fn") == "pkg.mod:fn"  # nothing imported for MODULE:CALLABLE


def test_an_unknown_library_is_one_line_naming_the_known_ones(tmp_path, capsys):
    status, out, err = _cli(
        ["validate", "--target", "laplace-jax", "--out", str(tmp_path)], capsys
    )
    assert status == 2 and out == "" and err.count("\n") == 1
    assert "got target='laplace-jax'" in err and str(list(LIBRARIES)) in err
    assert list(tmp_path.iterdir()) == []


def test_a_library_not_installed_says_how_to_install_it(monkeypatch, tmp_path, capsys):
    absent = dataclasses.replace(LIBRARIES["laplace-torch"], module="laplace_not_installed_here")
    monkeypatch.setitem(LIBRARIES, "laplace-torch", absent)
    argv = ["validate", "--target", "laplace-torch", "--out", str(tmp_path / "v")]
    status, out, err = _cli(argv, capsys)
    assert status == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("laplace-lab validate: error: target 'laplace-torch': laplace-torch is")
    assert "pip install --no-deps laplace-torch==0.3" in err
    with pytest.raises(ValueError, match="not installed"):
        get_library("laplace-torch")
    # the scoreboard runs without it and says so in its header
    argv = ["validate", "--scoreboard", "--case", CHEAP, "--out", str(tmp_path / "s")]
    status, out, _ = _cli(argv, capsys)
    payload = json.loads((tmp_path / "s" / "scoreboard.json").read_text("utf-8"))
    ran = [lib["library"] for lib in payload["libraries"]]
    assert status == 0 and ran == [n for n in INSTALLED if n != "laplace-torch"]
    assert [m["library"] for m in payload["not_installed"]] == ["laplace-torch"]
    assert "Not installed: laplace-torch" in (tmp_path / "s" / "scoreboard.md").read_text()


def test_scoreboard_and_target_together_are_refused(tmp_path, capsys):
    argv = ["validate", "--scoreboard", "--target", "laplace-lab", "--out", str(tmp_path)]
    status, _, err = _cli(argv, capsys)
    assert status == 2 and "drop --target" in err and err.count("\n") == 1


def test_the_page_is_the_same_for_the_same_seed_but_its_provenance():
    runs = [run_scoreboard(["laplace-lab"], seed=3, only=[CHEAP]) for _ in range(2)]
    a, b = (scoreboard_payload(r, date="2000-01-01") for r in runs)
    assert a.pop("generated")["date"] == b.pop("generated")["date"]
    assert a == b and a["seed"] == 3 and "--seed 3" in a["command"]
    with pytest.raises(ValueError, match="libraries must be among"):
        run_scoreboard(["laplace-jax"])


def test_ratios_print_with_two_significant_digits():
    got = [format_ratio(r) for r in (None, 0.0, 0.0018146, 0.31, 612.37, 76922.2)]
    assert got == ["", "0", "1.8e-3", "0.31", "610", "7.7e4"]


def test_every_committed_reproducer_imports_before_its_first_statement():
    """The body's imports (e.g. the oracle of a sample case) join the file's header."""
    late = []
    for path in sorted((DOCS / "reproducers").rglob("*.py")):
        body = ast.parse(path.read_text("utf-8")).body
        first = next(
            i for i, n in enumerate(body) if not isinstance(n, ast.Import | ast.ImportFrom)
        )
        if any(isinstance(n, ast.Import | ast.ImportFrom) for n in body[first:]):
            late.append(path.relative_to(DOCS).as_posix())
    assert late == []


def test_a_reproducer_merges_the_imports_of_its_body_in_isort_order():
    target = Target.from_callable(lambda *a, **k: None, name="pkg.mod:fn")
    case = cases()["structured-samples/diag/mlp-binary"]
    body = (
        "import numpy as np\n"
        "from laplace_lab.conformance.gaussian_samples import whitened_test\n"
        "from laplace_lab.conformance import DenseOracle\n"
        "theta = 1"
    )
    lines = reproducer(target, case, 3, body).splitlines()
    assert lines[:6] == [  # third-party (numpy, the target's package), then laplace_lab
        "import numpy as np",
        "from pkg.mod import fn as target",
        "",
        "from laplace_lab.conformance import DenseOracle, build_problem",
        "from laplace_lab.conformance.gaussian_samples import whitened_test",
        "",
    ]
    assert lines[-3:] == [
        "problem = build_problem('mlp-binary', seed=3)",
        "kw = problem.target_kwargs()",
        "theta = 1",
    ]


def test_an_import_block_puts_the_standard_library_third_party_and_the_package_apart():
    lines = [
        "from laplace_lab.conformance import build_problem",
        "import numpy as np",
        "import json",
        "from mylib.adapter import fn as target",
        "from laplace_lab.conformance import DenseOracle",
        "import numpy as np",
    ]
    assert import_block(lines) == [
        "import json",
        "",
        "import numpy as np",
        "from mylib.adapter import fn as target",
        "",
        "from laplace_lab.conformance import DenseOracle, build_problem",
    ]
