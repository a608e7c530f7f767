"""The full linearized-Laplace predictive variance against laplace-torch's ``FullLaplace``.

The row: fit the full-GGN Laplace of the tanh MLP 10→50→50→1 (p = 3,151) on N = 1,000 rows
(regression, σ0² = 0.25, prior precision α = 1) and return the epistemic variances
J(x*) (Jᵀ J/σ0² + αI)⁻¹ J(x*)ᵀ at 1,000 test points (Immer et al. 2021, eq. (5); the noise
σ0² is not added). Ours: :meth:`LinearizedLaplace.fit
<laplace_lab.numerics.lla.LinearizedLaplace.fit>` then ``predictive(X_test).variance()``
(float64 on the host whatever the network's dtype). laplace-torch 0.3:
``Laplace(subset_of_weights="all", hessian_structure="full")``, ``fit`` on one batch of
all N rows, then ``la(X_test, pred_type="glm")``, whose second output is these variances;
torch's default dtype is set to the network's for the call (its full GGN is its operator
times ``torch.eye`` of the default dtype: with a float32 default its float64 variances agree
with ours to 3e-7 only).
posteriors 0.1.3 has no row: its dense Laplace states offer samples, and its linearized
forward (``linearized_forward_diag``) takes a diagonal covariance only.

References
----------
.. [1] A. Immer, M. Korzepa, M. Bauer, "Improving predictions of Bayesian neural nets via
   local linearization", AISTATS 2021, arXiv:2008.08400, §3, eq. (5).
.. [2] E. Daxberger, A. Kristiadi, A. Immer, R. Eschenhagen, M. Bauer, P. Hennig, "Laplace
   Redux – Effortless Bayesian Deep Learning", NeurIPS 2021, arXiv:2106.14806 (laplace-torch).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from laplace_lab.benchmarks import bench_peers as peers
from laplace_lab.benchmarks._harness import Row

PRIOR_PRECISION = 1.0
#: Test points of the predictive.
N_TEST = 1000


def _test_inputs(X: Any) -> Any:
    import torch

    rng = np.random.default_rng(3)
    return torch.as_tensor(rng.standard_normal((N_TEST, X.shape[1])), dtype=X.dtype)


def _ours(model: Any, X: Any, X_test: Any) -> np.ndarray:
    from laplace_lab.numerics.lla import LinearizedLaplace

    la = LinearizedLaplace.fit(
        model,
        X,
        likelihood="regression",
        prior_precision=PRIOR_PRECISION,
        noise_var=peers.NOISE_VAR,
    )
    return la.predictive(X_test).variance()[:, 0]


def _laplace_torch(model: Any, X: Any, y: Any, X_test: Any) -> Any:
    import torch
    from laplace import Laplace

    data = torch.utils.data.TensorDataset(X, y.reshape(-1, 1))
    la = Laplace(
        model,
        "regression",
        subset_of_weights="all",
        hessian_structure="full",
        sigma_noise=peers.NOISE_VAR**0.5,
        prior_precision=PRIOR_PRECISION,
    )
    previous = torch.get_default_dtype()
    torch.set_default_dtype(X.dtype)  # its GGN is the product with an identity of this dtype
    try:
        la.fit(torch.utils.data.DataLoader(data, batch_size=X.shape[0]))
        _, f_var = la(X_test, pred_type="glm")
    finally:
        torch.set_default_dtype(previous)
    return f_var.reshape(-1)


def rows(kind: str = "small", dtypes: tuple[str, ...] = ("float64", "float32")) -> list[Row]:
    """One row per dtype on the ``kind`` problem of :mod:`.bench_peers` (none without
    laplace-torch)."""
    import torch

    if not peers._have("laplace"):
        return []
    out = []
    for dname in dtypes:
        model, X, y = peers._problem(kind, getattr(torch, dname))
        X_test = _test_inputs(X)
        p = sum(int(t.numel()) for t in model.parameters())
        size = f"{peers.LABEL[kind]} (p = {p:,}), N = {X.shape[0]:,}, {N_TEST:,} test points"
        out.append(
            peers._row(
                f"full-LLA predictive variances, {size}",
                lambda m=model, X=X, Xt=X_test: _ours(m, X, Xt),
                {
                    "laplace-torch 0.3": lambda m=model, X=X, y=y, Xt=X_test: _laplace_torch(
                        m, X, y, Xt
                    )
                },
                dname,
                "fit + predictive each call; posteriors 0.1.3 offers no dense linearized "
                "predictive",
            )
        )
    return out
