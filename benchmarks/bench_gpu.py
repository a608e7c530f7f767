"""The GPU kernels on CuPy against the same kernels on NumPy, at sizes where a GPU should win.

Rows (ratio = NumPy time / CuPy time; the device's memory peak in the note):

- Greedy-Laplace (Algorithm 2 as a pivoted partial Cholesky from the Jacobian columns):
  N′ = 2,000, m = 30,000 candidates, k = 10,000 (``--full``); N′ = 500, m = 4,000,
  k = 1,000 by default. Both sides must return the identical S.
- The streamed Woodbury predictive (``streamed_predictive_variance``) of a network whose
  Jacobian does not fit in memory: N′ = 20,000 rows, p = 1.7 M parameters (ResNet-110 scale)
  in column blocks of 16,384, M = 100 test points, float32 blocks accumulated in float64
  (``--full``; 2,000 × 100,000 by default). Each side draws its timed blocks with its own
  generator (NumPy on the host, CuPy on the device); the row is correct only if both
  backends also agree on identical blocks.

- Low-rank Laplace (``LowRankLaplace.from_factor``: thick-restart Lanczos on the GGN-vector
  product J_wᵀ(J_w v)): the top r = 20 eigenpairs of a GGN with N′ = 2,000 rows and
  p = 200,000 parameters (``--full``; 500 × 20,000 by default). Both sides start from the
  same seed and must agree on the eigenvalues to 1e-8 relative.

Without CuPy or a CUDA device the benchmark is skipped. The numbers of a run are printed,
never guessed; the README lists the ones measured and the device they ran on.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from laplace_lab.benchmarks._harness import BenchmarkSkipped, Row, benchmark, main_for
from laplace_lab.numerics import (
    GGN,
    LowRankLaplace,
    greedy_laplace,
    streamed_predictive_variance,
)


def _cupy() -> Any:
    try:
        import cupy
    except ImportError as err:
        raise BenchmarkSkipped(
            "CuPy is not installed (pip install 'laplace-lab[cuda12]')"
        ) from err
    if not cupy.cuda.is_available():
        raise BenchmarkSkipped("no CUDA device")
    return cupy


def _timed_gpu(cupy: Any, fn: Any) -> tuple[Any, float, int]:
    """(result, seconds, peak device bytes of the memory pool) of ``fn()``, synchronised.

    ``fn`` runs twice and the second call is timed: the first compiles CuPy's kernels (a
    one-off cost of a fresh machine, cached on disk after it), which is not the kernel's.
    """
    pool = cupy.get_default_memory_pool()
    fn()
    pool.free_all_blocks()
    cupy.cuda.Device().synchronize()
    start = time.perf_counter()
    out = fn()
    cupy.cuda.Device().synchronize()
    return out, time.perf_counter() - start, pool.total_bytes()


def greedy(cupy: Any, n: int, m: int, k: int) -> Row:
    J = np.random.default_rng(0).standard_normal((n, m))
    cpu = GGN.regression(J, noise_var=1.0, prior_precision=1.0)
    start = time.perf_counter()
    S_cpu = greedy_laplace(cpu, k, n_candidates=m)
    base = time.perf_counter() - start
    gpu = GGN.regression(cupy.asarray(J), noise_var=1.0, prior_precision=1.0)
    S_gpu, ours, peak = _timed_gpu(cupy, lambda: greedy_laplace(gpu, k, n_candidates=m))
    same = bool(np.array_equal(S_cpu, S_gpu))
    return Row(
        f"greedy_laplace on CuPy vs NumPy (N={n}, m={m}, k={k})",
        ours,
        "the same kernel on NumPy",
        base,
        min_ratio=1.0,
        correct=same,
        note=f"identical S: {same}; device pool peak {peak / 2**30:.2f} GiB",
    )


def _blocks(xp: Any, rng: Any, n: int, p: int, m: int, block: int) -> Iterator[tuple]:
    for a in range(0, p, block):
        b = min(block, p - a)
        J = rng.standard_normal((n, b), dtype=xp.float32) / np.float32(np.sqrt(p))
        V = xp.ones(b, dtype=xp.float32)
        G = rng.standard_normal((m, b), dtype=xp.float32) / np.float32(np.sqrt(p))
        yield J, V, G


def streamed(cupy: Any, n: int, p: int, m: int, block: int = 16_384) -> Row:
    # agreement on identical data first: both backends must compute the same numbers
    same_blocks = list(_blocks(np, np.random.default_rng(2), 300, 5_000, 20, 1_000))
    ref = streamed_predictive_variance(same_blocks)
    got = streamed_predictive_variance([tuple(cupy.asarray(a) for a in b) for b in same_blocks])
    err = float(np.max(np.abs(cupy.asnumpy(got) - ref) / ref))
    start = time.perf_counter()
    var_cpu = streamed_predictive_variance(_blocks(np, np.random.default_rng(1), n, p, m, block))
    base = time.perf_counter() - start
    var_gpu, ours, peak = _timed_gpu(
        cupy,
        lambda: streamed_predictive_variance(
            _blocks(cupy, cupy.random.default_rng(1), n, p, m, block)
        ),
    )
    finite = bool(np.all(np.isfinite(var_cpu))) and bool(cupy.all(cupy.isfinite(var_gpu)))
    return Row(
        f"streamed Woodbury predictive on CuPy vs NumPy (N={n}, p={p}, M={m}, "
        f"blocks of {block}, float32 blocks, float64 accumulation)",
        ours,
        "the same kernel on NumPy",
        base,
        min_ratio=1.0,
        correct=finite and err < 1e-5,
        note=f"device pool peak {peak / 2**30:.2f} GiB; on identical blocks (N=300, p=5000) "
        f"CuPy and NumPy differ by {err:.1e} relative; timed blocks drawn by each side's "
        "own generator",
    )


def low_rank(cupy: Any, n: int, p: int, r: int = 20) -> Row:
    rng = np.random.default_rng(3)
    J = rng.standard_normal((n, p)) * np.exp(-np.arange(p) / (p / 8)) / np.sqrt(p)
    start = time.perf_counter()
    cpu = LowRankLaplace.from_factor(J, 1.0, r, rng=0)
    base = time.perf_counter() - start
    Jd = cupy.asarray(J)
    gpu, ours, peak = _timed_gpu(cupy, lambda: LowRankLaplace.from_factor(Jd, 1.0, r, rng=0))
    err = float(np.max(np.abs(gpu.eigenvalues - cpu.eigenvalues) / cpu.eigenvalues))
    return Row(
        f"low-rank Laplace (Lanczos, top {r} eigenpairs of J_wᵀJ_w) on CuPy vs NumPy "
        f"(N={n}, p={p})",
        ours,
        "the same kernel on NumPy",
        base,
        min_ratio=1.0,
        correct=err < 1e-8,
        note=f"eigenvalues differ by {err:.1e} relative; {gpu.lanczos.num_matvecs} vs "
        f"{cpu.lanczos.num_matvecs} matvecs; device pool peak {peak / 2**30:.2f} GiB",
    )


@benchmark("gpu")
def run(full: bool = False) -> list[Row]:
    """Rows for ``laplace-lab bench --only gpu`` (skipped without a CUDA device)."""
    cupy = _cupy()
    if full:
        return [
            greedy(cupy, 2000, 30_000, 10_000),
            streamed(cupy, 20_000, 1_700_000, 100),
            low_rank(cupy, 2000, 200_000),
        ]
    return [
        greedy(cupy, 500, 4000, 1000),
        streamed(cupy, 2000, 100_000, 100),
        low_rank(cupy, 500, 20_000),
    ]


if __name__ == "__main__":
    raise SystemExit(main_for(run))
