"""The subnetwork Laplace pipeline against laplace-torch's ``SubnetLaplace``, time and memory.

The task of Daxberger et al. (2021, §3) and Raha et al. (2026, §2.1 eq. 3) on the 3×200 MLP
(8 inputs, p = 82,401, float32): given a subnetwork S of k weights, the linearised predictive
variance g_S(x*)ᵀ (J_SᵀJ_S/σ0² + αI)⁻¹ g_S(x*) at the test points. Ours: the subset columns of
the per-sample Jacobian (``per_sample_jacobian(subset=S)``, never N × p), ``GGN.regression``
and ``predictive_variance``. laplace-torch 0.3: ``Laplace(subset_of_weights="subnetwork",
hessian_structure="full")``, ``fit`` on a loader of 100 rows, then ``la(X_test,
pred_type="glm")`` on all test points at once, as its documentation shows.

Each side runs in a fresh process (the two processes one after the other), so that its peak
resident memory (``VmHWM``) is its own; both load torch and build the same model and data
before the clock starts. Both must give the same variances (relative 1e-3: float32 Jacobians,
Gram matrices of condition ~1e4 at α = 1).

Targets: ≥ 10× less time and ≥ 10× less peak memory than laplace-torch at N = 2000, k = 2000,
1000 test points, in both modes (at half those sizes the ~0.35 GiB that torch itself
occupies in each process would dominate the peak). The third row is the memory the pipeline
adds above that common floor.

References
----------
.. [1] E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato,
   "Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §3.
.. [2] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
   Results and Methods", arXiv:2605.09075 (2026), §2.1 eq. (3).
"""

from __future__ import annotations

import multiprocessing
import re
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from laplace_lab.benchmarks._harness import BenchmarkSkipped, Row, benchmark, main_for

#: The input width that gives the 3×200 MLP p = 82,401 parameters.
D_IN = 8
NOISE_VAR = 0.25
PRIOR_PRECISION = 1.0


def _problem(n: int, k: int, m: int) -> tuple[Any, Any, Any, Any, np.ndarray]:
    import torch

    from laplace_lab.networks.models import mlp_3x200

    torch.manual_seed(0)
    model = mlp_3x200(D_IN).eval()
    rng = np.random.default_rng(0)
    X = torch.as_tensor(rng.standard_normal((n, D_IN)), dtype=torch.float32)
    y = torch.as_tensor(rng.standard_normal((n, 1)), dtype=torch.float32)
    X_test = torch.as_tensor(rng.standard_normal((m, D_IN)), dtype=torch.float32)
    p = sum(t.numel() for t in model.parameters())
    S = np.sort(rng.choice(p, size=k, replace=False))
    return model, X, y, X_test, S


def _ours(model: Any, X: Any, y: Any, X_test: Any, S: np.ndarray) -> np.ndarray:
    from laplace_lab.numerics import GGN, per_sample_jacobian, predictive_variance

    J = per_sample_jacobian(model, X, subset=S)
    ggn = GGN.regression(J, noise_var=NOISE_VAR, prior_precision=PRIOR_PRECISION)
    return predictive_variance(ggn, per_sample_jacobian(model, X_test, subset=S)).numpy()


def _laplace_torch(model: Any, X: Any, y: Any, X_test: Any, S: np.ndarray) -> np.ndarray:
    import torch
    from laplace import Laplace

    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=100)
    la = Laplace(
        model,
        "regression",
        subset_of_weights="subnetwork",
        hessian_structure="full",
        subnetwork_indices=torch.as_tensor(S, dtype=torch.long),
        sigma_noise=NOISE_VAR**0.5,
        prior_precision=PRIOR_PRECISION,
    )
    la.fit(loader)
    _, f_var = la(X_test, pred_type="glm")
    return f_var.reshape(-1).detach().numpy()


SIDES = {"ours": _ours, "laplace-torch": _laplace_torch}


def _peak_rss() -> int:
    """This process's peak resident memory in bytes (VmHWM of its own memory map; unlike
    ``ru_maxrss`` it does not carry the parent's peak across fork and exec)."""
    status = Path("/proc/self/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) * 1024


def _measure(side: str, n: int, k: int, m: int, threads: int) -> tuple[float, float, float, Any]:
    """In a fresh process: (seconds, peak RSS bytes, peak RSS before the pipeline bytes,
    variances)."""
    import torch

    torch.set_num_threads(threads)
    args = _problem(n, k, m)
    SIDES[side](*_problem(8, 8, 4))  # imports and first-call set-up outside the clock
    before = _peak_rss()
    start = time.perf_counter()
    var = SIDES[side](*args)
    seconds = time.perf_counter() - start
    peak = _peak_rss()
    return seconds, peak, before, np.asarray(var, dtype=np.float64)


def _in_fresh_process(side: str, n: int, k: int, m: int, threads: int) -> tuple:
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
        return pool.submit(_measure, side, n, k, m, threads).result()


def pipeline(n: int, k: int, m: int, *, threads: int = 2) -> list[Row]:
    """Three rows (time, peak memory, peak memory above the set-up) of one pair of runs."""
    if not Path("/proc/self/status").is_file():
        raise BenchmarkSkipped("peak memory is read from /proc/self/status (Linux only)")
    try:
        import laplace  # noqa: F401
    except ImportError as exc:
        raise BenchmarkSkipped(
            "laplace-torch is not installed (make installs it: see the Makefile, LAPLACE_TORCH)"
        ) from exc
    t_ours, mem_ours, base_ours, v_ours = _in_fresh_process("ours", n, k, m, threads)
    t_lt, mem_lt, base_lt, v_lt = _in_fresh_process("laplace-torch", n, k, m, threads)
    err = float(np.max(np.abs(v_ours - v_lt) / np.abs(v_lt)))
    same = err <= 1e-3
    size = f"3x200 MLP, p=82401, N={n}, k={k}, {m} test points, float32, {threads} threads"
    return [
        Row(
            f"subnetwork predictive variances vs laplace-torch SubnetLaplace ({size})",
            t_ours,
            "laplace-torch 0.3 SubnetLaplace fit + glm predictive",
            t_lt,
            min_ratio=10.0,
            correct=same,
            note=f"largest relative difference of the variances {err:.1e}",
        ),
        Row(
            f"peak resident memory of the same runs ({size})",
            mem_ours,
            "laplace-torch 0.3 SubnetLaplace",
            mem_lt,
            min_ratio=10.0,
            correct=same,
            unit="B",
            note="whole process, torch and the data included",
        ),
        Row(
            f"peak memory the pipeline adds above the set-up ({size})",
            mem_ours - base_ours,
            "laplace-torch 0.3 SubnetLaplace",
            mem_lt - base_lt,
            min_ratio=10.0,
            correct=same,
            unit="B",
            note=(
                f"peak before the pipeline (torch, model, data): ours {base_ours / 2**30:.2f} "
                f"GiB; laplace-torch {base_lt / 2**30:.2f} GiB"
            ),
        ),
    ]


@benchmark("subnet-pipeline")
def run(full: bool = False) -> list[Row]:
    """Rows for ``laplace-lab bench --only subnet-pipeline`` (one size in both modes)."""
    return pipeline(2000, 2000, 1000)


if __name__ == "__main__":
    raise SystemExit(main_for(run))
