"""``laplace-lab bench``: the registry, the row contract and the printed table."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from laplace_lab.benchmarks import Row, benchmarks, format_table, run_benchmarks
from laplace_lab.cli import main
from laplace_lab.papers import load_benchmarks

PLUGIN = """
from laplace_lab.benchmarks import Row, benchmark

@benchmark("toy-good")
def good(full=False):
    return [Row("toy", 0.5, "slow", 2.0, min_ratio=3.0, note="full" if full else "small")]

@benchmark("toy-bad")
def bad(full=False):
    return [{"name": "not a row"}]
"""


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    (tmp_path / "toy_benchmarks.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "toy_benchmarks"
    sys.modules.pop("toy_benchmarks", None)


def test_shipped_benchmarks_are_registered():
    shipped = {"gpu", "greedy", "jacobians", "lanczos", "peers", "peers-memory", "predictive"}
    shipped |= {"subnet-pipeline"}
    assert shipped <= set(benchmarks())
    load_benchmarks()  # the papers' own: the Wheel bandit, Experiment 1
    assert shipped | {"bandit", "experiment1"} <= set(benchmarks())


def test_ratio_is_always_baseline_over_ours():
    faster = Row("a", 1.0, "b", 4.0, min_ratio=3.0)
    assert faster.ratio == 4.0 and faster.passed
    within = Row("a", 2.0, "b", 1.0, min_ratio=1 / 3)  # "within 3x of the baseline"
    assert within.ratio == 0.5 and within.passed
    wrong = Row("a", 1.0, "b", 100.0, min_ratio=1.0, correct=False)
    assert not wrong.passed
    assert math.isnan(Row("a", 0.0, "b", 1.0, min_ratio=1.0).ratio)


def test_run_and_table(plugin):
    from laplace_lab.benchmarks import load_plugin

    load_plugin(plugin)
    rows, errors = run_benchmarks(["toy-good", "toy-bad"], full=True)
    assert [r.name for r in rows] == ["toy"] and rows[0].note == "full"
    assert len(errors) == 1 and "not Row" in errors[0]
    table = format_table(rows)
    assert "4x" in table.splitlines()[2] and ">= 3x" in table and "yes" in table
    with pytest.raises(ValueError, match="unknown benchmark 'nope'"):
        run_benchmarks(["nope"])


def test_cli_bench_only(plugin, capsys):
    assert main(["bench", "--plugin", plugin, "--only", "toy-good"]) == 0
    out = capsys.readouterr().out
    assert "toy" in out and "1/1 targets met" in out
    assert main(["bench", "--plugin", plugin, "--only", "toy-bad"]) == 1
    err = capsys.readouterr().err  # one line; `laplace-lab --traceback bench` shows the trace
    assert err == (
        "laplace-lab bench: error: benchmark toy-bad failed: TypeError: benchmark toy-bad "
        "returned dict, not Row\n"
    )
    assert main(["bench", "--only", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        "laplace-lab bench: error: unknown benchmark 'nope'; known: " + ", ".join(benchmarks())
    ]


def test_a_benchmark_that_cannot_run_here_is_skipped_not_failed(capsys):
    rows, errors = run_benchmarks(["gpu"])  # no CUDA device on the CI machines
    if rows:  # pragma: no cover - a machine with CuPy and a GPU
        assert all(r.correct for r in rows)
        return
    assert errors == [] and "skipped gpu:" in capsys.readouterr().out


def test_gpu_benchmark_logic_on_a_numpy_stand_in():
    """The GPU rows' bookkeeping (timing, agreement, memory note) with NumPy in CuPy's place."""
    import types

    import numpy as np

    from laplace_lab.benchmarks import bench_gpu

    pool = types.SimpleNamespace(free_all_blocks=lambda: None, total_bytes=lambda: 2**20)
    fake = types.SimpleNamespace(
        asarray=np.asarray,
        asnumpy=np.asarray,
        all=np.all,
        isfinite=np.isfinite,
        ones=np.ones,
        float32=np.float32,
        random=types.SimpleNamespace(default_rng=np.random.default_rng),
        get_default_memory_pool=lambda: pool,
        cuda=types.SimpleNamespace(Device=lambda: types.SimpleNamespace(synchronize=lambda: None)),
    )
    g = bench_gpu.greedy(fake, 60, 200, 40)
    assert g.correct and "identical S: True" in g.note and g.ours > 0
    s = bench_gpu.streamed(fake, 50, 3000, 7, block=700)
    assert s.correct and "differ by 0.0e+00" in s.note
    lr = bench_gpu.low_rank(fake, 40, 500, r=5)
    assert lr.correct and "eigenvalues differ by 0.0e+00" in lr.note


def test_peer_rows_agree_with_curvlinops_and_posteriors_on_a_small_problem(
    tiny_peers, monkeypatch
):
    """Every peer row's answers agree with ours (the timings are not asserted: a row's
    correctness is what a bench run cannot do without), each row on the tiny MLP."""
    pytest.importorskip("curvlinops")
    pytest.importorskip("posteriors")
    problem = tiny_peers._problem
    monkeypatch.setattr(tiny_peers, "_problem", lambda kind, dtype: problem("tiny", dtype))
    monkeypatch.setattr(tiny_peers, "PRODUCTS", 2)
    rows = tiny_peers.ggn_rows()
    assert len(rows) == 6
    assert all(r.correct for r in rows), [r.note for r in rows if not r.correct]
    assert {r.baseline for r in rows} <= {"posteriors 0.1.3", "curvlinops 3.0.1", "laplax 0.0.2"}


def test_a_peer_that_disagrees_marks_its_row_wrong():
    from laplace_lab.benchmarks import bench_peers

    row = bench_peers._row(
        "toy", lambda: np.ones(3), {"peer": lambda: np.array([1.0, 1.0, 1.1])}, "float64", ""
    )
    assert not row.correct and "peer differs from ours by 0.1" in row.note


@pytest.fixture
def tiny_peers(monkeypatch):
    """The peer rows at a size that runs in about a second (40 rows of a 3-6-6-1 MLP, one
    timed call per side)."""
    from laplace_lab.benchmarks import bench_peers

    monkeypatch.setattr(bench_peers, "N_ROWS", 40)
    monkeypatch.setattr(bench_peers, "REPEAT", 1)
    return bench_peers


def test_kfac_peer_row_agrees_and_a_wrong_peer_marks_it_wrong(tiny_peers, monkeypatch):
    pytest.importorskip("curvlinops")
    pytest.importorskip("laplace")
    from laplace_lab.benchmarks import bench_peers_kfac as kfac

    rows = kfac.rows("tiny")
    assert len(rows) == 2 and all(r.correct for r in rows), [r.note for r in rows]
    assert "curvlinops 3.0.1" in rows[0].note and "laplace-torch 0.3" in rows[0].note
    right = kfac._laplace_torch
    monkeypatch.setattr(
        kfac, "_laplace_torch", lambda *a, **k: right(*a, **k) * (1 + 1e-6 * (a[3] > 0))
    )
    (bad,) = kfac.rows("tiny", ("float64",))  # a relative error of 1e-6 is beyond 1e-8
    assert not bad.correct and "laplace-torch 0.3's F v differs from ours" in bad.note
    assert "laplace-torch 0.3 differs from ours" in bad.note


def test_lla_peer_row_agrees_and_a_wrong_peer_marks_it_wrong(tiny_peers, monkeypatch):
    pytest.importorskip("laplace")
    from laplace_lab.benchmarks import bench_peers_lla as lla

    monkeypatch.setattr(lla, "N_TEST", 20)
    rows = lla.rows("tiny")
    assert len(rows) == 2 and all(r.correct for r in rows), [r.note for r in rows]
    right = lla._laplace_torch
    monkeypatch.setattr(lla, "_laplace_torch", lambda *a: right(*a) * (1 + 1e-6))
    (bad,) = lla.rows("tiny", ("float64",))
    assert not bad.correct and "laplace-torch 0.3 differs from ours" in bad.note


def test_eigenvalue_peer_row_agrees_and_a_wrong_peer_marks_it_wrong(tiny_peers, monkeypatch):
    """curvlinops + SciPy agree; laplax's eigenvalues, one of them off by 1e-5 relative (the
    smallest of the k, which a tolerance relative to the largest would miss), do not."""
    pytest.importorskip("curvlinops")
    pytest.importorskip("laplax")
    from laplace_lab.benchmarks import bench_peers_eig as eig
    from laplace_lab.benchmarks import bench_peers_laplax as laplax_side

    monkeypatch.setattr(eig, "K", 5)
    right = laplax_side.top_eigenvalues
    monkeypatch.setattr(
        laplax_side, "top_eigenvalues", lambda *a: right(*a) * np.r_[1, 1, 1, 1, 1 + 1e-5]
    )
    (row,) = eig.rows("tiny", ("float64",))
    assert not row.correct and row.note.endswith(
        "laplax 0.0.2 lanczos differs from ours by 1e-05 (relative)"
    )
    assert "curvlinops 3.0.1 + scipy eigsh differs" not in row.note


def test_laplax_products_agree_and_a_wrong_one_marks_the_row_wrong(tiny_peers):
    pytest.importorskip("laplax")
    import torch

    model, X, y = tiny_peers._problem("tiny", torch.float64)
    (product, note) = tiny_peers._product_peers(model, X, y, torch.float64)["laplax 0.0.2"]
    assert note.startswith("laplax's jit compile ") and note.endswith(" s apart")
    V = np.random.default_rng(0).standard_normal((73, 2))
    ggn = tiny_peers._ours(model, X)

    def ours():
        return np.column_stack([ggn.matvec(v, include_prior=False) for v in V.T])

    assert tiny_peers._row("products", ours, {"laplax": lambda: product(V)}, "float64", "").correct
    bad = tiny_peers._row(
        "products", ours, {"laplax": lambda: product(V) * (1 + 1e-6)}, "float64", ""
    )
    assert not bad.correct and "laplax differs from ours by 1e-06" in bad.note


def test_memory_rows_check_the_answers_and_read_the_peaks(tiny_peers, monkeypatch):
    from laplace_lab.benchmarks import bench_peers_lla, bench_peers_memory

    monkeypatch.setattr(bench_peers_lla, "N_TEST", 20)
    peak, before, answer = bench_peers_memory.measure(
        "full-LLA predictive variances", "ours", "tiny"
    )
    assert peak >= before > 2**20 and answer.shape == (20,)
    ours = (3 * 2**30, 2**30, np.array([1.0, 2.0]))
    row = bench_peers_memory.memory_row(
        "full-LLA predictive variances",
        {"ours": ours, "a": (2 * 2**30, 2**30, np.array([1.0, 2.0 + 1e-9]))},
    )
    assert row.correct and row.unit == "B" and row.ratio == 0.5 and row.baseline == "a"
    assert "whole-process peaks: ours 3.00 GiB, a 2.00 GiB" in row.note
    eig = bench_peers_memory.memory_row(
        "top-20 GGN eigenvalues",
        {"ours": ours, "b": (2**30, 2**30 - 2**20, np.array([1.0 + 1e-5, 2.0]))},
    )
    assert not eig.correct and "b differs from ours by 1e-05" in eig.note


def test_a_faster_peer_gets_the_flop_floor_in_the_note():
    import time

    from laplace_lab.benchmarks import bench_peers

    def slow():
        time.sleep(0.01)
        return np.ones(2)

    row = bench_peers._row("toy", slow, {"peer": lambda: np.ones(2)}, "float64", "", flops=1e9)
    rate = float(row.note.split(" s at ")[1].split(" GFLOP/s")[0])
    assert row.correct and row.ratio < 1 and "floor 1e+09 flop = " in row.note
    assert 1 < rate < 1e4  # GFLOP/s of one NumPy matrix product
    fast = bench_peers._row("toy", lambda: np.ones(2), {"peer": slow}, "float64", "", flops=1e9)
    assert "floor" not in fast.note
