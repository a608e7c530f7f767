"""The sub-network Laplace posterior of a Wheel-bandit agent and its Thompson draws.

Raha, Khare & Patra, "Optimality of Sub-network Laplace Approximations", arXiv:2605.09075,
App. D.2: with S selected on the replay inputs X_R,

    Ω_SS = J_SᵀJ_S / σ0² + α I_k,    Var[r̂(x*, a)] = σ0² + g_S(x*, a)ᵀ Ω_SS⁻¹ g_S(x*, a),

and the agent pulls argmax_a r̃_a, r̃_a ~ N(f(x*, a), Var[r̂(x*, a)]). :class:`SubnetPosterior`
keeps S, the Gram J_SᵀJ_S (float64), σ0² of Ω_SS and the Cholesky factor of Ω_SS; rows can be added
to the Gram (a refit every round, with θ fixed within a phase) and the σ0² of the Thompson variance
is the caller's (the readings of App. D in
:class:`~laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_bandit.BanditConfig`).
Selection goes through the registry (:mod:`laplace_lab.numerics.selection_registry`) on a lazy
:class:`~laplace_lab.numerics.network_ggn.NetworkGGN`, which computes only the Jacobian columns a
method needs.

References
----------
.. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
   Results and Methods", arXiv:2605.09075 (2026), App. B and App. D.2.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg
import torch

from laplace_lab._checks import nonnegative_float, positive_float
from laplace_lab.numerics.jacobians import per_sample_jacobian
from laplace_lab.numerics.network_ggn import NetworkGGN
from laplace_lab.numerics.selection_registry import SubnetProblem, select
from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_env import NUM_ARMS

__all__ = [
    "SubnetPosterior",
    "arm_inputs",
    "choose_arms",
    "replay_posterior",
    "select_subnetwork",
    "subset_jacobian",
]


def arm_inputs(x: np.ndarray) -> np.ndarray:
    """Network inputs [x, onehot(a)] for every context and arm: (n·5, 7), arm fastest."""
    x = np.atleast_2d(np.asarray(x, dtype=np.float64))
    if x.ndim != 2 or x.shape[1] != 2:
        raise ValueError(f"x must have shape (n, 2); got {x.shape}")
    n = x.shape[0]
    ctx = np.repeat(x, NUM_ARMS, axis=0)
    onehot = np.tile(np.eye(NUM_ARMS), (n, 1))
    return np.concatenate([ctx, onehot], axis=1)


def subset_jacobian(model: Any, X: Any, S: np.ndarray) -> np.ndarray:
    """J_S = ∇_θ f(X)[:, S] (rows of X), float64 on the host, in the model's precision."""
    J = per_sample_jacobian(model, X, subset=S, method="linear")
    return J.double().cpu().numpy()


@dataclass(frozen=True)
class SubnetPosterior:
    """Ω_SS = G/σ0² + αI_k (G = J_SᵀJ_S) of one agent, factorised.

    Attributes
    ----------
    S : (k,) int64 array
        The sub-network, in selection order.
    gram : (k, k) float64 array
        G = J_SᵀJ_S over the replay rows.
    noise_var : float
        σ0² in Ω_SS.
    prior_precision : float
        α.
    chol : (k, k) float64 array
        Lower Cholesky factor of Ω_SS.
    """

    S: np.ndarray
    gram: np.ndarray
    noise_var: float
    prior_precision: float
    chol: np.ndarray

    @classmethod
    def fit(
        cls, S: np.ndarray, gram: np.ndarray, *, noise_var: float, prior_precision: float
    ) -> SubnetPosterior:
        """Factorise Ω_SS = ``gram``/σ0² + αI."""
        s2 = positive_float(noise_var, "noise_var")
        alpha = positive_float(prior_precision, "prior_precision")
        omega = gram / s2
        omega[np.diag_indices_from(omega)] += alpha
        chol = scipy.linalg.cholesky(omega, lower=True, check_finite=False)
        return cls(np.asarray(S, dtype=np.int64), gram, s2, alpha, chol)

    @classmethod
    def from_rows(
        cls, S: np.ndarray, J_S: np.ndarray, *, noise_var: float, prior_precision: float
    ) -> SubnetPosterior:
        """The posterior of the replay rows' Jacobian columns ``J_S`` (n × k)."""
        return cls.fit(S, J_S.T @ J_S, noise_var=noise_var, prior_precision=prior_precision)

    def refit(self, J_new: np.ndarray | None, *, noise_var: float) -> SubnetPosterior:
        """The posterior after adding the rows ``J_new`` (m × k, may be None) to the Gram
        and re-estimating σ0² (θ and S unchanged)."""
        gram = self.gram if J_new is None else self.gram + J_new.T @ J_new
        return SubnetPosterior.fit(
            self.S, gram, noise_var=noise_var, prior_precision=self.prior_precision
        )

    def epistemic(self, G_S: np.ndarray) -> np.ndarray:
        """g_Sᵀ Ω_SS⁻¹ g_S for every row of ``G_S`` (M × k)."""
        Z = scipy.linalg.solve_triangular(self.chol, G_S.T, lower=True, check_finite=False)
        return np.einsum("ij,ij->j", Z, Z)

    def draw(self, G_S: np.ndarray, *, rng: np.random.Generator) -> np.ndarray:
        """g_Sᵀ δ for every row of ``G_S`` with one joint draw δ ~ N(0, Ω_SS⁻¹)."""
        z = rng.standard_normal(self.S.size)
        delta = scipy.linalg.solve_triangular(
            self.chol, z, lower=True, trans=1, check_finite=False
        )
        return G_S @ delta


def _replay_ggn(model: Any, X: Any, method: str, noise_var: float, prior_precision: float):
    if method == "map":
        raise ValueError("method 'map' has no sub-network")
    return NetworkGGN(
        model, X, noise_var=noise_var, prior_precision=prior_precision, method="linear"
    )


def _select(net: NetworkGGN, method: str, k: int) -> np.ndarray:
    return np.asarray(select(method, SubnetProblem(net), k, shared={"candidates": "2k"}))


def select_subnetwork(
    model: Any, X: Any, method: str, k: int, *, noise_var: float, prior_precision: float = 1.0
) -> np.ndarray:
    """S of ``method`` (a registered selection method) on the replay inputs ``X``.

    Ω = J_wᵀJ_w + αI of the network on ``X`` is a :class:`NetworkGGN`: the selection streams
    the scores and computes only the Jacobian columns it needs (Greedy-Laplace: its
    m = 2k candidates, App. C.3's default).
    """
    return _select(_replay_ggn(model, X, method, noise_var, prior_precision), method, k)


def replay_posterior(
    model: Any,
    X: Any,
    method: str,
    k: int,
    *,
    noise_var: float,
    prior_precision: float = 1.0,
    S: np.ndarray | None = None,
) -> SubnetPosterior:
    """S selected on the replay inputs ``X`` (or the given ``S``) and its Ω_SS on them.

    The same posterior as :func:`select_subnetwork` followed by
    :meth:`SubnetPosterior.from_rows` on ``subset_jacobian(model, X, S)``, up to the
    summation order of the Gram: J_SᵀJ_S is streamed (:meth:`NetworkGGN.subset_gram`, no
    N × k columns) and, for Greedy-Laplace, is the sub-block of its candidates' Gram, which
    the selection has just formed.
    """
    net = _replay_ggn(model, X, method, noise_var, prior_precision)
    S = _select(net, method, k) if S is None else np.asarray(S, dtype=np.int64)
    gram = net.subset_gram(S) * net.noise_var
    return SubnetPosterior.fit(S, gram, noise_var=noise_var, prior_precision=prior_precision)


def choose_arms(
    mean: np.ndarray, var: np.ndarray | None, *, rng: np.random.Generator
) -> np.ndarray:
    """Thompson arms argmax_a r̃_a, r̃_a ~ N(mean_a, var_a); MAP (``var=None``): argmax mean.

    ``mean`` and ``var`` have shape (n, 5); ties go to the lowest arm.
    """
    mean = np.asarray(mean, dtype=np.float64)
    if mean.ndim != 2 or mean.shape[1] != NUM_ARMS:
        raise ValueError(f"mean must have shape (n, {NUM_ARMS}); got {mean.shape}")
    if var is None:
        return np.argmax(mean, axis=1)
    var = np.asarray(var, dtype=np.float64)
    if var.shape != mean.shape or np.any(~(var >= 0)):
        raise ValueError(f"var must be non-negative with shape {mean.shape}")
    return np.argmax(mean + np.sqrt(var) * rng.standard_normal(mean.shape), axis=1)


def residual_noise(f: np.ndarray, y: np.ndarray, *, floor: float) -> float:
    """σ̂0² = max(mean (f − y)², floor): the online estimate of App. D.2 (last residuals)."""
    floor = nonnegative_float(floor, "floor")
    return max(float(np.mean((np.asarray(f, np.float64) - y) ** 2)), floor)


def model_inputs(X: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
    """``X`` as a tensor of the network's dtype."""
    return torch.as_tensor(np.asarray(X), dtype=dtype)
