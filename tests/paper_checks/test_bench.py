"""``laplace-lab bench``: discovery, the row contract and the printed table."""

from __future__ import annotations

import pytest

from laplace_lab.paper_checks.bench import benchmark_dir, discover, format_table, run_benchmarks
from laplace_lab.paper_checks.cli import main

GOOD = """
def run(full=False):
    return [{"name": "toy", "ours_s": 0.5, "baseline": "slow", "baseline_s": 2.0,
             "ratio": 4.0, "target": ">= 3x", "passed": True, "note": "full" if full else "small"}]
"""
BAD = """
def run(full=False):
    return [{"name": "incomplete", "ours_s": 1.0}]
"""


@pytest.fixture
def bench_tree(tmp_path, monkeypatch):
    folder = tmp_path / "benchmarks"
    folder.mkdir()
    (folder / "bench_good.py").write_text(GOOD)
    (folder / "bench_bad.py").write_text(BAD)
    (folder / "helper.py").write_text("raise RuntimeError('not a benchmark')")
    monkeypatch.chdir(tmp_path)
    return folder


def test_discovery_and_row_contract(bench_tree):
    assert benchmark_dir() == bench_tree
    assert [p.name for p in discover(bench_tree)] == ["bench_bad.py", "bench_good.py"]
    rows, errors = run_benchmarks(bench_tree, full=True)
    assert [r["name"] for r in rows] == ["toy"] and rows[0]["note"] == "full"
    assert len(errors) == 1 and "lacks" in errors[0] and "baseline_s" in errors[0]
    table = format_table(rows)
    assert "toy" in table and "4" in table.splitlines()[2] and "yes" in table
    with pytest.raises(ValueError, match="bench_nope"):
        discover(bench_tree, "nope")


def test_cli_bench_only(bench_tree, capsys):
    assert main(["bench", "--only", "good"]) == 0
    out = capsys.readouterr().out
    assert "toy" in out and "1/1 targets met" in out
    assert main(["bench"]) == 1  # the malformed benchmark is reported as an error
