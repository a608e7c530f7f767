"""The App. B.1 set-ups of Cinquin et al. (FSP-Laplace, arXiv:2407.13711), trained to the FSP MAP.

1-D regression on y = sin(2πx) + ε (σ_n = 0.1, x ~ U([−1, −0.5] ∪ [0.5, 1])) with a 2×50 tanh
MLP, and two moons (noise 0.1) with a 2×100 tanh MLP; 100 context points on a regular grid;
RBF and Matérn-1/2 priors. Networks are trained to the FSP MAP (eq. 3.5 with the estimate of
eq. 3.7 at fixed context points) by full-batch Adam; Algorithm 2 runs with at most
:data:`ALG2_MAX_STEPS` Lanczos steps. Deviations: kernel hyperparameters are fixed (not fitted by
marginal likelihood), the Gram matrices get a jitter of :data:`GRAM_JITTER`, and quick mode trains
for fewer steps (and, for two moons, a 2×50 MLP). The same trained networks serve every FSP
claim.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from laplace_lab.numerics.fsp import dropped_terms, fsp_laplace
from laplace_lab.numerics.kernels import RBF, KernelGram, Matern12
from laplace_lab.paper_checks.fsp_laplace._tanh_mlp import TanhMLP, train_fsp_map
from laplace_lab.paper_checks.verification import Context, cached

__all__ = [
    "ALG2_MAX_STEPS",
    "GRAM_JITTER",
    "TABLE_C2",
    "Setup",
    "make_task",
    "table_c2_runs",
    "trained_setups",
]

#: Table C.2 of the paper: ‖P₀ΛP₀ᵀ‖_F / ‖Λ‖_F.
TABLE_C2 = {
    ("RBF", "regression"): 1.026e-7,
    ("RBF", "classification"): 3.548e-4,
    ("Matern-1/2", "regression"): 4.305e-6,
    ("Matern-1/2", "classification"): 1.299e-2,
}


#: Algorithm 2's cap on the Lanczos iterations (App. B.1: "a maximum of 500").
ALG2_MAX_STEPS = 500
#: Added to the diagonal of Σ(C, C) (kernel variance 1): keeps it numerically definite.
GRAM_JITTER = 1e-6


def make_task(name: str, full: bool, rng: np.random.Generator):
    """(model, X, y, context points C, likelihood) of one App. B.1 task."""
    if name == "regression":
        n = 60
        x = rng.uniform(0.5, 1.0, n) * rng.choice([-1.0, 1.0], n)
        X = x[:, None]
        y = np.sin(2 * np.pi * x) + 0.1 * rng.standard_normal(n)
        C = np.linspace(-2, 2, 100)[:, None]
        return TanhMLP(1, 50), X, y, C, "gaussian"
    from sklearn.datasets import make_moons

    X, y = make_moons(100, noise=0.1, random_state=int(rng.integers(2**31)))
    g = np.linspace(-3.75, 3.75, 10)
    C = np.stack(np.meshgrid(g, g), axis=-1).reshape(-1, 2)
    return TanhMLP(2, 100 if full else 50), X, y.astype(float), C, "bernoulli"


class Setup(NamedTuple):
    """One trained (kernel, task) configuration of App. B.1 at the FSP MAP."""

    model: TanhMLP
    theta: np.ndarray
    C: np.ndarray
    gram: KernelGram
    J_C: np.ndarray
    Jw: np.ndarray
    steps: int


@cached(maxsize=2)
def trained_setups(full: bool, seed: int) -> dict:
    """Train the four (kernel, task) networks to the FSP MAP (shared by the FSP claims).

    BLAS runs single-threaded here (scoped): the matrices are small, and on a shared
    machine OpenBLAS's thread pool makes this several times slower (docs/performance.md,
    "Single-threaded BLAS for the FSP-Laplace set-ups").
    """
    from threadpoolctl import threadpool_limits

    out = {}
    with threadpool_limits(limits=1, user_api="blas"):
        for kname, task in TABLE_C2:
            rng = Context(full=full, seed=seed).rng(f"table-c2/{kname}/{task}")
            model, X, y, C, lik = make_task(task, full, rng)
            lengthscale = 0.25 if task == "regression" else 1.0
            kernel = RBF(1.0, lengthscale) if kname == "RBF" else Matern12(1.0, lengthscale)
            gram = KernelGram(kernel, C, jitter=GRAM_JITTER)
            steps = 3000 if full else 400
            theta = train_fsp_map(
                model, X, y, C, gram.dense(), likelihood=lik, steps=steps, rng=rng
            )
            f = model.forward(theta, X)
            if lik == "gaussian":
                Jw = model.jacobian(theta, X) / 0.1
            else:
                prob = 1.0 / (1.0 + np.exp(-f))
                Jw = np.sqrt(prob * (1 - prob))[:, None] * model.jacobian(theta, X)
            J_C = model.jacobian(theta, C)
            out[(kname, task)] = Setup(model, theta, C, gram, J_C, Jw, steps)
    return out


@cached(maxsize=2)
def table_c2_runs(full: bool, seed: int) -> dict:
    """Run Algorithm 2 on the four trained networks and measure the dropped terms."""
    from threadpoolctl import threadpool_limits

    out = {}
    for key, s in trained_setups(full, seed).items():
        with threadpool_limits(limits=1, user_api="blas"):  # small matrices: see above
            res = fsp_laplace(s.J_C, s.gram, s.Jw, num_steps=ALG2_MAX_STEPS)
            terms = dropped_terms(res, s.Jw)
        out[key] = {
            "paper": TABLE_C2[key],
            "p0_ratio": terms.p0_ratio,
            "cross_ratio": terms.cross_ratio,
            "total_ratio": terms.total_ratio,
            "rank": int(res.basis.shape[1]),
            "truncated": res.num_truncated,
            "p": s.model.num_params,
            "steps": s.steps,
        }
    return out
