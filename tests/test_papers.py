"""The discovery of the papers: folders, claims, studies, benchmarks, the static claim index."""

from __future__ import annotations

import subprocess
import sys

import pytest

from laplace_lab.papers import claim_index, claims, paper_folder, papers


def test_every_paper_folder_is_found_with_its_claims():
    assert set(papers()) == {
        "fsp-laplace",
        "self-supervised-laplace",
        "subnetwork-inference",
        "subnetwork-laplace-optimality",
        "surrogate-ntk-lla",
    }
    for paper in papers():
        mine = claims(paper)
        assert mine and {c.paper for c in mine} == {paper}
        assert (paper_folder(paper) / "__init__.py").is_file()


def test_the_static_claim_index_is_the_registry():
    """Read from the sources, the index must name every registered claim and its module:
    a claim registered under a name the index cannot read fails here."""
    index = claim_index()
    registered = {c.key: c.func.__module__ for c in claims()}
    assert index == registered


def _modules_after(code: str) -> list[str]:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            code + "\nimport sys\nprint(sorted(m for m in sys.modules "
            "if m.startswith('laplace_lab.paper_checks.') and '.verification' not in m "
            "and m.count('.') > 2))",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    return eval(out.stdout.strip().splitlines()[-1])


def test_one_claim_imports_its_module_only_and_an_unknown_one_nothing():
    loaded = _modules_after(
        "from laplace_lab.papers import load_claims; load_claims(names=['table-c2-values'])"
    )
    assert "laplace_lab.paper_checks.fsp_laplace.claims" in loaded
    assert not [m for m in loaded if "subnetwork" in m or "surrogate" in m or "self_" in m]
    assert (
        _modules_after(
            "from laplace_lab.papers import load_claims; load_claims(names=['no-such-claim'])"
        )
        == []
    )


def test_an_unknown_paper_is_named():
    with pytest.raises(ValueError, match="paper must be one of"):
        paper_folder("no-such-paper")
