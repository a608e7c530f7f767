"""The report: HTML parses, figures exist, JSON validates against the documented schema."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import jsonschema
import matplotlib.pyplot as plt
import numpy as np
import pytest

from laplace_lab.cli import main
from laplace_lab.paper_checks.errata import ERRATA
from laplace_lab.paper_checks.registry import Claim, Context, Status, Verdict, run_claim
from laplace_lab.paper_checks.report import VERDICT_SCHEMA, Outcome, write_report


class _Collector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.images, self.ids, self.stack = [], set(), []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs["src"])
        elif tag not in {"meta", "br"}:
            self.stack.append(tag)
        if "id" in attrs:
            self.ids.add(attrs["id"])

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"unbalanced </{tag}>"
        self.stack.pop()


def _fake(status, with_figure):
    def check(ctx: Context) -> Verdict:
        figs = ()
        if with_figure:
            fig, ax = plt.subplots()
            ax.plot([0, 1], [1, 0])
            figs = ctx.save_figure(fig, "fake.png")
        return Verdict(
            status,
            measured=np.float64(0.5),
            expected=1.0,
            tolerance=float("inf"),
            evidence="a <b>tag</b> & co",
            details={"array": np.arange(3), "nan": float("nan"), "nested": {"x": (1, 2)}},
            figures=figs,
        )

    return check


def test_report_files_are_valid(tmp_path):
    claims = [
        Claim(
            "paper-a",
            "one",
            "eq. (1)",
            "A statement.",
            Status.CONFIRMED,
            _fake(Status.CONFIRMED, True),
        ),
        Claim(
            "paper-b", "two", "Thm 2", "B statement.", Status.REFUTED, _fake(Status.REFUTED, False)
        ),
    ]
    ctx = Context(figure_dir=tmp_path / "figures")
    outcomes = [Outcome(c, run_claim(c, ctx), 0.1) for c in claims]
    paths = write_report(outcomes, tmp_path)
    data = json.loads(paths["json"].read_text())
    jsonschema.validate(data, VERDICT_SCHEMA)
    assert data[0]["details"] == {"array": [0, 1, 2], "nan": "nan", "nested": {"x": [1, 2]}}
    assert data[0]["tolerance"] == "inf"
    parser = _Collector()
    parser.feed(paths["html"].read_text())
    assert parser.stack == []
    assert parser.images == ["figures/fake.png"]
    assert all((tmp_path / src).is_file() for src in parser.images)
    assert {"paper-a-one", "paper-b-two", "errata"} <= parser.ids
    assert "a &lt;b&gt;tag&lt;/b&gt; &amp; co" in paths["html"].read_text()
    md = paths["markdown"].read_text()
    assert "| paper-b | [two](#paper-b-two) | Thm 2 | **REFUTED** | 0.5 | 1 | inf |" in md
    assert md.count("\n- **") == len(ERRATA)


def test_a_crashing_claim_is_an_error_verdict():
    def boom(ctx):
        raise RuntimeError("kaput")

    verdict = run_claim(Claim("p", "c", "l", "s", Status.CONFIRMED, boom), Context())
    assert verdict.status is Status.ERROR and "kaput" in verdict.evidence


def test_cli_check_writes_a_schema_valid_report(tmp_path):
    code = main(["check", "--paper", "subnetwork-inference", "--out", str(tmp_path)])
    assert code == 0
    data = json.loads((tmp_path / "verdicts.json").read_text())
    jsonschema.validate(data, VERDICT_SCHEMA)
    assert {d["paper"] for d in data} == {"subnetwork-inference"}
    for d in data:
        assert d["status"] == d["expected_status"]
        assert all((tmp_path / f).is_file() for f in d["figures"])


def test_cli_rejects_unknown_paper(capsys, tmp_path):
    assert main(["check", "--paper", "no-such-paper", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("laplace-lab check: error: paper must be one of")
    assert not (tmp_path / "r").exists()


USER_CLAIMS = """
from laplace_lab.paper_checks.registry import Status, Verdict, claim


@claim(paper="my-conjecture", name="one-plus-one", location="notebook p. 1",
       statement="1 + 1 = 2.")
def one_plus_one(ctx):
    return Verdict(Status.CONFIRMED if 1 + 1 == 2 else Status.REFUTED, measured=1 + 1, expected=2)
"""


def test_check_loads_a_users_claim_module(tmp_path, monkeypatch, capsys):
    import json
    import sys

    from laplace_lab.paper_checks import registry

    (tmp_path / "my_claims.py").write_text(USER_CLAIMS)
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "report"
    try:
        argv = ["check", "--plugin", "my_claims", "--paper", "my-conjecture", "--out", str(out)]
        assert main(argv) == 0
        verdicts = json.loads((out / "verdicts.json").read_text())
        claims = verdicts["claims"] if isinstance(verdicts, dict) else verdicts
        assert [(c["claim"], c["status"]) for c in claims] == [("one-plus-one", "CONFIRMED")]
        assert main(["check", "--plugin", "no_such_module_here", "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert (
            len(err) == 1 and "cannot import claim plugin module 'no_such_module_here'" in err[0]
        )
    finally:
        registry._REGISTRY.pop("my-conjecture/one-plus-one", None)
        sys.modules.pop("my_claims", None)


def test_recorded_runs_load_and_reach_the_report(tmp_path):
    import json

    from laplace_lab.paper_checks.recorded import load_recorded

    path = tmp_path / "run.json"
    path.write_text(
        json.dumps(
            {
                "command": "laplace-lab check --full --paper p",
                "commit": "0123456789abcdef",
                "date": "2026-11-24",
                "summary": "MAP 4198 ± 1830 at T = 16,000",
                "data": {"map": [4198.0]},
            }
        )
    )
    rec = load_recorded(path)
    item = Claim("p", "c", "Table 1", "s", Status.CONFIRMED, lambda ctx: None)
    outcome = Outcome(item, Verdict(Status.CONFIRMED, recorded=(rec,)), 0.1)
    paths = write_report([outcome], tmp_path / "r")
    assert "*Recorded* (2026-11-24, commit 0123456789" in paths["markdown"].read_text()
    payload = json.loads(paths["json"].read_text())
    jsonschema.validate(payload, VERDICT_SCHEMA)
    assert payload[0]["recorded"][0]["data"] == {"map": [4198.0]}
    path.write_text(json.dumps({"command": "x"}))
    with pytest.raises(ValueError, match="lacks"):
        load_recorded(path)
