"""The full-mode record: a stored decision re-decided under the current rules, written by
``check --full --record`` and attached to every later check as the paper-scale evidence."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from laplace_lab.paper_checks.verification import decisions, full_record
from laplace_lab.paper_checks.verification.kinds import Kind, Status
from laplace_lab.paper_checks.verification.outcome import Outcome
from laplace_lab.paper_checks.verification.registry import (
    Claim,
    Context,
    run_claim,
)


def _round_trip(d: decisions.Decision) -> decisions.Decision:
    return decisions.Decision.redecided(json.loads(json.dumps(d.as_json())))


def test_a_stored_superiority_is_decided_again_from_its_replicates():
    tests = [
        decisions.test("gap", [0.30, 0.41, 0.25, 0.38, 0.33], threshold=0.0),
        decisions.test("other", mean=0.2, se=0.15, df=7.0, threshold=0.0),
    ]
    for quantifier in ("all", "any"):
        d = decisions.superiority(tests, quantifier=quantifier, of=3)
        again = _round_trip(d)
        assert (again.status, again.rule, again.points) == (d.status, d.rule, d.points)
        assert again.tests == d.tests and again.details["of"] == 3
    # all: "other" is not significant (t = 1.33, df 7): INCONCLUSIVE; any: "gap" at α/3
    assert _round_trip(decisions.superiority(tests, of=3)).status is Status.INCONCLUSIVE
    assert _round_trip(decisions.superiority(tests, quantifier="any", of=3)).status is (
        Status.CONFIRMED
    )


def test_a_stored_equivalence_keeps_its_margin_and_side():
    t = decisions.test("diff", [0.01, -0.02, 0.015, 0.0, -0.005, 0.01], threshold=0.0)
    for side in (None, +1, -1):
        d = decisions.equivalence(t, margin=0.05, source="Table 1's spread", side=side)
        again = _round_trip(d)
        assert (again.status, again.rule, again.margin) == (d.status, d.rule, 0.05)
        assert again.details["side"] == side


def test_a_stored_rule_is_re_decided_by_todays_rule_not_copied():
    d = decisions.superiority(decisions.test("gap", [0.30, 0.41, 0.25, 0.38, 0.33]))
    stored = d.as_json()
    stored["status"] = "REFUTED"  # a record whose stored status an old rule got wrong
    assert decisions.Decision.redecided(stored).status is Status.CONFIRMED


def test_an_exact_decision_keeps_its_stored_status_and_says_so():
    d = decisions.exact(1e-9, 1e-6, what="residual")
    again = _round_trip(d)
    assert again.status is Status.CONFIRMED and again.kind is Kind.EXACT
    assert "stored" in again.rule


def _module(tmp_path: Path, name: str) -> str:
    """A claim module on disk in a git repository of its own, with one commit."""
    folder = tmp_path / "paper"
    folder.mkdir()
    (folder / f"{name}.py").write_text(
        "from laplace_lab.paper_checks.verification import decisions\n"
        "from laplace_lab.paper_checks.verification.registry import Verdict\n"
        "from laplace_lab.paper_checks.verification.kinds import Status\n"
        "def check(ctx):\n"
        "    n = 8 if ctx.full else 3\n"
        "    values = [0.5 + 0.01 * i for i in range(n)] if ctx.full else [0.5, -0.4, 0.1]\n"
        "    d = decisions.superiority(decisions.test('gap', values))\n"
        "    return Verdict(d.status, measured=d.tests[0].mean, decision=d)\n"
    )
    for args in (
        ["init", "-q"],
        ["add", "."],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "claims"],
    ):
        subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True)
    sys.path.insert(0, str(folder))
    return name


def test_the_full_run_is_recorded_and_counts_in_a_later_quick_check(tmp_path):
    name = _module(tmp_path, "_full_record_toy")
    try:
        module = __import__(name)
        item = Claim(
            "toy",
            "gap",
            "eq. (1)",
            "A beats B.",
            Status.INCONCLUSIVE,
            module.check,
            kind=Kind.SUPERIORITY,
        )
        full = run_claim(item, Context(full=True))
        assert full.status is Status.CONFIRMED
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=tmp_path / "paper",
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        [path] = full_record.write_records(
            [Outcome(item, full, 2.5)],
            command="laplace-lab check --full --record",
            commit=commit,
            date="2026-11-28",
        )
        assert path == tmp_path / "paper" / "recorded" / "full_gap.json"
        assert json.loads(path.read_text())["data"]["cpu_hours"] == pytest.approx(2.5 / 3600)
        quick = run_claim(item, Context())
        assert quick.status is Status.INCONCLUSIVE  # the quick verdict stands beside
        outcome = Outcome(item, quick, 0.1)
        assert outcome.paper_scale is not None and outcome.status is Status.CONFIRMED
        # a mutant is judged on its own run, never on the record
        assert run_claim(item, Context(mutant="m")).recorded == ()
        # the claim's module changed since the recorded commit: shown, not counted
        file = tmp_path / "paper" / f"{name}.py"
        file.write_text(file.read_text() + "# changed\n")
        stale = Outcome(item, run_claim(item, Context()), 0.1)
        assert stale.paper_scale is None and stale.status is Status.INCONCLUSIVE
        assert "changed since" in stale.verdict.recorded[0].why
    finally:
        sys.path.remove(str(tmp_path / "paper"))
        sys.modules.pop(name, None)
