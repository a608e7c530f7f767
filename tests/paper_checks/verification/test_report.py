"""The report: HTML parses, figures exist, JSON validates against the documented schema."""

from __future__ import annotations

import datetime
import json
from dataclasses import replace
from html.parser import HTMLParser

import jsonschema
import matplotlib.pyplot as plt
import numpy as np
import pytest

from laplace_lab.cli import main
from laplace_lab.paper_checks.verification.errata import Erratum, errata_of
from laplace_lab.paper_checks.verification.mutants import Mutant
from laplace_lab.paper_checks.verification.registry import (
    Claim,
    Context,
    MutantOutcome,
    Status,
    Verdict,
    run_claim,
)
from laplace_lab.paper_checks.verification.report import (
    VERDICT_SCHEMA,
    Outcome,
    paper_counts,
    write_report,
)
from laplace_lab.paper_checks.verification.run_info import run_metadata
from laplace_lab.papers import claims, errata, papers


class _Collector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.images, self.ids, self.hrefs, self.captions, self.stack = [], set(), [], [], []
        self._in_caption = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs["src"])
        elif tag not in {"meta", "br", "input"}:
            self.stack.append(tag)
        if tag == "a" and "href" in attrs:
            self.hrefs.append(attrs["href"])
        self._in_caption = tag == "figcaption"
        if "id" in attrs:
            self.ids.add(attrs["id"])

    def handle_data(self, data):
        if self._in_caption:
            self.captions.append(data)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"unbalanced </{tag}>"
        self.stack.pop()
        self._in_caption = False


def _parse(path) -> _Collector:
    parser = _Collector()
    parser.feed(path.read_text())
    assert parser.stack == []
    return parser


def _fake(status, with_figure, evidence="a <b>tag</b> & co", summary=""):
    def check(ctx: Context) -> Verdict:
        figs = ()
        if with_figure:
            fig, ax = plt.subplots()
            ax.plot([0, 1], [1, 0])
            figs = ctx.save_figure(fig, "fake.png", caption="Dashed: the tolerance.")
        return Verdict(
            status,
            measured=np.float64(0.5),
            expected=1.0,
            tolerance=np.float32(0.25),
            evidence=evidence,
            details={"array": np.arange(3), "count": np.int64(4), "nested": {"x": (1, 2)}},
            figures=figs,
            summary=summary,
        )

    return check


def _meta(**changes):
    meta = run_metadata(
        full=False,
        seed=0,
        mutants="light",
        seconds=1.5,
        started=datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC),
        command="laplace-lab check",
    )
    return meta | changes


def test_report_files_are_valid(tmp_path):
    claims = [
        Claim("paper-a", "one", "eq. (1)", "A.", Status.CONFIRMED, _fake(Status.CONFIRMED, True)),
        Claim(
            "paper-b",
            "two",
            "Thm 2",
            "B.",
            Status.REFUTED,
            _fake(Status.REFUTED, False, evidence=["first point.", "second <point>"]),
        ),
    ]
    ctx = Context(figure_dir=tmp_path / "figures")
    outcomes = [Outcome(c, run_claim(c, ctx), 0.1) for c in claims]
    paths = write_report(outcomes, tmp_path, meta=_meta())
    data = json.loads(paths["json"].read_text())
    jsonschema.validate(data, VERDICT_SCHEMA)
    assert data["meta"]["date"] == "2026-01-02T03:04:05+00:00"
    assert data["meta"]["seed"] == 0 and data["meta"]["mode"] == "quick"
    one, two = data["claims"]
    assert one["details"] == {"array": [0, 1, 2], "count": 4, "nested": {"x": [1, 2]}}
    assert one["tolerance"] == 0.25
    assert one["captions"] == {"figures/fake.png": "Dashed: the tolerance."}
    assert two["evidence"] == "- first point.\n- second <point>"
    assert two["reason"] == "first point."  # no summary: the first sentence of the evidence
    html = paths["html"].read_text()
    parser = _parse(paths["html"])
    assert parser.images == ["figures/fake.png"]
    assert all((tmp_path / src).is_file() for src in parser.images)
    assert parser.captions == ["Dashed: the tolerance."]
    assert {"paper-a", "paper-b", "paper-a-one", "paper-b-two", "errata", "run"} <= parser.ids
    assert "a &lt;b&gt;tag&lt;/b&gt; &amp; co" in html
    assert "<li>second &lt;point&gt;</li>" in html  # evidence points become a list
    assert "2026-01-02T03:04:05+00:00" in html and data["meta"]["commit"][:10] in html
    md = paths["markdown"].read_text()
    row = "| [two](#paper-b-two) | Thm 2 | exact | paper | **REFUTED** | REFUTED | first point. |"
    assert row + " 0.5 | 0.25 | – |" in md
    assert one["kind"] == "exact" and one["setting"]["label"] == "paper"
    assert one["status"] == one["quick_status"] == "CONFIRMED" and one["paper_scale"] is None
    assert md.count('\n- <a id="erratum-') == 0  # only the errata of the papers reported


def test_verdict_reason_and_points():
    v = Verdict(Status.REFUTED, evidence="The gap is 3e-6. It should be 1e-12.")
    assert v.reason == "The gap is 3e-6." and v.points == ("The gap is 3e-6. It should be 1e-12.",)
    v = Verdict(Status.REFUTED, evidence=["a", " ", "b"], summary="  the gap is 3e-6  ")
    assert v.reason == "the gap is 3e-6" and v.points == ("a", "b")
    assert len(Verdict(Status.REFUTED, summary="x" * 300).reason) == 160


def test_per_paper_counts_and_mutant_power(tmp_path):
    m = Mutant("wrong", "a wrong variant", {(Status, "ERROR"): "x"})
    item = Claim("p", "c", "l", "s", Status.CONFIRMED, lambda ctx: None)
    other = Claim("q", "d", "l", "s", Status.REFUTED, lambda ctx: None)
    outcomes = [
        Outcome(item, Verdict(Status.CONFIRMED), 1.0, (MutantOutcome(m, Status.REFUTED, 2.0),)),
        Outcome(item, Verdict(Status.REFUTED), 1.0, (MutantOutcome(m, Status.CONFIRMED, 2.0),)),
        Outcome(other, Verdict(Status.ERROR), 0.5),
    ]
    counts = paper_counts(outcomes)
    assert counts["p"]["claims"] == 2 and counts["p"]["caught"] == 1 and counts["p"]["run"] == 2
    assert counts["p"]["status"][Status.REFUTED] == 1 and counts["p"]["s"] == 6.0
    assert counts["q"]["status"][Status.ERROR] == 1 and counts["q"]["run"] == 0
    paths = write_report(outcomes, tmp_path, meta=_meta())
    html = paths["html"].read_text()
    assert "1/2" in html and "not caught" in html


def test_errata_name_existing_claims_and_claims_link_back(tmp_path):
    keys = {c.key for c in claims()}
    ERRATA = errata()
    assert {e.paper for e in ERRATA} == set(papers())  # every paper's errata.py registers
    for erratum in ERRATA:
        assert set(erratum.claims) <= keys, erratum
    linked = next(e for e in ERRATA if e.claims)
    key = linked.claims[0]
    assert linked in errata_of(key)
    paper, name = key.split("/", 1)
    item = Claim(paper, name, "l", "s", Status.REFUTED, lambda ctx: None)
    paths = write_report([Outcome(item, Verdict(Status.REFUTED), 0.1)], tmp_path, meta=_meta())
    parser = _parse(paths["html"])
    assert linked.anchor in parser.ids
    assert {x.anchor for x in ERRATA if x.paper != paper}.isdisjoint(parser.ids)
    assert f"#{linked.anchor}" in parser.hrefs  # the claim links to the erratum ...
    assert f"#{paper}-{name}" in parser.hrefs  # ... and the erratum to the claim
    assert json.loads(paths["json"].read_text())["claims"][0]["errata"] == [linked.anchor]


def test_erratum_claims_accept_names_keys_and_a_phrase():
    e = Erratum("p", "l", "s", "c", "claims a, b")
    assert e.claims == ("p/a", "p/b")
    assert Erratum("p", "l", "s", "c", ("a", "q/b")).claims == ("p/a", "q/b")


def test_a_crashing_claim_is_an_error_verdict():
    def boom(ctx):
        raise RuntimeError("kaput")

    verdict = run_claim(Claim("p", "c", "l", "s", Status.CONFIRMED, boom), Context())
    assert verdict.status is Status.ERROR and "kaput" in verdict.evidence
    assert verdict.reason == "RuntimeError: kaput"


def test_cli_check_writes_a_schema_valid_report(tmp_path):
    argv = ["check", "--paper", "surrogate-ntk-lla", "--out", str(tmp_path), "--seed", "3"]
    argv += ["--claim", "jvp-variance-multi-output"]
    argv += ["--claim", "surrogate-ntk-lla/lla-depends-only-on-ntk"]
    assert main(argv) == 0
    data = json.loads((tmp_path / "verdicts.json").read_text())
    jsonschema.validate(data, VERDICT_SCHEMA)
    assert data["meta"]["seed"] == 3 and data["meta"]["mutants"] == "light"
    assert data["meta"]["command"].startswith("laplace-lab check --quick --seed 3")
    assert [d["claim"] for d in data["claims"]] == [
        "jvp-variance-multi-output",
        "lla-depends-only-on-ntk",
    ]
    for d in data["claims"]:
        assert d["status"] == d["expected_status"]
        assert d["mutants"] and all(m["caught"] for m in d["mutants"])
        assert all((tmp_path / f).is_file() for f in d["figures"])


def test_cli_rejects_unknown_paper(capsys, tmp_path):
    assert main(["check", "--paper", "no-such-paper", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("laplace-lab check: error: paper must be one of")
    assert not (tmp_path / "r").exists()


USER_CLAIMS = """
from laplace_lab.paper_checks.verification import Setting, Status, Verdict, claim


@claim(paper="my-conjecture", name="one-plus-one", location="notebook p. 1",
       statement="1 + 1 = 2.", kind="exact", setting=Setting.paper())
def one_plus_one(ctx):
    return Verdict(Status.CONFIRMED if 1 + 1 == 2 else Status.REFUTED, measured=1 + 1, expected=2)
"""


def test_check_loads_a_users_claim_module(tmp_path, monkeypatch, capsys):
    import sys

    from laplace_lab.paper_checks.verification import registry

    (tmp_path / "my_claims.py").write_text(USER_CLAIMS)
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "report"
    try:
        argv = ["check", "--plugin", "my_claims", "--paper", "my-conjecture", "--out", str(out)]
        assert main(argv) == 0
        verdicts = json.loads((out / "verdicts.json").read_text())
        claims = verdicts["claims"]
        assert [(c["claim"], c["status"]) for c in claims] == [("one-plus-one", "CONFIRMED")]
        assert main(["check", "--plugin", "no_such_module_here", "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert (
            len(err) == 1 and "cannot import claim plugin module 'no_such_module_here'" in err[0]
        )
    finally:
        registry._REGISTRY.pop("my-conjecture/one-plus-one", None)
        sys.modules.pop("my_claims", None)


SURPRISING_CLAIM = """
from laplace_lab.paper_checks.verification import Setting, Status, Verdict, claim


@claim(paper="my-surprise", name="two-plus-two", location="notebook p. 2",
       statement="2 + 2 = 5.", kind="exact", setting=Setting.paper(),
       expected=Status.CONFIRMED)
def two_plus_two(ctx):
    return Verdict(Status.CONFIRMED if 2 + 2 == 5 else Status.REFUTED, measured=4, expected=5)
"""


def test_a_verdict_that_differs_from_its_expected_one_is_listed_and_fails_strict(
    tmp_path, monkeypatch, capsys
):
    import sys

    from laplace_lab.paper_checks.verification import registry

    (tmp_path / "my_surprise.py").write_text(SURPRISING_CLAIM)
    monkeypatch.syspath_prepend(str(tmp_path))
    argv = ["check", "--plugin", "my_surprise", "--paper", "my-surprise", "--jobs", "1"]
    try:
        assert main([*argv, "--out", str(tmp_path / "a")]) == 0
        out = capsys.readouterr().out.splitlines()
        at = out.index("1 verdict(s) differ from the expected ones:")
        assert out[at + 1].startswith("  my-surprise/two-plus-two: REFUTED, expected CONFIRMED")
        assert main([*argv, "--strict", "--out", str(tmp_path / "b")]) == 1
    finally:
        registry._REGISTRY.pop("my-surprise/two-plus-two", None)
        sys.modules.pop("my_surprise", None)


def test_recorded_runs_load_and_reach_the_report(tmp_path):
    from laplace_lab.paper_checks.verification.recorded import load_recorded

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
    paths = write_report([outcome], tmp_path / "r", meta=_meta())
    assert "*Recorded* (2026-11-24, commit 0123456789" in paths["markdown"].read_text()
    payload = json.loads(paths["json"].read_text())
    jsonschema.validate(payload, VERDICT_SCHEMA)
    assert payload["claims"][0]["recorded"][0]["data"] == {"map": [4198.0]}
    path.write_text(json.dumps({"command": "x"}))
    with pytest.raises(ValueError, match="lacks"):
        load_recorded(path)


def _recorded_outcome(quick: Status):
    """A claim whose recorded paper-scale run (re-decided: REFUTED) counts."""
    from laplace_lab.paper_checks.verification import decisions
    from laplace_lab.paper_checks.verification.recorded import Recorded

    d = decisions.superiority(decisions.test("gain", [-1.0, -1.2, -0.9, -1.1, -1.05]))
    rec = Recorded("laplace-lab check --full", "abc", "2026-11-01", "T = 16,000").decided(
        d, why="the paper's horizon"
    )
    item = Claim("p", "c", "l", "s", quick, lambda ctx: None)
    return Outcome(item, Verdict(quick, recorded=(rec,)), 1.0)


def test_a_counting_paper_scale_run_outranks_quick_mode(tmp_path):
    o = _recorded_outcome(Status.NOT_REPRODUCIBLE_HERE)
    assert o.status is Status.REFUTED and o.verdict.status is Status.NOT_REPRODUCIBLE_HERE
    data = o.as_json()
    assert data["status"] == "REFUTED" and data["quick_status"] == "NOT_REPRODUCIBLE_HERE"
    assert data["paper_scale"]["status"] == "REFUTED" and data["paper_scale"]["date"]
    assert paper_counts([o])["p"]["status"][Status.REFUTED] == 1
    assert paper_counts([o])["p"]["quick"][Status.NOT_REPRODUCIBLE_HERE] == 1
    broken = _recorded_outcome(Status.ERROR)  # broken code stays an ERROR
    assert broken.status is Status.ERROR
    from laplace_lab.paper_checks.verification.kinds import Kind, Setting

    table = Setting.substitute("another series", specific=True)
    substitute = Outcome(replace(o.claim, kind=Kind.SUPERIORITY, setting=table), o.verdict, 1.0)
    assert substitute.status is Status.NOT_REPRODUCIBLE_HERE
    paths = write_report([o], tmp_path, meta=_meta())
    jsonschema.validate(json.loads(paths["json"].read_text()), VERDICT_SCHEMA)
    assert "paper-scale run 2026-11-01; quick: NOT_REPRODUCIBLE_HERE" in paths["html"].read_text()


def test_errata_and_substitutes_are_counted_apart():
    from laplace_lab.paper_checks.verification.kinds import Kind, Setting

    def make(name, kind, setting, status):
        c = Claim("p", name, "l", "s", status, lambda ctx: None, (), False, kind, setting)
        return Outcome(c, Verdict(status), 0.1)

    sub = Setting.substitute("sklearn digits")
    row = paper_counts(
        [
            make("a", Kind.EXACT, Setting.paper(), Status.CONFIRMED),
            make("b", Kind.SUPERIORITY, sub, Status.INCONCLUSIVE),
            make("c", Kind.ERRATUM, Setting.paper(), Status.REFUTED),
            make("d", Kind.ERRATUM, Setting.paper(), Status.CONFIRMED),
        ]
    )["p"]
    assert row["claims"] == 2 and row["errata_checked"] == 2 and row["errata_found"] == 1
    assert row["paper"][Status.CONFIRMED] == 1 and row["substitute"][Status.INCONCLUSIVE] == 1


def test_the_page_shows_every_text_whole_with_filters_lists_and_captions(tmp_path):
    """No browser: the structure the reader meets (tests/browser/test_pages.py drives it)."""
    summary = "the gap " + " ".join(f"w{i}" for i in range(60))  # > 160 characters
    why = "the verdict of the mutant " + " ".join(f"m{i}" for i in range(60))
    m = Mutant("wrong", "a wrong variant", {(Status, "ERROR"): "x"})
    fig_dir = tmp_path / "figures"
    fig_dir.mkdir()

    def figures(ctx: Context) -> Verdict:
        figs = ()
        for name, caption in (("with.png", "Dashed: the bound."), ("bare.png", "")):
            fig, ax = plt.subplots()
            ax.plot([0, 1])
            figs += ctx.save_figure(fig, name, caption=caption)
        return Verdict(
            Status.CONFIRMED, evidence=["set-up", "cases:\n- one\n- two <b>"], figures=figs
        )

    ctx = Context(figure_dir=fig_dir)
    a = Claim("paper-a", "one", "eq. (1)", "A.", Status.CONFIRMED, figures)
    b = Claim("paper-b", "two", "Thm 2", "B.", Status.CONFIRMED, lambda ctx: None)
    outcomes = [
        Outcome(a, run_claim(a, ctx), 0.1, (MutantOutcome(m, Status.CONFIRMED, 0.2, why),)),
        Outcome(b, Verdict(Status.REFUTED, summary=summary, measured="x" * 300), 0.1),
    ]
    paths = write_report(outcomes, tmp_path, meta=_meta())
    html = paths["html"].read_text()
    parser = _parse(paths["html"])
    # filters: a checkbox per status present, the papers, the differing verdicts, the count
    assert "<form id='filters'" in html and "2 of 2 claims shown" in html
    assert "name='status' value='CONFIRMED'" in html and "value='REFUTED'" in html
    assert "value='ERROR'" not in html and "<option value='paper-b'>" in html
    assert "name='differs'" in html and "<script>" in html and "src='http" not in html
    # both claims differ from the expected: a mutant not caught, a quick verdict that changed
    assert html.count("data-differs='1'") == 4  # each claim's table row and section
    # evidence as a list, a point's "- " lines as sub-items
    assert "<ul class='evidence'><li>set-up</li><li>cases:<ul><li>one</li>" in html
    assert "<li>two &lt;b&gt;</li></ul></li></ul>" in html
    # the reasons whole, wherever they stand (the long ones folded into <details>)
    assert html.count(summary) == 2 and why in html and "x" * 300 in html
    assert "…" not in html.replace("<code>…</code>", "")
    md = paths["markdown"].read_text()
    assert summary in md and why in md
    # every figure captioned, a missing caption shown and counted in the header
    assert parser.images == ["figures/with.png", "figures/bare.png"]
    assert parser.captions == ["Dashed: the bound.", "(no caption)"]
    assert "2 figures, 1 without caption" in html and "1 without caption" in md
