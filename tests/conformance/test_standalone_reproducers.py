"""The committed stand-alone reproducers (docs/reproducers/): each runs with laplace-lab
unimportable and shows its finding, with the value or the exception the scoreboard run got
from laplace-lab's adapter; its inline inputs are the case's; a failing case without a
template stops the writer.

One subprocess (this file run as a script) runs every reproducer, then, with laplace-lab
importable again, compares the inline inputs of one reproducer per template with the case's,
so the libraries are imported once.
"""

from __future__ import annotations

import importlib.abc
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
#: The names of the contract's keywords that every call passes (the problem's).
PROBLEM_KEYWORDS = ("likelihood", "prior_precision", "noise_var")


class _Unimportable(importlib.abc.MetaPathFinder):
    """Makes ``import laplace_lab`` (and ``paper_checks``) fail, as without the package."""

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("laplace_lab", "paper_checks"):
            raise ImportError(f"No module named {name!r} (laplace-lab is not installed)")
        return None


def _run(path: Path) -> tuple[dict, dict]:
    """Run one reproducer: (its namespace, what it raised)."""
    ns = {"__name__": "__main__", "__file__": str(path)}
    raised = {"type": None, "message": ""}
    try:
        exec(compile(path.read_text("utf-8"), str(path), "exec"), ns)
    except Exception as exc:  # the finding: an assertion, or the library's exception
        lines = str(exc).strip().splitlines()
        raised = {"type": type(exc).__name__, "message": lines[0] if lines else ""}
    return ns, raised


def _as_array(value) -> np.ndarray:
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    return np.asarray(value, dtype=np.float64)


def _adapter(library: str, case: str, ns: dict) -> dict:
    """Whether the reproducer's inline inputs and keyword values are the case's (what the
    adapter is given)."""
    import inspect

    import torch

    from laplace_lab.conformance import build_problem, cases
    from laplace_lab.conformance.contract import load_target
    from laplace_lab.conformance.libraries import LIBRARIES

    the_case = cases()[case]
    problem = build_problem(the_case.problem, seed=0)
    target = load_target(LIBRARIES[library].target)
    fn = target.predictive_variance
    if the_case.capability != "predictive_variance":
        fn = getattr(fn, the_case.capability)
    params = inspect.signature(fn).parameters
    extra = {
        k: ns.get(k, p.default)
        for k, p in params.items()
        if p.kind is p.KEYWORD_ONLY and k not in PROBLEM_KEYWORDS
    }
    takes_test = "X_test" in params
    theta = torch.nn.utils.parameters_to_vector(problem.model.parameters()).detach()
    inputs = [
        np.array_equal(_as_array(ns["theta_map"]), _as_array(theta)),
        np.array_equal(_as_array(ns["X_train"]), _as_array(problem.X_train)),
        np.array_equal(_as_array(ns["y_train"]), _as_array(problem.y_train)),
        np.array_equal(np.asarray(ns["prior_precision"]), np.asarray(problem.prior_precision)),
        ns["noise_var"] == problem.noise_var and ns["likelihood"] == problem.likelihood,
    ]
    if takes_test:
        inputs.append(np.array_equal(_as_array(ns["X_test"]), _as_array(problem.X_test)))
    if "subset" in extra and extra["subset"] is not None:
        inputs.append(np.array_equal(extra["subset"], problem.subset))
    return {"inputs_equal": bool(all(inputs))}


def _main(out: str, compare: list[str], paths: list[str]) -> None:
    """Run every reproducer with laplace-lab unimportable, then compare those in
    ``compare`` (``library/case`` per path) with the adapter."""
    blocker = _Unimportable()
    sys.meta_path.insert(0, blocker)
    report, spaces = {}, {}
    for path in paths:
        ns, raised = _run(Path(path))
        got = ns.get("got")
        report[path] = {
            **raised,
            "got": None if got is None else _as_array(got).reshape(-1).tolist(),
            "value": ns.get("value"),  # got at the worst entry
        }
        spaces[path] = ns
    sys.meta_path.remove(blocker)
    for item in compare:
        path, library, case = item.split("|")
        report[path]["adapter"] = _adapter(library, case, spaces[path])
    Path(out).write_text(json.dumps(report), "utf-8")


# ------------------------------------------------------------------------------ tests
def _committed(*, heavy: bool = False) -> dict[str, tuple]:
    """Reproducer path → (library, case, capability, status, reason, ratio) on the page;
    ``heavy``: also those of the heavy cases (the many-outputs case's reproducers measure
    their own process's peak memory and stop it past 6 GiB, so each needs a process of its
    own and several GB: the scoreboard's regeneration ran them, the suite does not)."""
    from laplace_lab.conformance import cases

    payload = json.loads((DOCS / "scoreboard.json").read_text("utf-8"))
    capability = {c["case"]: c["capability"] for c in payload["cases"]}
    light = {n for n, c in cases().items() if heavy or not c.heavy}
    return {
        str(DOCS / r["reproducer"]): (
            lib["library"],
            r["case"],
            capability[r["case"]],
            r["status"],
            r["reason"],
            r["ratio"],
        )
        for lib in payload["libraries"]
        for r in lib["results"]
        if r["reproducer"] and r["case"] in light
    }


def _cheap_first(item: tuple[str, tuple]) -> tuple:
    """Linear models first (no MAP training), multiclass ones last."""
    case = item[1][1]
    return ("/linear-" not in case, "multiclass" in case, item[0])


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict:
    """What every reproducer raised and computed, and the adapter's answers (module
    docstring)."""
    committed = _committed()
    libraries = {v[0] for v in committed.values()}
    for name, module in (("laplace-torch", "laplace"), ("laplax", "laplax")):
        if name in libraries:
            pytest.importorskip(module)
    compare, templates = [], set()
    for path, (library, case, capability, *_) in sorted(committed.items(), key=_cheap_first):
        if (library, capability) not in templates:  # one of each template
            templates.add((library, capability))
            compare.append(f"{path}|{library}|{case}")
    out = tmp_path_factory.mktemp("standalone") / "report.json"
    argv = [sys.executable, __file__, str(out), json.dumps(compare), *sorted(committed)]
    subprocess.run(argv, check=True, timeout=600)
    return json.loads(out.read_text("utf-8"))


def test_every_reproducer_is_on_the_committed_page():
    on_disk = {str(p) for p in (DOCS / "reproducers").rglob("*.py")}
    assert on_disk == set(_committed(heavy=True))
    for path in on_disk:
        text = Path(path).read_text("utf-8")
        assert not re.search(r"^(from|import) (laplace_lab|paper_checks)\b", text, re.M), path
        assert "Needs laplace-lab" not in text and "# fmt: off" in text


def test_every_reproducer_shows_its_finding_without_laplace_lab(report):
    wrong = []
    for path, (library, case, _, status, reason, ratio) in _committed().items():
        raised = report[path]
        what = f"{library} {case} ({status}): {raised['type']}: {raised['message']}"
        if raised["type"] is None or "laplace-lab is not installed" in raised["message"]:
            wrong.append(what)
        elif status == "FAIL":  # its assertion, with the ratio the scoreboard measured
            shown = re.search(r"(?:tolerance|critical value) = (\S+)", raised["message"])
            if raised["type"] != "AssertionError" or shown is None:
                wrong.append(what)
            elif not float(shown.group(1)) > 1.0:
                wrong.append(what)
            elif ratio is not None and abs(float(shown.group(1)) / ratio - 1) > 0.05:
                wrong.append(f"{what}; the scoreboard's ratio is {ratio}")
            elif (recorded := re.search(r"got (\S+), oracle", reason)) is not None:
                # the adapter's answer at the worst entry, as the scoreboard run printed it
                if abs(raised["value"] / float(recorded.group(1)) - 1) > 1e-11:
                    wrong.append(f"{what}; got {raised['value']!r}, the scoreboard's {reason}")
        else:  # the library's exception, or the malformed answer the case refused
            said = raised["message"]
            if raised["type"] != "AssertionError":
                said = f"{raised['type']}: {said}"
            if not reason.startswith(said):
                wrong.append(f"{what}; the scoreboard says {reason[:120]}")
    assert wrong == []


def test_a_reproducer_per_template_has_the_cases_inputs(report):
    """The inline weights, data and keywords are the case's; that the inline calls are the
    adapter's shows in the values (each FAIL's answer at its worst entry equals the one the
    scoreboard run printed, to 1e-11) and in the exceptions (each ERROR's message is the
    scoreboard's), checked above."""
    committed = _committed()
    compared = {p: r["adapter"] for p, r in report.items() if "adapter" in r}
    templates = {(v[0], v[2]) for v in committed.values()}
    assert {(committed[p][0], committed[p][2]) for p in compared} == templates
    assert [p for p, adapter in compared.items() if not adapter["inputs_equal"]] == []


def test_a_failing_case_without_a_template_stops_the_writer(tmp_path):
    from laplace_lab.conformance import cases
    from laplace_lab.conformance.libraries import LIBRARIES
    from laplace_lab.conformance.registry import CaseResult, Outcome
    from laplace_lab.conformance.runner import Validation
    from laplace_lab.conformance.scoreboard import LibraryRun, Scoreboard, write_scoreboard

    case = cases()["predictive/linear-gaussian"]
    body = "got = target(problem.model, problem.X_train, problem.y_train, problem.X_test)"
    result = CaseResult(case, Outcome.FAIL, "wrong", {}, body, 0.0)
    library = LIBRARIES["curvlinops"]  # no template
    run = LibraryRun(library, Validation(library.target, 0, (result,)), 0.0)
    match = r"library 'curvlinops', capability 'predictive_variance' \(case predictive/"
    with pytest.raises(ValueError, match=match):
        write_scoreboard(Scoreboard(0, (run,), ()), tmp_path, date="2000-01-01")
    assert list(tmp_path.iterdir()) == []  # nothing written
    # the pages alone (the versions page's run): no reproducer is asked for, none named
    paths = write_scoreboard(
        Scoreboard(0, (run,), ()), tmp_path, date="2000-01-01", reproducers=False
    )
    assert paths["reproducers"] == [] and not (tmp_path / "reproducers").exists()
    (entry,) = json.loads(paths["json"].read_text("utf-8"))["libraries"][0]["results"]
    assert entry["status"] == "FAIL" and entry["reproducer"] is None


if __name__ == "__main__":
    _main(sys.argv[1], json.loads(sys.argv[2]), sys.argv[3:])
