"""The CNN peer rows: ours and each peer agree on the GGN and on the KFAC (expand and reduce)
of a convolutional network."""

from __future__ import annotations

import pytest


def test_cnn_rows_agree_with_curvlinops_posteriors_and_laplace_torch(monkeypatch):
    pytest.importorskip("curvlinops")
    pytest.importorskip("posteriors")
    pytest.importorskip("laplace")
    from laplace_lab.benchmarks import bench_peers, bench_peers_cnn

    monkeypatch.setattr(bench_peers_cnn, "N_CNN", 8)
    monkeypatch.setattr(bench_peers_cnn, "CHANNELS", (1, 2))
    monkeypatch.setattr(bench_peers_cnn, "BLOCK", 16)  # three blocks: p = 39
    monkeypatch.setattr(bench_peers, "REPEAT", 1)
    monkeypatch.setattr(bench_peers, "PRODUCTS", 2)
    rows = bench_peers_cnn.rows()
    assert [r.name.split(",")[0] for r in rows] == [
        "full GGN",
        "diagonal GGN",
        "2 GGN-vector products",
        "KFAC factors + one (F + I)^-1 v",
        "KFAC factors + one (F + I)^-1 v",
    ] * 2
    assert ["KFAC-expand" in r.name for r in rows[3:5]] == [True, False]
    assert "KFAC-reduce" in rows[4].name
    assert all("p = 39" in r.name for r in rows)
    assert all(r.correct for r in rows), [r.note for r in rows if not r.correct]
    assert "posteriors 0.1.3" in rows[0].note and "curvlinops 3.0.1" in rows[0].note
    assert "laplace-torch 0.3" in rows[4].note and "curvlinops 3.0.1" in rows[4].note
