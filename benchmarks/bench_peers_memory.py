"""Peak memory per side of the KFAC, full-LLA and top-20 eigenvalue peer rows, float64.

``laplace-lab bench --only peers-memory`` (apart from ``peers``: eight fresh processes).

Each side of each row runs once in a fresh process (``spawn``), one after the other, as in
:mod:`.bench_subnet_pipeline`: the process builds the row's network and data, runs the side
once on the 3-6-6-1 MLP (imports and first-call set-up), reads its peak resident memory
(``VmHWM``), runs the side on the row's problem and reads the peak again. The row's values
are the memory the computation adds above that set-up (ours and the leanest peer); the
note lists every side's whole-process peak. The answers come back to the parent and must
agree with ours as in the timed rows, else the row is marked wrong.
"""

from __future__ import annotations

import multiprocessing
import re
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from laplace_lab.benchmarks import bench_peers as peers
from laplace_lab.benchmarks._harness import BenchmarkSkipped, Row, benchmark, main_for

#: Row → (the problem's kind, {side: the peer library it needs, None for ours}).
ROWS = {
    "KFAC factors + one (F + I)^-1 v": (
        "large",
        {"ours": None, "curvlinops 3.0.1": "curvlinops", "laplace-torch 0.3": "laplace"},
    ),
    "full-LLA predictive variances": ("small", {"ours": None, "laplace-torch 0.3": "laplace"}),
    "top-20 GGN eigenvalues": (
        "large",
        {
            "ours": None,
            "curvlinops 3.0.1 + scipy eigsh": "curvlinops",
            "laplax 0.0.2 lanczos": "laplax",
        },
    ),
}


def _peak_rss() -> int:
    """This process's peak resident memory in bytes (``VmHWM``)."""
    status = Path("/proc/self/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) * 1024


def _call(row: str, side: str, kind: str) -> np.ndarray:
    """The answer of ``side`` on ``row`` for the float64 ``kind`` problem."""
    import torch

    from laplace_lab.benchmarks import bench_peers_eig, bench_peers_kfac, bench_peers_lla
    from laplace_lab.benchmarks import bench_peers_laplax as laplax_side

    model, X, y = peers._problem(kind, torch.float64)
    p = sum(int(t.numel()) for t in model.parameters())
    if row.startswith("KFAC"):
        v = np.random.default_rng(2).standard_normal(p)
        if side == "ours":
            return bench_peers_kfac._ours(model, X, v)
        fn = {
            "curvlinops 3.0.1": bench_peers_kfac._curvlinops,
            "laplace-torch 0.3": bench_peers_kfac._laplace_torch,
        }[side]
        return peers._numpy(fn(model, X, y, torch.as_tensor(v)))
    if row.startswith("full-LLA"):
        X_test = bench_peers_lla._test_inputs(X)
        if side == "ours":
            return bench_peers_lla._ours(model, X, X_test)
        return peers._numpy(bench_peers_lla._laplace_torch(model, X, y, X_test))
    k, tol = min(bench_peers_eig.K, p - 1), 1e-10
    if side == "ours":
        return bench_peers_eig._ours(model, X, k, tol)
    if side.startswith("curvlinops"):
        return bench_peers_eig._curvlinops(model, X, y, k, tol)
    steps = min(bench_peers_eig.STEPS, p)
    return laplax_side.top_eigenvalues(model, X, y, peers.NOISE_VAR, k, steps)


def measure(row: str, side: str, kind: str | None = None) -> tuple[int, int, np.ndarray]:
    """(peak bytes, peak bytes after the set-up, answer) of one side, in this process, on
    the row's problem (or the ``kind`` problem)."""
    import torch

    torch.set_num_threads(1)
    _call(row, side, "tiny")
    before = _peak_rss()
    answer = _call(row, side, kind or ROWS[row][0])
    return _peak_rss(), before, np.asarray(answer, dtype=np.float64)


def _in_fresh_process(row: str, side: str) -> tuple[int, int, np.ndarray]:
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
        return pool.submit(measure, row, side).result()


def memory_row(name: str, results: dict[str, tuple[int, int, np.ndarray]]) -> Row:
    """The row of one peer comparison from each side's (peak, peak after set-up, answer);
    ``results["ours"]`` is ours. Eigenvalues compare entry by entry (1e-6), the rest
    relative to ours' largest entry (1e-8)."""
    peak, before, ref = results["ours"]
    eig = name.startswith("top-")
    added, wrong = {}, []
    for side, (p_peak, p_before, answer) in results.items():
        if side == "ours":
            continue
        added[side] = p_peak - p_before
        scale = np.abs(ref) if eig else np.max(np.abs(ref))
        err = float(np.max(np.abs(answer - ref) / np.maximum(scale, 1e-300)))
        if not err <= (1e-6 if eig else 1e-8):
            wrong.append(f"{side} differs from ours by {err:.2g} (relative)")
    leanest = min(added, key=added.get)
    whole = ", ".join(f"{s} {r[0] / 2**30:.2f} GiB" for s, r in results.items())
    return Row(
        f"peak memory added, {name} [float64, fresh process per side]",
        float(peak - before),
        leanest,
        float(added[leanest]),
        min_ratio=1.0,
        correct=not wrong,
        unit="B",
        note="; ".join([f"whole-process peaks: {whole}", *wrong]),
    )


@benchmark("peers-memory")
def rows(full: bool = False) -> list[Row]:
    """One row per entry of :data:`ROWS` with at least one peer installed (``full`` changes
    nothing: the sizes are fixed)."""
    if not Path("/proc/self/status").is_file():
        raise BenchmarkSkipped("peak memory is read from /proc/self/status (Linux only)")
    out = []
    for name, (_, sides) in ROWS.items():
        present = [s for s, lib in sides.items() if lib is None or peers._have(lib)]
        if len(present) > 1:
            out.append(memory_row(name, {s: _in_fresh_process(name, s) for s in present}))
    return out


if __name__ == "__main__":
    raise SystemExit(main_for(rows))
