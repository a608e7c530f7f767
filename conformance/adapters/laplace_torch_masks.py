"""Gradient-Laplace and Greedy-Laplace as laplace-torch sub-network masks.

Drop-in ``laplace.utils.SubnetMask`` subclasses: select once, then fit laplace-torch's own
sub-network Laplace on the indices::

    from laplace import Laplace
    from laplace_lab.conformance.adapters.laplace_torch_masks import GreedyLaplaceSubnetMask

    mask = GreedyLaplaceSubnetMask(model, 100, likelihood="regression", noise_var=0.1)
    indices = mask.select(train_loader)
    la = Laplace(model, "regression", subset_of_weights="subnetwork",
                 hessian_structure="full", subnetwork_indices=indices, sigma_noise=0.1**0.5)
    la.fit(train_loader)

Both read the network through :class:`laplace_lab.numerics.NetworkGGN`: the scores are
streamed (no N × p Jacobian) and Greedy-Laplace computes only the Jacobian columns of its
candidates. Needs laplace-torch 0.3 (extra ``laplace-lab[laplace-torch]``).

References
----------
.. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
   Results and Methods", arXiv:2605.09075 (2026), §3, Algorithms 1 (Gradient-Laplace) and 2
   (Greedy-Laplace).
"""

from __future__ import annotations

from typing import Any

import torch

from laplace_lab._checks import one_of, positive_float, positive_int
from laplace_lab.numerics import NetworkGGN, SubnetProblem, select

try:
    from laplace.utils.subnetmask import ScoreBasedSubnetMask, SubnetMask
except ImportError as err:
    raise ImportError(
        "laplace_lab.conformance.adapters.laplace_torch_masks needs laplace-torch 0.3: "
        "pip install 'laplace-lab[laplace-torch]' and pip install --no-deps laplace-torch==0.3 "
        "backpack-for-pytorch==1.7.1 curvlinops-for-pytorch==3.0.1 asdfghjkl==0.1a4"
    ) from err

__all__ = ["GradientLaplaceSubnetMask", "GreedyLaplaceSubnetMask"]

#: laplace-torch's likelihood names and ours; "classification" is the C-logit softmax.
_LIKELIHOODS = {
    "regression": "regression",
    "binary": "binary",
    "multiclass": "multiclass",
    "classification": "multiclass",
}


def _inputs(train_loader: Any) -> torch.Tensor:
    if train_loader is None:
        raise ValueError("train_loader is required: the mask is computed from the training data")
    return torch.cat([batch[0] for batch in train_loader])


def _network_ggn(model: Any, X: Any, likelihood: str, noise_var: float, prior: Any) -> NetworkGGN:
    return NetworkGGN(
        model.eval(),
        X,
        likelihood=likelihood,
        noise_var=noise_var if likelihood == "regression" else 1.0,
        prior_precision=prior,
    )


class GradientLaplaceSubnetMask(ScoreBasedSubnetMask):
    """The k parameters with the largest mean squared gradient (Gradient-Laplace, Alg. 1).

    Parameters
    ----------
    model : torch.nn.Module
        At its MAP.
    n_params_subnet : int
        k.
    likelihood : {"regression", "binary", "multiclass", "classification"}
        The weights w_n of the scores s_i = (1/N) Σ_n w_n g_i(x_n)²: 1, σ(1 − σ), or the
        softmax Hessian ("classification" is laplace-torch's name for multiclass).
    """

    def __init__(self, model: Any, n_params_subnet: int, *, likelihood: str = "regression"):
        super().__init__(model, n_params_subnet)
        self.likelihood = _LIKELIHOODS[one_of(likelihood, "likelihood", tuple(_LIKELIHOODS))]

    def compute_param_scores(self, train_loader: Any) -> torch.Tensor:
        """Streamed scores over the training inputs (one backward pass per chunk)."""
        ggn = _network_ggn(self.model, _inputs(train_loader), self.likelihood, 1.0, 1.0)
        return torch.as_tensor(ggn.scores(), dtype=self.parameter_vector.dtype)


class GreedyLaplaceSubnetMask(SubnetMask):
    """Greedy-Laplace (Alg. 2): k pivots of a pivoted partial Cholesky of Ω on the top-m
    Gradient-Laplace candidates.

    Parameters
    ----------
    model : torch.nn.Module
        At its MAP.
    n_params_subnet : int
        k.
    likelihood : {"regression", "binary", "multiclass", "classification"}
    noise_var : float
        σ0² (regression), as laplace-torch's ``sigma_noise ** 2``.
    prior_precision : float or (p,) array
        V, as laplace-torch's ``prior_precision``.
    candidates : "2k", "paper" or int
        m: min(2k, p) (the algorithm box), the experiments' min(2k + 1000, p − 1), or m.
    """

    def __init__(
        self,
        model: Any,
        n_params_subnet: int,
        *,
        likelihood: str = "regression",
        noise_var: float = 1.0,
        prior_precision: Any = 1.0,
        candidates: Any = "2k",
    ) -> None:
        super().__init__(model)
        self._n_params_subnet = positive_int(
            n_params_subnet, "n_params_subnet", high=self._n_params
        )
        self.likelihood = _LIKELIHOODS[one_of(likelihood, "likelihood", tuple(_LIKELIHOODS))]
        self.noise_var = positive_float(noise_var, "noise_var")
        self.prior_precision = prior_precision
        self.candidates = candidates

    def get_subnet_mask(self, train_loader: Any) -> torch.Tensor:
        """The boolean mask of the k greedy pivots."""
        X = _inputs(train_loader)
        ggn = _network_ggn(self.model, X, self.likelihood, self.noise_var, self.prior_precision)
        order = select(
            "greedy_laplace",
            SubnetProblem(ggn),
            self._n_params_subnet,
            candidates=self.candidates,
        )
        mask = torch.zeros_like(self.parameter_vector, dtype=torch.bool)
        mask[torch.as_tensor(order)] = True
        return mask
