"""The GGN of a small CNN against curvlinops and posteriors, side by side in one process.

The network is :func:`~laplace_lab.networks.models.digits_cnn` with one output (two 3×3
convolutions with ReLU and 2×2 max-pooling, a linear head; p = 1,313), regression with
σ0² = 0.25 on the first ``N_CNN`` of scikit-learn's 8×8 digits (pixels / 16, the digit
standardised as the target). Rows, each in float64 and float32, timed as every peer row
(:mod:`.bench_peers`: CPU seconds on one thread, best of ``repeat`` calls after a warm-up):

- the full GGN Jᵀ J/σ0²: ours (:meth:`~laplace_lab.numerics.network_ggn.NetworkGGN.dense`,
  torch.func Jacobian chunks) against curvlinops 3.0.1 (``GGNLinearOperator`` applied to
  the identity in blocks of ``BLOCK`` columns: a single ``@ I`` holds every column's
  activations at once, gigabytes here) and posteriors 0.1.3 (``laplace.dense_ggn``), one
  timed call each;
- its diagonal: ours (``NetworkGGN.diagonal``) against posteriors (``laplace.diag_ggn``);
- 10 GGN-vector products: ours (``NetworkGGN.matvec``: torch.func JVP and pullback per
  chunk) against curvlinops (``GGNLinearOperator @ v``).

- KFAC factors and one (F + I)⁻¹ v in both of Eschenhagen et al.'s [3]_ approximations of
  the convolutions' weight sharing, *expand* and *reduce*: ours
  (:func:`~laplace_lab.numerics.kfac.fit_kfac`) against curvlinops
  (``KFACLinearOperator(kfac_approx=...)``) and laplace-torch 0.3 (``KronLaplace`` with
  ``asdl_fisher_kwargs={"kfac_approx": ...}``), as :func:`.bench_peers_kfac.kfac_row` does
  for the MLPs (the forward products compared before the clock).

laplax has no row: its products need a JAX copy of the network,
which :mod:`.bench_peers_laplax` builds for MLPs only.

References
----------
.. [1] F. Dangel, R. Eschenhagen, et al., curvlinops, https://github.com/f-dangel/curvlinops
   (3.0.1).
.. [2] S. Duffield et al., "Scalable Bayesian Learning with posteriors", arXiv:2406.00104
   (posteriors 0.1.3).
.. [3] R. Eschenhagen, A. Immer, R. E. Turner, F. Schneider, P. Hennig, "Kronecker-Factored
   Approximate Curvature for Modern Neural Network Architectures", NeurIPS 2023,
   arXiv:2311.00636.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from laplace_lab.benchmarks import bench_peers as peers
from laplace_lab.benchmarks import bench_peers_kfac
from laplace_lab.benchmarks._harness import Row

#: Digits (training rows) of the CNN rows.
N_CNN = 256
#: Columns of the identity per curvlinops product in the full-GGN row.
BLOCK = 128
#: Channels of the two convolutions.
CHANNELS = (8, 16)


def problem(dtype: Any) -> tuple[Any, Any, Any]:
    """(digits CNN with one output in eval mode, X (N_CNN, 64), standardised y), fixed seeds."""
    import torch
    from sklearn.datasets import load_digits

    from laplace_lab.networks.models import digits_cnn

    torch.manual_seed(0)
    model = digits_cnn(1, channels=CHANNELS).to(dtype).eval()
    digits = load_digits()
    X = torch.as_tensor(digits.data[:N_CNN] / 16.0, dtype=dtype)
    target = digits.target[:N_CNN].astype(np.float64)
    y = torch.as_tensor((target - target.mean()) / target.std(), dtype=dtype)
    return model, X, y


def rows() -> list[Row]:
    """The CNN rows of the module docstring (none when neither peer is installed)."""
    import torch

    cl, post = peers._have("curvlinops"), peers._have("posteriors")
    if not (cl or post or peers._have("laplace")):
        return []
    out = []
    for dtype in (torch.float64, torch.float32):
        dname = str(dtype).removeprefix("torch.")
        model, X, y = problem(dtype)
        p = sum(int(t.numel()) for t in model.parameters())
        label = f"digits CNN (p = {p:,}), N = {N_CNN:,}"
        full: dict[str, Any] = {}
        if cl:
            op, c = peers._curvlinops_operator(model, X, y)
            identity = torch.eye(p, dtype=dtype)
            full["curvlinops 3.0.1"] = lambda op=op, c=c, eye=identity: torch.cat(
                [c * (op @ eye[:, i : i + BLOCK]) for i in range(0, eye.shape[1], BLOCK)], dim=1
            )
        if post:
            full["posteriors 0.1.3"] = lambda m=model, X=X, y=y, p=p: (
                peers._posteriors_state("dense", m, X, y).prec - torch.eye(p, dtype=X.dtype)
            )
        eye = np.eye(p)
        if full:
            out.append(
                peers._row(
                    f"full GGN, {label}",
                    lambda m=model, X=X, eye=eye: peers._ours(m, X).dense() - eye,
                    full,
                    dname,
                    f"ours builds NetworkGGN and its dense Ω each call; curvlinops in blocks of "
                    f"{BLOCK} columns",
                    repeat=1,
                )
            )
        if post:
            out.append(
                peers._row(
                    f"diagonal GGN, {label}",
                    lambda m=model, X=X: peers._ours(m, X).diagonal() - 1.0,
                    {
                        "posteriors 0.1.3": lambda m=model, X=X, y=y: (
                            peers._posteriors_state("diag", m, X, y).prec_diag - 1.0
                        )
                    },
                    dname,
                    "curvlinops 3.0.1 offers no exact GGN diagonal",
                )
            )
        if cl:
            ggn = peers._ours(model, X)
            n = peers.PRODUCTS
            V = np.random.default_rng(1).standard_normal((p, n))
            Vt = torch.as_tensor(V, dtype=dtype)
            out.append(
                peers._row(
                    f"{n} GGN-vector products, {label}",
                    lambda ggn=ggn, V=V: np.column_stack(
                        [ggn.matvec(V[:, j], include_prior=False) for j in range(V.shape[1])]
                    ),
                    {
                        "curvlinops 3.0.1": lambda op=op, c=c, Vt=Vt: torch.stack(
                            [c * (op @ Vt[:, j]) for j in range(Vt.shape[1])], dim=1
                        )
                    },
                    dname,
                    "one vector at a time; both sides torch.func (a JVP and a pullback)",
                )
            )
        for approximation in ("expand", "reduce"):
            row = bench_peers_kfac.kfac_row(
                model, X, y, dname, f"KFAC-{approximation}, {label}", approximation=approximation
            )
            if row is not None:
                out.append(row)
    return out
