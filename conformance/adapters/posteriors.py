"""posteriors 0.1.3's GGN and empirical-Fisher Laplace approximations behind the
conformance contract::

    laplace-lab validate --target posteriors

Needs ``posteriors==0.1.3`` (extra ``laplace-lab[posteriors]``; it brings torchopt, optree
and tensordict and leaves torch as installed). posteriors builds a Gaussian over the
parameters — ``laplace.dense_ggn`` (mean θ̂, a dense precision) and ``laplace.diag_ggn``
(a diagonal one) — from a ``forward(params, batch)`` and an ``outer_log_likelihood(z,
batch)`` written by the user, and ``laplace.dense_fisher`` / ``diag_fisher`` from a log
density ``log_posterior(params, batch)``; it has no predictive of its own beyond
``linearized_forward_diag``. How the contract maps onto it:

- parameters: posteriors ravels a parameter tree with optree, which sorts a dictionary's
  keys (``"0.bias"`` before ``"0.weight"``), so a precision computed on
  ``dict(model.named_parameters())`` is not in ``parameters()`` order, the order of the
  contract's prior, subset and samples. The adapter hands posteriors the flat vector
  θ_S = θ̂[S] (S all parameters, a subset, or the last layer), a one-leaf tree that ravels
  to itself, and a ``forward`` that writes θ_S into θ̂ and calls
  ``torch.func.functional_call``. The GGN of that forward is the GGN's S × S block, and
  fixing the other parameters at θ̂ is the contract's subnetwork Laplace;
- likelihood: ``outer_log_likelihood`` is the exact log-likelihood summed over the batch,
  ``Normal(f, √σ0²)``, ``Bernoulli(logits=f)`` or ``Categorical(logits=f)`` from
  ``torch.distributions`` (C outputs with per-output noise: ``Normal(f, √σ²)`` with the
  vector σ², summed over the outputs); posteriors takes the Hessian of its negative with respect to
  the outputs (1/σ0², σ(f)(1 − σ(f)), diag(π) − ππᵀ), so Ω's GGN part is the contract's
  with no rescaling. A mean over the batch (``reduction="mean"``) would divide it by N;
- prior: posteriors adds no prior; the user passes it as the initial precision,
  ``init_prec`` (α, or diag(V_S) for a vector prior) and ``init_prec_diag`` (α or V_S),
  and ``update`` adds the GGN of the batch. With the default 0 the precision is the bare,
  singular GGN (N′ < p in the cases);
- dtype: posteriors forms α·I and the sampler's zero mean in torch's *default* dtype
  (``torch.eye``, ``torch.zeros``); a float64 state sampled under the default float32
  raises (``expected scalar type Float but found Double``). The adapter sets the default
  dtype to the model's around posteriors' calls and restores it after;
- ``predictive_variance``: gᵀΩ⁻¹g with Ω = ``dense_ggn`` state's ``prec`` (k × k) and g the
  test Jacobian of the same forward (``torch.func.jacrev``), by Cholesky in the model's
  dtype;
- ``diagonal_predictive_variance``: ``diag_ggn``'s ``prec_diag`` through posteriors'
  ``linearized_forward_diag`` with the standard deviations prec_diag^(-1/2): its output
  scale L (C × C per test point, L Lᵀ = J diag(prec_diag)⁻¹ Jᵀ) gives the variances
  diag(L Lᵀ). On a subset S the flat θ_S as above: ``diag_ggn`` of that forward is
  diag(Ω_SS), the prior V_S its initial precision, and the pushforward's Jacobian is g_S,
  both in S's order;
- ``posterior_samples``: ``dense_ggn.sample(state, (n_samples,))`` under
  ``torch.random.fork_rng`` seeded with ``seed`` (it draws from torch's global generator),
  written into θ̂ on S. Its final reshape keeps only a leaf's last axis, so it only works
  for trees of 1-D tensors (a matrix-shaped weight raises): the flat θ_S is one;
- ``last_layer_predictive_variance``: the full and diagonal variances on S = the last
  ``torch.nn.Linear``'s [W, b]; posteriors has no Kronecker-factored curvature, so
  ``structure="kron"`` is refused (:data:`NOT_OFFERED`).

- ``ef_predictive_variance``: the empirical-Fisher Laplace, ``laplace.dense_fisher``
  (``"full"``, gᵀP⁻¹g with P its ``prec``, by Cholesky as above) and
  ``laplace.diag_fisher`` (``"diag"``, its ``prec_diag`` through
  ``linearized_forward_diag`` as above). posteriors takes the Jacobian of a vector of
  per-sample log densities ℓ_n(θ) (``per_sample=True``; with ``per_sample=False`` it
  ``torch.vmap``s the given function over batches of one row) and adds
  Σ_n ∇ℓ_n ∇ℓ_nᵀ (``empirical_fisher(..., normalize=False)``: a sum, not a mean) to the
  initial precision. The sign of ℓ_n drops out of the outer product, so ℓ_n = log p(y_n |
  f(x_n; θ_S)), the exact per-sample log-likelihood above, gives the contract's
  EF = Σ_n g_n g_nᵀ, and the prior enters only as ``init_prec`` / ``init_prec_diag``
  (α or V_S, as for the GGN): P = EF + V. Two readings of posteriors' API give another P.
  Its docstrings ask for the "log posterior" and define F with the joint
  log p(y_n, θ | x_n), and its README writes the log posterior as the batch-mean
  log-likelihood plus log p(θ)/N. Per sample that is ℓ_n = log p(y_n | θ) + c·log p(θ),
  whose gradient is −(g_n + c·Vθ̂): with c = 1/N (the README) and θ̂ the MAP
  (Σ_n g_n = −Vθ̂) the matrix becomes Σ_n (g_n − ḡ)(g_n − ḡ)ᵀ = EF − (Vθ̂)(Vθ̂)ᵀ/N, the
  gradients' scatter about their mean; with c = 1 (the joint, per sample)
  EF + (N − 2)(Vθ̂)(Vθ̂)ᵀ. On the linear-Gaussian and the three MLP problems of the cases
  (seed 0) the largest change of a full variance is 1.8–25% per problem with c = 1/N and
  10–71% with c = 1, 8e7–2e12 tolerances. The log prior's Hessian V never enters the EF:
  with the default initial precision 0 the precision is the bare EF, of rank ≤ N. Unlike
  the GGN's, a batch-mean log-likelihood is harmless with ``per_sample=False`` (each
  vmapped call sees a batch of one, where mean and sum agree).

- ``hessian_predictive_variance``: ``laplace.dense_hessian`` with ``log_posterior`` the
  summed log-likelihood Σ_n log p(y_n | f(x_n; θ_S)) of the forward above and
  ``init_prec`` = α (or diag(V)): its update adds the Hessian of the negative of that
  function (``jacfwd(jacrev(...))``) to the initial precision, Ω_H = H + V, and gᵀΩ_H⁻¹g by
  Cholesky as above. With the log posterior its docstring names (log-likelihood plus
  log prior) the prior's Hessian V would enter through the function instead.

``laplace.dense_hessian`` is the Hessian of the log posterior, not the contract's Ω (the
GGN) on an MLP. posteriors has no marginal likelihood, low-rank posterior, subnetwork masks or
class-probability links.

References
----------
.. [1] S. Duffield, K. Donatella, J. Chiu, P. Klett, D. Simpson, "Scalable Bayesian
   Learning with posteriors", arXiv:2406.00104; https://github.com/normal-computing/posteriors
   (version 0.1.3).
.. [2] E. Daxberger, A. Kristiadi, A. Immer, R. Eschenhagen, M. Bauer, P. Hennig, "Laplace
   Redux — Effortless Bayesian Deep Learning", NeurIPS 2021, arXiv:2106.14806, §2.
.. [3] F. Kunstner, L. Balles, P. Hennig, "Limitations of the Empirical Fisher Approximation
   for Natural Gradient Descent", NeurIPS 2019, arXiv:1905.12558.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from laplace_lab._checks import integer, one_of, positive_int
from laplace_lab.conformance.adapters._parameters import (
    flat_parameters,
    last_layer_indices,
    prior_vector,
    subset_indices,
)
from laplace_lab.conformance.contract import EF_STRUCTURES, NotOffered

__all__ = ["predictive_variance"]

#: The posteriors release this adapter is written against.
VERSION = "0.1.3"
#: What posteriors 0.1.3 does not offer: the adapter refuses these requests with
#: :class:`~laplace_lab.conformance.contract.NotOffered` before calling posteriors, and the
#: scoreboard reports them N/A (module docstring).
#: The likelihoods with an (M, C) answer.
MULTI_OUTPUT = ("multiclass", "multioutput-regression")
NOT_OFFERED = {
    "kron": (
        f"not offered by posteriors {VERSION}: no Kronecker-factored (KFAC) curvature "
        "(upstream work open: normal-computing/posteriors#55, 'Add KFAC')"
    ),
}


def _posteriors() -> Any:
    try:
        with warnings.catch_warnings():
            # tensordict announces a change of its dataclass defaults for each state class
            warnings.simplefilter("ignore", FutureWarning)
            import posteriors
    except ImportError as err:
        raise ImportError("this target needs posteriors: pip install posteriors==0.1.3") from err
    return posteriors


@contextlib.contextmanager
def _default_dtype(dtype: Any) -> Iterator[None]:
    """torch's default dtype set to ``dtype`` inside the block (module docstring)."""
    import torch

    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(before)


def _forward(model: Any, S: np.ndarray) -> tuple[Callable[..., Any], Any]:
    """(forward(θ_S, batch) → (f(batch[0]), no aux), θ̂_S): θ_S written into θ̂ on S."""
    import torch

    theta_hat = flat_parameters(model)
    index = torch.as_tensor(S, dtype=torch.long)
    named = [(name, t.shape, int(t.numel())) for name, t in model.named_parameters()]
    sizes = [n for _, _, n in named]

    def forward(theta_S: Any, batch: Any) -> tuple[Any, Any]:
        theta = theta_hat.index_put((index,), theta_S)
        tensors = {
            name: piece.view(shape)
            for (name, shape, _), piece in zip(named, theta.split(sizes), strict=True)
        }
        return torch.func.functional_call(model, tensors, (batch[0],)), torch.tensor([])

    return forward, theta_hat[index].clone()


def _log_likelihoods(likelihood: str, noise_var: float) -> Callable[[Any, Any], Any]:
    """(log p(y_n | f_n))_n, one per row of the batch."""
    from torch.distributions import Bernoulli, Categorical, Normal

    one_of(likelihood, "likelihood", ("regression", "binary", "multiclass", *MULTI_OUTPUT[1:]))
    if likelihood == "regression":
        scale = float(np.sqrt(noise_var))
        return lambda z, batch: Normal(z[:, 0], scale).log_prob(batch[1])
    if likelihood == "multioutput-regression":  # Σ_c log N(y_c | z_c, σ_c²) per row
        s = np.sqrt(np.asarray(noise_var, dtype=np.float64))
        return lambda z, batch: Normal(z, z.new_tensor(s)).log_prob(batch[1]).sum(-1)
    if likelihood == "binary":
        return lambda z, batch: Bernoulli(logits=z[:, 0]).log_prob(batch[1])
    return lambda z, batch: Categorical(logits=z).log_prob(batch[1].long())


def _log_likelihood(likelihood: str, noise_var: float) -> Callable[[Any, Any], Any]:
    """log p(y | f) summed over the batch (the ``outer_log_likelihood`` of posteriors)."""
    per_sample = _log_likelihoods(likelihood, noise_var)
    return lambda z, batch: per_sample(z, batch).sum()


def _per_sample_log_likelihood(
    forward: Callable[..., Any], likelihood: str, noise_var: float
) -> Callable[[Any, Any], Any]:
    """(θ_S, batch) → ((log p(y_n | f(x_n; θ_S)))_n, no aux): the ``log_posterior`` handed
    to ``dense_fisher``/``diag_fisher`` with ``per_sample=True`` — no prior term (module
    docstring)."""
    per_sample = _log_likelihoods(likelihood, noise_var)

    def log_likelihood(theta_S: Any, batch: Any) -> tuple[Any, Any]:
        z, aux = forward(theta_S, batch)
        return per_sample(z, batch), aux

    return log_likelihood


#: posteriors' Laplace transforms by (curvature, structure).
_METHODS = {
    ("ggn", "dense"): "dense_ggn",
    ("ggn", "diag"): "diag_ggn",
    ("fisher", "dense"): "dense_fisher",
    ("fisher", "diag"): "diag_fisher",
}


def _laplace(
    structure: str,
    model: Any,
    X: Any,
    y: Any,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: float,
    S: np.ndarray,
    curvature: str = "ggn",
) -> tuple[Any, Callable[..., Any]]:
    """(posteriors state, forward) of ``laplace.dense_ggn``, ``diag_ggn``, ``dense_fisher``
    or ``diag_fisher`` on θ_S, the prior V_S its initial precision."""
    import torch

    method = getattr(_posteriors().laplace, _METHODS[curvature, structure])
    forward, theta_S = _forward(model, S)
    V = prior_vector(model, prior_precision)[S]
    if np.ptp(V) == 0.0:
        prior = float(V[0])
    else:
        prior = torch.diag(torch.as_tensor(V)) if structure == "dense" else torch.as_tensor(V)
    init = {"init_prec": prior} if structure == "dense" else {"init_prec_diag": prior}
    with _default_dtype(theta_S.dtype):
        if curvature == "ggn":
            transform = method.build(forward, _log_likelihood(likelihood, noise_var), **init)
        else:
            log_likelihood = _per_sample_log_likelihood(forward, likelihood, noise_var)
            transform = method.build(log_likelihood, per_sample=True, **init)
        state = transform.init(theta_S)
        state, _ = transform.update(state, (X, y))
    return state, forward


def _shape(v: Any, M: int, likelihood: str) -> np.ndarray:
    v = v.detach().cpu().double().numpy()
    return v.reshape(M, -1) if likelihood in MULTI_OUTPUT else v.reshape(M)


def _full_variance(
    model: Any, X_train: Any, y_train: Any, X_test: Any, S: np.ndarray, **kw: Any
) -> np.ndarray:
    import torch

    state, forward = _laplace("dense", model, X_train, y_train, S=S, **kw)
    J = torch.func.jacrev(lambda t: forward(t, (X_test,))[0])(state.params)  # (M, C, k)
    G = J.reshape(-1, J.shape[-1])
    omega = state.prec.to(G.dtype)
    L = torch.linalg.cholesky(0.5 * (omega + omega.T))
    W = torch.linalg.solve_triangular(L, G.T, upper=False)  # L⁻¹gᵀ
    return _shape((W * W).sum(0), X_test.shape[0], kw["likelihood"])


def _diagonal_variance(
    model: Any, X_train: Any, y_train: Any, X_test: Any, S: np.ndarray, **kw: Any
) -> np.ndarray:
    state, forward = _laplace("diag", model, X_train, y_train, S=S, **kw)
    sd = state.prec_diag.rsqrt()
    _, scale, _ = _posteriors().linearized_forward_diag(forward, state.params, (X_test,), sd)
    return _shape((scale * scale).sum(-1), X_test.shape[0], kw["likelihood"])


def predictive_variance(
    model: Any,
    X_train: Any,
    y_train: Any,
    X_test: Any,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: float,
    subset: Any = None,
    prior_mean: Any = None,
) -> np.ndarray:
    """gᵀΩ⁻¹g (g_Sᵀ Ω_SS⁻¹ g_S on a subset) with Ω the ``laplace.dense_ggn`` precision
    (module docstring). A prior mean (``prior_mean``) is not needed: Ω does not depend on it
    given θ̂."""
    return _full_variance(
        model,
        X_train,
        y_train,
        X_test,
        subset_indices(model, subset),
        likelihood=likelihood,
        prior_precision=prior_precision,
        noise_var=noise_var,
    )


def diagonal_predictive_variance(
    model: Any,
    X_train: Any,
    y_train: Any,
    X_test: Any,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: float,
    subset: Any = None,
) -> np.ndarray:
    """gᵀ diag(Ω)⁻¹ g (g_Sᵀ diag(Ω_SS)⁻¹ g_S on a subset) from ``laplace.diag_ggn`` through
    ``linearized_forward_diag``."""
    return _diagonal_variance(
        model,
        X_train,
        y_train,
        X_test,
        subset_indices(model, subset),
        likelihood=likelihood,
        prior_precision=prior_precision,
        noise_var=noise_var,
    )


def posterior_samples(
    model: Any,
    X_train: Any,
    y_train: Any,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: float,
    subset: Any = None,
    n_samples: int,
    seed: int,
) -> np.ndarray:
    """θ ~ N(θ̂, Ω⁻¹) (θ_S ~ N(θ̂_S, Ω_SS⁻¹), θ̂ elsewhere) by ``laplace.dense_ggn.sample``."""
    import torch

    n_samples = positive_int(n_samples, "n_samples")
    seed = integer(seed, "seed", low=0)
    S = subset_indices(model, subset)
    state, _ = _laplace(
        "dense",
        model,
        X_train,
        y_train,
        likelihood=likelihood,
        prior_precision=prior_precision,
        noise_var=noise_var,
        S=S,
    )
    theta_hat = flat_parameters(model)
    with torch.random.fork_rng(devices=[]), _default_dtype(theta_hat.dtype):
        torch.manual_seed(seed)
        draws = _posteriors().laplace.dense_ggn.sample(state, torch.Size([n_samples]))
    theta = theta_hat.repeat(n_samples, 1)
    theta[:, torch.as_tensor(S, dtype=torch.long)] = draws.to(theta.dtype)
    return theta.cpu().double().numpy()


def last_layer_predictive_variance(
    model: Any,
    X_train: Any,
    y_train: Any,
    X_test: Any,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: float,
    structure: str,
) -> np.ndarray:
    """The full or diagonal GGN Laplace over the last Linear layer's [W, b]; ``"kron"``
    is refused (posteriors has no Kronecker-factored curvature)."""
    one_of(structure, "structure", ("full", "diag", "kron"))
    if structure == "kron":
        raise NotOffered(f"{NOT_OFFERED['kron']}; got structure='kron'")
    variance = _full_variance if structure == "full" else _diagonal_variance
    return variance(
        model,
        X_train,
        y_train,
        X_test,
        last_layer_indices(model),
        likelihood=likelihood,
        prior_precision=prior_precision,
        noise_var=noise_var,
    )


def ef_predictive_variance(
    model: Any,
    X_train: Any,
    y_train: Any,
    X_test: Any,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: float,
    structure: str,
) -> np.ndarray:
    """gᵀP⁻¹g (``"full"``, P = ``laplace.dense_fisher``'s ``prec``) or gᵀ diag(P)⁻¹ g
    (``"diag"``, ``laplace.diag_fisher``'s ``prec_diag`` through
    ``linearized_forward_diag``): P = Σ_n g_n g_nᵀ + V from the per-sample log-likelihoods,
    the prior only in the initial precision (module docstring)."""
    one_of(structure, "structure", EF_STRUCTURES)
    variance = _full_variance if structure == "full" else _diagonal_variance
    return variance(
        model,
        X_train,
        y_train,
        X_test,
        subset_indices(model, None),
        likelihood=likelihood,
        prior_precision=prior_precision,
        noise_var=noise_var,
        curvature="fisher",
    )


predictive_variance.diagonal_predictive_variance = diagonal_predictive_variance
predictive_variance.posterior_samples = posterior_samples
predictive_variance.last_layer_predictive_variance = last_layer_predictive_variance
predictive_variance.ef_predictive_variance = ef_predictive_variance


def hessian_predictive_variance(
    model: Any,
    X_train: Any,
    y_train: Any,
    X_test: Any,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: Any,
) -> np.ndarray:
    """gᵀΩ_H⁻¹g with Ω_H the ``prec`` of ``laplace.dense_hessian`` built on the summed
    log-likelihood, the prior its initial precision (module docstring)."""
    import torch

    S = subset_indices(model, None)
    forward, theta = _forward(model, S)
    outer = _log_likelihood(likelihood, noise_var)

    def log_likelihood(theta_S: Any, batch: Any) -> tuple[Any, Any]:
        z, aux = forward(theta_S, batch)
        return outer(z, batch), aux

    V = prior_vector(model, prior_precision)
    prior = float(V[0]) if np.ptp(V) == 0.0 else torch.diag(torch.as_tensor(V))
    with _default_dtype(theta.dtype):
        transform = _posteriors().laplace.dense_hessian.build(log_likelihood, init_prec=prior)
        state, _ = transform.update(transform.init(theta), (X_train, y_train))
    J = torch.func.jacrev(lambda t: forward(t, (X_test,))[0])(state.params)  # (M, C, p)
    G = J.reshape(-1, J.shape[-1])
    omega = state.prec.to(G.dtype)
    L = torch.linalg.cholesky(0.5 * (omega + omega.T))
    W = torch.linalg.solve_triangular(L, G.T, upper=False)
    return _shape((W * W).sum(0), X_test.shape[0], likelihood)


predictive_variance.hessian_predictive_variance = hessian_predictive_variance
