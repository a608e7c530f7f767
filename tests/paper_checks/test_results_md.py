"""Each paper's RESULTS.md shows the verdicts its claims earn, and rewriting keeps the prose."""

from __future__ import annotations

import re

import pytest

from laplace_lab.paper_checks.verification.mutants import Mutant
from laplace_lab.paper_checks.verification.outcome import Outcome
from laplace_lab.paper_checks.verification.registry import Claim, MutantOutcome, Status, Verdict
from laplace_lab.paper_checks.verification.results_md import (
    BEGIN,
    END,
    table_verdicts,
    write_results,
)
from laplace_lab.papers import claims, paper_folder, papers


@pytest.mark.parametrize("paper", list(papers()))
def test_results_md_shows_the_verdicts_the_claims_earn(paper):
    """test_claims.py checks that each claim earns its recorded verdict; this checks that the
    paper's RESULTS.md shows those verdicts, every claim once, and that its figures exist."""
    path = paper_folder(paper) / "RESULTS.md"
    text = path.read_text(encoding="utf-8")
    assert table_verdicts(text) == {c.name: c.expected.value for c in claims(paper)}
    for link in re.findall(r"\]\((figures/[^)]+)\)", text):
        assert (path.parent / link).is_file(), link


def _meta():
    return {"mode": "quick", "seed": 0, "commit": "0123456789abcdef", "date": "2026-11-27T00:00"}


def test_write_results_replaces_the_block_keeps_the_prose_and_the_figures(tmp_path):
    report = tmp_path / "report"
    (report / "figures").mkdir(parents=True)
    (report / "figures" / "a.png").write_bytes(b"png")
    folder = tmp_path / "paper"
    folder.mkdir()
    (folder / "figures").mkdir()
    (folder / "figures" / "stale.png").write_bytes(b"old")
    prose = f"# Toy\n\nProse before.\n\n{BEGIN}\nold\n{END}\n\nAfter.\n"
    (folder / "RESULTS.md").write_text(prose)
    mutant = Mutant("wrong", "a wrong variant", replace={(object, "x"): 1}, expect="REFUTED")
    item = Claim("toy", "holds", "eq. (1)", "It holds.", Status.CONFIRMED, lambda ctx: None)
    fig = type("F", (str,), {"caption": "the figure"})("figures/a.png")
    verdict = Verdict(Status.CONFIRMED, figures=(fig,), summary="it | holds")
    out = Outcome(item, verdict, 1.0, (MutantOutcome(mutant, Status.REFUTED, 0.1),))
    (path,) = write_results([out], _meta(), report_dir=report, folder_of=lambda p: folder)
    text = path.read_text()
    assert text.startswith("# Toy\n\nProse before.") and text.rstrip().endswith("After.")
    assert "\nold\n" not in text
    assert table_verdicts(text) == {"holds": "CONFIRMED"}
    assert "it \\| holds" in text and "| 1/1 |" in text and "*the figure*" in text
    assert (folder / "figures" / "a.png").read_bytes() == b"png"
    assert not (folder / "figures" / "stale.png").exists()
    write_results([out], _meta(), report_dir=report, folder_of=lambda p: folder)
    assert path.read_text() == text  # rewriting is idempotent


def test_a_results_md_without_the_block_is_refused():
    with pytest.raises(ValueError, match="no generated verdict block"):
        table_verdicts("# Results\n\nprose only\n")
