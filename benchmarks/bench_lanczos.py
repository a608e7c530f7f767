"""Our thick-restart ``eigsh`` against SciPy's ARPACK on matrix-free GGN operators.

The operator is Ω_lik v = J_wᵀ (J_w v), J_w = J/σ0 the Jacobian of a trained network: a
two-hidden-layer tanh MLP fitted by Adam to the ``randhie`` regression data (a package data
set), σ0² its residual mean square, at p ≈ 500, 2,000 and 10,000 parameters (quick) and
50,000 (full; N = 1,000 rows, 2,000 at 50,000). Beside them, synthetic weighted Jacobians
J_w = diag(r) G/√p (G standard normal) with a power-law (r_i² = 1/i) and a flat
(Marchenko–Pastur, r_i = 1) spectrum, the hard case for restarted Lanczos. Both solvers get
the same matvec, start vector and relative tolerance; the operator counts the matvecs.
Accuracy is checked afterwards with true residuals ‖Ω y − θ y‖ / λ_max.

``passed`` compares process CPU time, the best of several repeats when one solve takes
under 0.1 s (wall time on a shared 2-core machine is noise; both are reported). Run as
``python -m benchmarks.bench_lanczos [--full]``.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse.linalg as spla

from laplace_lab.benchmarks._harness import Row, benchmark, main_for
from laplace_lab.numerics.thick_restart import eigsh

__all__ = ["run"]


class _CountingGGN:
    """v ↦ J_wᵀ (J_w v), counting products."""

    def __init__(self, Jw: np.ndarray) -> None:
        self.Jw = Jw
        self.count = 0

    def __call__(self, v: np.ndarray) -> np.ndarray:
        self.count += 1
        v = np.asarray(v).reshape(-1)
        return self.Jw.T @ (self.Jw @ v)


def _synthetic_jacobian(
    N: int, p: int, rng: np.random.Generator, decay: float = 1.0
) -> np.ndarray:
    r = np.arange(1, N + 1) ** (-decay / 2)
    Jw = rng.standard_normal((N, p))
    Jw *= (r / np.sqrt(p))[:, None]
    return Jw


def _true_residuals(op: _CountingGGN, values: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    Av = op.Jw.T @ (op.Jw @ vectors)
    return np.linalg.norm(Av - vectors * values, axis=0)


def _best_cpu(solve) -> tuple[object, float, float]:
    """(result, best CPU s, its wall s) of ``solve()``: repeated (up to 7 runs, about 0.5 s)
    while one run takes under 0.1 s, so that a millisecond solve is not read off one noisy
    clock reading."""
    best = (None, np.inf, np.inf)
    spent, runs = 0.0, 0
    while runs == 0 or (best[1] < 0.1 and runs < 7 and spent < 0.5):
        t0, c0 = time.perf_counter(), time.process_time()
        out = solve()
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        spent, runs = spent + cpu, runs + 1
        if cpu < best[1]:
            best = (out, cpu, wall)
    return best


def _compare(label: str, Jw: np.ndarray, seed: int, k: int, tol: float) -> list[Row]:
    N, p = Jw.shape
    # The same start vector for both: ours draws it from ``rng=seed`` (and reuses its
    # product for the symmetry probe); ARPACK gets that draw as v0.
    v0 = np.random.default_rng(seed).standard_normal(p)
    arpack_op = _CountingGGN(Jw)
    lin = spla.LinearOperator((p, p), matvec=arpack_op, dtype=np.float64)

    def arpack():
        arpack_op.count = 0
        return spla.eigsh(lin, k=k, which="LA", tol=tol, v0=v0)

    (a_vals, a_vecs), arpack_cpu, arpack_s = _best_cpu(arpack)
    a_vals, a_vecs = a_vals[::-1], a_vecs[:, ::-1]
    arpack_res = float(np.max(_true_residuals(arpack_op, a_vals, a_vecs))) / float(a_vals[0])

    rows = []
    # ARPACK's test is per value (‖r_i‖ ≤ tol·|θ_i|), ours relative to θ_max: the second
    # row tightens ours to 1e-10 so that it is at least as strict for every returned pair.
    for our_tol in (tol, 1e-10):
        ours_op = _CountingGGN(Jw)

        def solve(our_tol=our_tol, ours_op=ours_op):
            ours_op.count = 0
            return eigsh(ours_op, p, k, which="LA", tol=our_tol, rng=seed)

        ours, ours_cpu, ours_s = _best_cpu(solve)
        lam_max = float(max(ours.values[0], a_vals[0]))
        ours_res = float(np.max(_true_residuals(ours_op, ours.values, ours.vectors))) / lam_max
        value_gap = float(np.max(np.abs(ours.values - a_vals))) / lam_max
        note = (
            f"{label}; N={N}, p={p}, k={k}; tol ours={our_tol:g} (relative to theta_max), "
            f"ARPACK={tol:g} (relative to each theta_i); matvecs ours={ours_op.count} "
            f"ARPACK={arpack_op.count}; restarts={ours.num_restarts}; max true residual / "
            f"lambda_max ours={ours_res:.1e} ARPACK={arpack_res:.1e}; "
            f"max |values - ARPACK| / lambda_max={value_gap:.1e}; CPU s ours={ours_cpu:.4f} "
            f"ARPACK={arpack_cpu:.4f} (ratio {ours_cpu / arpack_cpu:.2f})"
        )
        correct = (
            ours.converged
            and ours_res <= 1e-8
            and value_gap <= 1e-8
            and ours_op.count <= arpack_op.count
        )
        rows.append(
            Row(
                f"eigsh top-{k} GGN {label} (N={N}, p={p}, tol={our_tol:g}), CPU time",
                ours_cpu,
                "scipy.sparse.linalg.eigsh (ARPACK)",
                arpack_cpu,
                min_ratio=1.0,
                correct=bool(correct),
                note=note + f"; wall s ours={ours_s:.2f} ARPACK={arpack_s:.2f}",
            )
        )
    return rows


def _network_jacobian(p_target: int, N: int, rng: np.random.Generator) -> tuple[np.ndarray, str]:
    """J/σ0 (N × p) of a two-hidden-layer tanh MLP with about ``p_target`` parameters,
    trained by 300 full-batch Adam steps on ``randhie`` (σ0² its residual mean square)."""
    import torch

    from laplace_lab.networks import data, models
    from laplace_lab.numerics import per_sample_jacobian

    ds = data.load("randhie", n_train=N, n_test=10, rng=rng)
    d = ds.X_train.shape[1]
    h = round((-(d + 3) + float(np.sqrt((d + 3) ** 2 + 4 * (p_target - 1)))) / 2)
    torch.manual_seed(int(rng.integers(2**31)))
    net = models.mlp(d, [h, h], 1, activation="tanh").double()
    X, y = torch.as_tensor(ds.X_train).double(), torch.as_tensor(ds.y_train).double()
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    for _ in range(300):
        opt.zero_grad()
        loss = ((net(X)[:, 0] - y) ** 2).mean()
        loss.backward()
        opt.step()
    net.eval()
    with torch.no_grad():
        s2 = float(((net(X)[:, 0] - y) ** 2).mean())
    J = per_sample_jacobian(net, X).numpy().reshape(N, -1)
    label = f"trained tanh MLP {d}-{h}-{h}-1 on randhie (sigma0^2={s2:.2f})"
    return J / np.sqrt(s2), label


@benchmark("lanczos")
def run(full: bool = False) -> list[Row]:
    """Our ``eigsh`` vs ARPACK on the same operators; two rows per (operator, tolerance).

    Trained-network GGNs at p ≈ 500, 2,000, 10,000 (N = 1,000) and, in full mode, 50,000
    (N = 2,000); synthetic power-law (N = 400, p = 10,000 quick; N = 2,000, p = 50,000
    full) and flat (N = 400, p = 10,000) spectra. Top 20 in every row.
    """
    rng = np.random.default_rng(20260501)
    k, rows = 20, []
    sizes = [(500, 1000), (2000, 1000), (10_000, 1000)] + ([(50_000, 2000)] if full else [])
    for p_target, n_rows in sizes:
        Jw, label = _network_jacobian(p_target, n_rows, rng)
        rows += _compare(label, Jw, int(rng.integers(2**31)), k, 1e-8)
        del Jw
    N, p = (2000, 50_000) if full else (400, 10_000)
    for label, n_, p_, decay in (("power-law", N, p, 1.0), ("flat", 400, 10_000, 0.0)):
        Jw = _synthetic_jacobian(n_, p_, rng, decay)
        rows += _compare(label, Jw, int(rng.integers(2**31)), k, 1e-8)
        del Jw
    return rows


if __name__ == "__main__":
    raise SystemExit(main_for(run))
