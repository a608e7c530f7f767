"""laplax 0.0.2 (JAX) behind the conformance contract::

    laplace-lab validate --target laplax

Needs ``laplax==0.0.2`` with ``jax==0.10.2`` and ``jaxlib==0.10.2`` (extra
``laplace-lab[laplax]``; CPU wheels, torch untouched). JAX is imported on the first call,
never by ``import laplace_lab``, on the CPU platform, and laplax's loguru debug messages are
disabled (``logger.disable("laplax")``); each call runs with ``jax_enable_x64`` on for a
float64 model and off for a float32 one (JAX computes in float32 without it, whatever its
inputs), scoped to the call (:mod:`._jax_network`).

The contract hands a torch model; laplax takes a JAX ``model_fn(input, params)``.
:class:`~._jax_network.Network` converts the cases' models (``torch.nn.Linear`` and
``torch.nn.Sequential`` of Linear, Tanh, ReLU, Sigmoid, Identity, and the CNNs' Unflatten,
Conv2d and Flatten, the convolution as ``jax.lax.conv_general_dilated``) into one, with the
parameters a flat vector θ_S = θ̂[S] written into θ̂ on S (S all parameters, a subset or
the last layer), in the model's dtype; its outputs on the training inputs are checked
against the model's after every call. A flat vector keeps ``parameters()`` order: JAX ravels
a dict of parameters with its keys sorted. Each capability is one ``jax.jit`` program
(compiled once per network, shapes and options; laplax's functions trace), in which the
curvature, the posterior and the predictive are laplax's; how the contract maps onto them:

- the loss and its output Hessian: the steps of ``laplax.laplace(model_fn, params,
  {"input": X, "target": y}, loss_fn=..., curv_type=...)`` with its defaults
  (``laplax.api.GGN`` with factor ``num_curv_samples/num_total_samples`` = 1, so the GGN
  sums over the batch; the curvature method of ``curv_type``; ``set_posterior_fn``), without
  its final ``block_until_ready``, which cannot be traced; ``loss_fn`` ``"mse"``
  (Σ_n (f_n − y_n)²: output Hessian 2), ``"binary_cross_entropy"`` (σ(f)(1 − σ(f))) or
  ``"cross_entropy"`` (diag(π) − ππᵀ);
- C outputs with per-output noise variances σ_c² (``"multioutput-regression"``): a custom
  ``loss_fn``, Σ_c (f_c − y_c)²/σ_c² (laplax differentiates a callable loss twice in the
  outputs, ``create_loss_hessian_mv``: 2 diag(1/σ²)), with ``sigma_squared`` = ½, and
  ``prior_arguments["sigma"]`` = 1 in the evidence (its log-likelihood −(1/(2σ))·loss);
- the noise: laplax's posterior precision is (σ²·GGN + prior_prec·I)/loss_scaling_factor
  with ``prior_arguments["sigma_squared"]`` *multiplying* the GGN ("the curvature is scaled
  by the σ² parameter"), so the adapter passes ``sigma_squared`` = 1/(2σ0²) for ``"mse"``
  (1 for classification) and ``loss_scaling_factor`` = 1. Passing the noise variance σ0²
  as ``sigma_squared`` gives 2σ0²·JᵀJ in place of JᵀJ/σ0²;
- the prior: ``prior_arguments["prior_prec"]``, α or the vector V_S (full and diagonal
  curvatures multiply it into the identity, so a vector is diag(V_S));
- ``predictive_variance``: ``curv_type="full"`` (the dense GGN), its posterior's scale
  L (L Lᵀ = Ω⁻¹) and ``set_lin_pushforward`` with ``lin_setup``, ``lin_pred_mean`` and
  ``lin_pred_var``: the diagonal of J Ω⁻¹ Jᵀ at each test input (``jax.vmap`` over them);
- ``diagonal_predictive_variance``: ``curv_type="diagonal"`` (the exact diagonal of the
  GGN, eᵢᵀGeᵢ) through the same pushforward; on a subset S the adapter hands laplax θ_S, as
  for the full curvature and the last layer, so its diagonal is that of the GGN of θ_S,
  diag(Ω_SS), with the prior V_S and the pushforward's Jacobian g_S, in S's order;
- ``minibatch_predictive_variance``: the steps of ``laplax.laplace`` with
  ``num_curv_samples`` = n (the rows given) and ``num_total_samples`` = N (``n_data``), the
  arguments its docstring describes as the samples the GGN is estimated from and the
  samples in the data set; it scales the GGN by ``factor = num_curv_samples /
  num_total_samples`` = n/N (``laplax/api.py:667-668``), where the data set's GGN needs N/n,
  the factor ``laplax.curv.ggn.create_ggn_mv`` takes from the same arguments
  (``curv_scaling_factor = num_total_samples / num_curv_samples``, ``curv/ggn.py:345``)
  (docs/validation.md, laplax F8);
- ``low_rank_predictive_variance``: ``curv_type="lobpcg"`` with ``rank``, the method whose
  documentation promises the leading eigenpairs: laplax's low-rank terms U diag(λ) Uᵀ
  (times σ²), the prior α added by its Woodbury form, the same pushforward. Its
  ``lobpcg_lowrank`` passes ``rank`` as the iteration limit ``m`` of
  ``jax.experimental.sparse.linalg.lobpcg_standard`` and lowers the rank to ⌊p/5⌋ − 1 (at
  least 1) when p < 5·rank; the default ``"lanczos"`` runs ``rank`` Lanczos iterations and
  returns their ``rank`` Ritz pairs, not the top ``rank`` eigenpairs;
- ``log_marginal_likelihood``: ``laplax.eval.likelihood.marginal_log_likelihood`` on the
  full curvature: log p(θ̂) + (p/2) log 2π − ½ log det Ω plus its log-likelihood
  −(1/(2σ))·loss with ``prior_arguments["sigma"]`` = σ0² for ``"mse"``. That is the
  Gaussian log-likelihood without its constant −(N/2) log(2πσ0²), which the adapter adds
  (it depends on σ0² only). For classification it passes laplax's own losses and σ = 1.
  Its log prior is centred at zero, so a prior mean μ0 ≠ 0 is refused; the predictive
  takes ``prior_mean`` and does not need it (Ω does not depend on μ0 given θ̂);
- ``posterior_samples``: ``set_get_weight_sample(jax.random.key(seed), θ̂_S,
  posterior.scale_mv(posterior.state), n_samples)``, θ̂_S + L z per draw, written into θ̂;
- ``structured_posterior_samples``: the same weight sampler on the ``curv_type="diagonal"``
  posterior (scale 1/√(σ²·diag(GGN) + prior_prec), elementwise; a vector prior is diag(V))
  and on the ``"lobpcg"`` one of ``rank`` (its scale U diag((S + α)^{-1/2} − α^{-1/2}) Uᵀ +
  α^{-1/2} I, the symmetric inverse square root of U S Uᵀ + αI for orthonormal U, from the
  same LOBPCG eigenpairs as ``low_rank_predictive_variance``). laplax's low-rank posterior
  adds the prior as the scalar of its ``LowRankTerms``, so a non-isotropic V is refused; it
  has no KFAC, so ``structure="kron"`` is refused (:data:`NOT_OFFERED`);
- ``predictive_probabilities``: ``set_lin_pushforward`` with laplax's predictives:
  ``"probit"`` is ``lin_special_pred_act`` with ``special_pred_type="mean_field_0"``
  (softmax(μ/√(1 + π/8·v))), ``"bridge"`` is ``"laplace_bridge"`` with
  ``use_correction=False`` (the plain bridge on the logits' variances; True first rescales
  μ and v by c = Σ_k v_k/√(K/2)), ``"mc"`` is ``lin_mc_pred_act`` (the mean of softmax
  over ``n_samples`` linearized draws from ``key=jax.random.key(seed)``). Each is a softmax
  over the output axis, so a binary model f is pushed forward as the two-logit model [0, f]
  over the same posterior (the Bernoulli GGN): softmax([0, z]) = [1 − σ(z), σ(z)], whose
  variance on the first logit is 0, and P(y = 1) is the second column;
- ``last_layer_predictive_variance``: the full and diagonal curvatures on S = the last
  ``torch.nn.Linear``'s [W, b]; laplax has no Kronecker-factored curvature, so
  ``structure="kron"`` is refused.

- ``hessian_predictive_variance``: the Hessian-vector product of
  ``laplax.curv.hessian.create_hessian_mv(model_fn, params, data, loss_fn)`` (the Hessian in
  θ of the loss summed over the batch, residual term included) in place of the GGN's, through
  the same ``CURVATURE_METHODS["full"]``, ``set_posterior_fn("full", ...)`` and pushforward,
  ``sigma_squared`` as for the GGN (it scales the curvature). Its loss is built by
  ``concatenate_model_and_loss_fn`` (``laplax/curv/utils.py``), which knows ``"mse"``,
  ``"cross_entropy"`` and a callable, not ``"binary_cross_entropy"``, and whose
  ``"cross_entropy"`` is the elementwise sigmoid cross-entropy (docs/validation.md,
  "laplax F10").

Not served: KFAC and EKFAC (laplax has neither), subnetwork masks, and empirical Bayes:
``laplax.calibration`` tunes the prior precision by a grid search over log α (its only
method), which cannot return the maximiser the contract asks for.

References
----------
.. [1] T. Weber, B. Mucsányi, L. Rommel, T. Christie, L. Kasüschke, M. Pförtner,
   P. Hennig, "laplax – Laplace Approximations with JAX", arXiv:2507.17013;
   https://github.com/laplax-org/laplax (version 0.0.2).
.. [2] E. Daxberger, A. Kristiadi, A. Immer, R. Eschenhagen, M. Bauer, P. Hennig, "Laplace
   Redux — Effortless Bayesian Deep Learning", NeurIPS 2021, arXiv:2106.14806, §2.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from laplace_lab._checks import integer, one_of, positive_int
from laplace_lab.conformance.adapters._jax_network import (
    Network,
    as_jax,
    check_outputs,
    in_model_precision,
    jax_module,
    jit,
    model_fn,
    network_outputs,
)
from laplace_lab.conformance.adapters._parameters import (
    flat_parameters,
    last_layer_indices,
    prior_vector,
    subset_indices,
)
from laplace_lab.conformance.contract import NotOffered

__all__ = ["predictive_variance"]

#: The laplax release this adapter is written against.
VERSION = "0.0.2"
#: What laplax 0.0.2 does not offer: the adapter refuses these requests with
#: :class:`~laplace_lab.conformance.contract.NotOffered` before calling laplax, and the
#: scoreboard reports them N/A (module docstring).
NOT_OFFERED = {
    "kron": (
        f"not offered by laplax {VERSION}: no Kronecker-factored (KFAC) curvature (upstream work "
        "open: laplax-org/laplax#46, 'experimental kfac -> main', and K-FAC on the road to "
        "version 0.1, laplax-org/laplax#50)"
    ),
    "prior-mean": (
        f"not offered by laplax {VERSION}: the log prior of its marginal likelihood is "
        "−½ prior_prec‖θ‖² + const (laplax/eval/likelihood.py:72-78), centred at zero; "
        "prior_arguments has no prior mean"
    ),
    "low-rank-prior": (
        f"not offered by laplax {VERSION}: its low-rank posterior adds the prior as the scalar "
        "of its LowRankTerms (an isotropic prior only)"
    ),
}
#: laplax's loss for each likelihood.
LOSSES = {"regression": "mse", "binary": "binary_cross_entropy", "multiclass": "cross_entropy"}
#: The likelihoods with an (M, C) answer.
MULTI_OUTPUT = ("multiclass", "multioutput-regression")


@functools.cache
def _weighted_mse(noise_var: tuple[float, ...]) -> Any:
    """The custom loss ℓ(f, y) = Σ_c (f_c − y_c)²/σ_c² (summed over any leading axes): laplax
    differentiates a callable loss twice in the outputs (``create_loss_hessian_mv``), so its
    GGN is 2 Σ_n J_nᵀ diag(1/σ²) J_n, ``"mse"`` with each output weighted by 1/σ_c²."""

    def loss(f: Any, y: Any) -> Any:
        jnp = _jax().numpy
        return jnp.sum((f - y) ** 2 / jnp.asarray(noise_var, dtype=f.dtype))

    return loss


def _loss(likelihood: str, noise_var: Any) -> Any:
    """laplax's ``loss_fn`` for the likelihood: a name, or :func:`_weighted_mse` for C outputs
    with per-output noise variances."""
    if likelihood == "multioutput-regression":
        return _weighted_mse(tuple(float(v) for v in np.asarray(noise_var).reshape(-1)))
    return LOSSES[one_of(likelihood, "likelihood", tuple(LOSSES))]


#: laplax's predictive for each closed-form link of the contract.
PREDICTIVES = {"probit": "mean_field_0", "bridge": "laplace_bridge"}


@functools.cache
def _jax() -> Any:
    """JAX (:func:`~._jax_network.jax_module`) with laplax imported and its loguru debug
    messages disabled."""
    try:
        jax = jax_module()
        import laplax  # noqa: F401
        from loguru import logger
    except ImportError as err:
        raise ImportError(
            "this target needs laplax: pip install laplax==0.0.2 jax==0.10.2 jaxlib==0.10.2"
        ) from err
    logger.disable("laplax")
    return jax


def _inputs(
    model: Any,
    X: Any,
    y: Any,
    S: np.ndarray,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: float,
) -> tuple[Network, dict[str, Any]]:
    """(network, the arrays of a program call): θ̂, S, the data and laplax's
    ``prior_arguments`` (α or V_S, and σ² = 1/(2σ0²) for ``"mse"``)."""
    jnp = _jax().numpy
    one_of(likelihood, "likelihood", (*LOSSES, "multioutput-regression"))
    theta_hat = jnp.asarray(flat_parameters(model).cpu().numpy())
    V = prior_vector(model, prior_precision)[S]
    target = as_jax(y)
    arguments = {
        "prior_prec": jnp.asarray(V[0] if np.ptp(V) == 0.0 else V, dtype=theta_hat.dtype),
        "sigma_squared": jnp.asarray(_sigma_squared(likelihood, noise_var)),
    }
    return Network.of(model), {
        "theta_hat": theta_hat,
        "index": jnp.asarray(S),
        "data": {
            "input": as_jax(X),
            "target": target if likelihood in MULTI_OUTPUT else target[:, None],
        },
        "arguments": arguments,
    }


def _sigma_squared(likelihood: str, noise_var: Any) -> float:
    """laplax's GGN multiplier: 1/(2σ0²) for ``"mse"``, ½ for :func:`_weighted_mse` (its
    Hessian 2 diag(1/σ²) to the contract's diag(1/σ²)), 1 for classification."""
    if likelihood == "regression":
        return 0.5 / noise_var
    return 0.5 if likelihood == "multioutput-regression" else 1.0


def _call(program: Any, model: Any, X: Any, inputs: dict[str, Any], **extra: Any) -> Any:
    """Run a compiled program and check its network against the model on ``X``."""
    result, outputs = program(**inputs, **extra)
    check_outputs(model, X, outputs)
    return result


def _laplace(
    curv_type: str,
    forward: Any,
    params: Any,
    data: Any,
    loss: str,
    rank: int | None = None,
    samples: tuple[int, int] = (1, 1),
) -> tuple[Any, Any]:
    """``laplax.laplace``'s steps (``GGN``, the curvature method, ``set_posterior_fn``)
    without its final wait for the result (``block_until_ready``, which cannot be traced):
    (posterior_fn, curvature estimate); ``rank`` for a low-rank ``curv_type`` (LOBPCG's start
    keyed 0); ``samples`` its ``(num_curv_samples, num_total_samples)``, from which it takes
    the GGN's ``factor`` = num_curv_samples/num_total_samples (laplax/api.py:667-668)."""
    from laplax.api import GGN
    from laplax.curv import set_posterior_fn
    from laplax.curv.cov import CURVATURE_METHODS

    curv_kwargs = {} if rank is None else {"rank": rank, "key": _jax().random.key(0)}
    factor = float(samples[0]) / float(samples[1])  # laplax.laplace's own line
    mv = GGN(forward, params, data, loss_fn=loss, factor=factor)
    curvature = CURVATURE_METHODS[curv_type](mv, layout=params, **curv_kwargs)
    return set_posterior_fn(curv_type, curvature, layout=params), curvature


def _push(posterior_fn: Any, forward: Any, params: Any, arguments: Any, fns: list, **kw: Any):
    """laplax's linearized predictive with the pushforward ``fns`` (one test input)."""
    from laplax.eval.pushforward import set_lin_pushforward

    return set_lin_pushforward(
        model_fn=forward,
        mean_params=params,
        posterior_fn=posterior_fn,
        prior_arguments=arguments,
        loss_scaling_factor=1.0,
        pushforward_fns=fns,
        **kw,
    )


@functools.cache
def _variance_program(
    network: Network,
    curv_type: str,
    loss: str,
    rank: int | None,
    samples: tuple[int, int] = (1, 1),
) -> Any:
    """The compiled diag(J Ω⁻¹ Jᵀ) at each test input for laplax's ``curv_type``."""
    jax = _jax()
    from laplax.eval.pushforward import lin_pred_mean, lin_pred_var, lin_setup

    def program(theta_hat, index, data, arguments, X_test):
        forward, params = model_fn(network, theta_hat, index), theta_hat[index]
        posterior_fn, _ = _laplace(curv_type, forward, params, data, loss, rank, samples)
        fns = [lin_setup, lin_pred_mean, lin_pred_var]
        predictive = _push(posterior_fn, forward, params, arguments, fns)
        out = jax.vmap(predictive)(X_test)["pred_var"]
        return out, network_outputs(network, theta_hat, index, data["input"])

    return jit(program)


def _variances(
    curv_type: str, model: Any, X_train, y_train, X_test, S, *, rank=None, samples=(1, 1), **kw
):
    network, inputs = _inputs(model, X_train, y_train, S, **kw)
    loss = _loss(kw["likelihood"], kw["noise_var"])
    program = _variance_program(network, curv_type, loss, rank, samples)
    v = np.asarray(_call(program, model, X_train, inputs, X_test=as_jax(X_test)), dtype=float)
    return v if kw["likelihood"] in MULTI_OUTPUT else v.reshape(-1)


@in_model_precision
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
    """gᵀΩ⁻¹g (g_Sᵀ Ω_SS⁻¹ g_S on a subset) from laplax's full GGN posterior and its
    linearized pushforward (module docstring). A prior mean (``prior_mean``) is not
    needed: Ω does not depend on it given θ̂."""
    return _variances(
        "full",
        model,
        X_train,
        y_train,
        X_test,
        subset_indices(model, subset),
        likelihood=likelihood,
        prior_precision=prior_precision,
        noise_var=noise_var,
    )


@in_model_precision
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
    """gᵀ diag(Ω)⁻¹ g (g_Sᵀ diag(Ω_SS)⁻¹ g_S on a subset) from laplax's
    ``curv_type="diagonal"`` posterior."""
    return _variances(
        "diagonal",
        model,
        X_train,
        y_train,
        X_test,
        subset_indices(model, subset),
        likelihood=likelihood,
        prior_precision=prior_precision,
        noise_var=noise_var,
    )


@in_model_precision
def low_rank_predictive_variance(
    model: Any,
    X_train: Any,
    y_train: Any,
    X_test: Any,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: float,
    rank: int,
) -> np.ndarray:
    """The variances of laplax's ``curv_type="lobpcg"`` posterior of rank ``rank``."""
    return _variances(
        "lobpcg",
        model,
        X_train,
        y_train,
        X_test,
        subset_indices(model, None),
        rank=positive_int(rank, "rank"),
        likelihood=likelihood,
        prior_precision=prior_precision,
        noise_var=noise_var,
    )


@functools.cache
def _evidence_program(
    network: Network, loss: str, curv_type: str = "full", rank: int | None = None
) -> Any:
    from laplax.enums import CurvApprox
    from laplax.eval.likelihood import marginal_log_likelihood

    def program(theta_hat, index, data, arguments):
        forward, params = model_fn(network, theta_hat, index), theta_hat[index]
        _, curvature = _laplace(curv_type, forward, params, data, loss, rank)
        value = marginal_log_likelihood(
            curvature,
            arguments,
            data,
            forward,
            params,
            loss,
            CurvApprox(curv_type),
            vmap_over_data=True,
        )
        return value, network_outputs(network, theta_hat, index, data["input"])

    return jit(program)


@in_model_precision
def log_marginal_likelihood(
    model: Any,
    X_train: Any,
    y_train: Any,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: float,
    prior_mean: Any = None,
) -> np.ndarray:
    """laplax's ``marginal_log_likelihood`` of the full GGN posterior (module docstring); a
    non-zero ``prior_mean`` is refused (:data:`NOT_OFFERED`)."""
    return _evidence(
        "full",
        model,
        X_train,
        y_train,
        likelihood=likelihood,
        prior_precision=prior_precision,
        noise_var=noise_var,
        prior_mean=prior_mean,
    )


@in_model_precision
def low_rank_log_marginal_likelihood(
    model: Any,
    X_train: Any,
    y_train: Any,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: float,
    rank: int,
    prior_mean: Any = None,
) -> np.ndarray:
    """laplax's ``marginal_log_likelihood`` of its ``curv_type="lobpcg"`` posterior of rank
    ``rank`` (``low_rank_marginal_log_likelihood``; module docstring); an isotropic prior
    only (:data:`NOT_OFFERED`)."""
    if np.ptp(prior_vector(model, prior_precision)) != 0.0:
        raise NotOffered(f"{NOT_OFFERED['low-rank-prior']}; got a non-isotropic prior_precision")
    return _evidence(
        "lobpcg",
        model,
        X_train,
        y_train,
        rank=positive_int(rank, "rank"),
        likelihood=likelihood,
        prior_precision=prior_precision,
        noise_var=noise_var,
        prior_mean=prior_mean,
    )


def _evidence(
    curv_type: str,
    model: Any,
    X_train: Any,
    y_train: Any,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: Any,
    prior_mean: Any,
    rank: int | None = None,
) -> np.ndarray:
    if prior_mean is not None and np.any(np.asarray(prior_mean) != 0.0):
        raise NotOffered(f"{NOT_OFFERED['prior-mean']}; got a non-zero prior_mean")
    network, inputs = _inputs(
        model,
        X_train,
        y_train,
        subset_indices(model, None),
        likelihood=likelihood,
        prior_precision=prior_precision,
        noise_var=noise_var,
    )
    constant = 0.0
    if likelihood == "regression":
        inputs["arguments"]["sigma"] = inputs["arguments"]["prior_prec"].dtype.type(noise_var)
        constant = -0.5 * X_train.shape[0] * math.log(2.0 * math.pi * noise_var)
    elif likelihood == "multioutput-regression":  # −½ Σ (f − y)²/σ_c² with σ = 1
        s2 = np.asarray(noise_var, dtype=np.float64)
        constant = -0.5 * X_train.shape[0] * float(np.sum(np.log(2.0 * math.pi * s2)))
    program = _evidence_program(network, _loss(likelihood, noise_var), curv_type, rank)
    value = _call(program, model, X_train, inputs)
    return np.asarray(value, dtype=np.float64) + constant


@functools.cache
def _sample_program(
    network: Network, loss: str, n_samples: int, curv_type: str = "full", rank: int | None = None
) -> Any:
    """The compiled draws θ̂_S + L z of laplax's ``curv_type`` posterior (its scale L)."""
    jax = _jax()
    from laplax.eval.pushforward import set_get_weight_sample

    def program(theta_hat, index, data, arguments, key):
        forward, params = model_fn(network, theta_hat, index), theta_hat[index]
        posterior_fn, _ = _laplace(curv_type, forward, params, data, loss, rank)
        posterior = posterior_fn(arguments, 1.0)
        draw = set_get_weight_sample(
            key,
            mean_params=params,
            scale_mv=posterior.scale_mv(posterior.state),
            num_samples=n_samples,
        )
        draws = jax.lax.map(draw, jax.numpy.arange(n_samples))
        return draws, network_outputs(network, theta_hat, index, data["input"])

    return jit(program)


@in_model_precision
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
    """θ ~ N(θ̂, Ω⁻¹) (θ_S ~ N(θ̂_S, Ω_SS⁻¹), θ̂ elsewhere) by laplax's weight sampler."""
    jax = _jax()
    n_samples = positive_int(n_samples, "n_samples")
    key = jax.random.key(integer(seed, "seed", low=0))
    S = subset_indices(model, subset)
    network, inputs = _inputs(
        model,
        X_train,
        y_train,
        S,
        likelihood=likelihood,
        prior_precision=prior_precision,
        noise_var=noise_var,
    )
    program = _sample_program(network, _loss(likelihood, noise_var), n_samples)
    draws = np.asarray(_call(program, model, X_train, inputs, key=key), dtype=np.float64)
    theta = np.tile(flat_parameters(model).cpu().double().numpy(), (n_samples, 1))
    theta[:, S] = draws
    return theta


#: laplax's ``curv_type`` for each structure of the samples capability it serves.
CURVATURES = {"diag": "diagonal", "low_rank": "lobpcg"}


@in_model_precision
def structured_posterior_samples(
    model: Any,
    X_train: Any,
    y_train: Any,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: float,
    structure: str,
    convention: str | None,
    rank: int | None,
    n_samples: int,
    seed: int,
) -> np.ndarray:
    """θ ~ N(θ̂, P⁻¹) by laplax's weight sampler on its ``curv_type="diagonal"`` or
    ``"lobpcg"`` posterior (module docstring); ``"kron"`` and a non-isotropic prior with
    ``"low_rank"`` are refused (:data:`NOT_OFFERED`)."""
    jax = _jax()
    one_of(structure, "structure", ("diag", "kron", "low_rank"))
    if structure == "kron":
        raise NotOffered(f"{NOT_OFFERED['kron']}; got structure='kron'")
    S = subset_indices(model, None)
    if structure == "low_rank" and np.ptp(prior_vector(model, prior_precision)) != 0.0:
        raise NotOffered(f"{NOT_OFFERED['low-rank-prior']}; got a non-isotropic prior_precision")
    n_samples = positive_int(n_samples, "n_samples")
    key = jax.random.key(integer(seed, "seed", low=0))
    network, inputs = _inputs(
        model,
        X_train,
        y_train,
        S,
        likelihood=likelihood,
        prior_precision=prior_precision,
        noise_var=noise_var,
    )
    r = positive_int(rank, "rank") if structure == "low_rank" else None
    program = _sample_program(
        network, _loss(likelihood, noise_var), n_samples, CURVATURES[structure], r
    )
    draws = _call(program, model, X_train, inputs, key=key)
    return np.asarray(draws, dtype=np.float64)


@functools.cache
def _probability_program(network: Network, loss: str, link: str, n_samples: int) -> Any:
    """The compiled class probabilities of laplax's predictive for ``link``; a one-logit
    network is pushed forward as [0, f]."""
    jax = _jax()
    from laplax.eval.pushforward import (
        lin_mc_pred_act,
        lin_pred_mean,
        lin_pred_var,
        lin_samples,
        lin_setup,
        lin_special_pred_act,
    )

    binary = loss == LOSSES["binary"]
    pushed = Network(network.layers, two_logits=True) if binary else network

    def program(theta_hat, index, data, arguments, X_test, key):
        forward, params = model_fn(network, theta_hat, index), theta_hat[index]
        posterior_fn, _ = _laplace("full", forward, params, data, loss)
        pushed_forward = model_fn(pushed, theta_hat, index)
        if link == "mc":
            fns = [lin_setup, lin_pred_mean, lin_samples, lin_mc_pred_act]
            kw = {"num_samples": n_samples, "key": key}
            name = "mc_pred_act"
        else:
            fns = [lin_setup, lin_pred_mean, lin_pred_var, lin_special_pred_act]
            kw = {"special_pred_type": PREDICTIVES[link], "use_correction": False}
            name = "special_pred_act"
        predictive = _push(posterior_fn, pushed_forward, params, arguments, fns, **kw)
        out = jax.vmap(predictive)(X_test)[name]
        return out, network_outputs(network, theta_hat, index, data["input"])

    return jit(program)


@in_model_precision
def predictive_probabilities(
    model: Any,
    X_train: Any,
    y_train: Any,
    X_test: Any,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: float,
    link: str,
    n_samples: int,
    seed: int,
) -> np.ndarray:
    """Class probabilities from laplax's linearized predictives (module docstring)."""
    jax = _jax()
    one_of(likelihood, "likelihood", ("binary", "multiclass"))
    one_of(link, "link", ("probit", "mc", "bridge"))
    n_samples = positive_int(n_samples, "n_samples")
    key = jax.random.key(integer(seed, "seed", low=0))
    network, inputs = _inputs(
        model,
        X_train,
        y_train,
        subset_indices(model, None),
        likelihood=likelihood,
        prior_precision=prior_precision,
        noise_var=noise_var,
    )
    program = _probability_program(network, LOSSES[likelihood], link, n_samples)
    p = _call(program, model, X_train, inputs, X_test=as_jax(X_test), key=key)
    p = np.asarray(p, dtype=np.float64)
    return p[:, 1] if likelihood == "binary" else p


@in_model_precision
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
    is refused (laplax has no Kronecker-factored curvature)."""
    one_of(structure, "structure", ("full", "diag", "kron"))
    if structure == "kron":
        raise NotOffered(f"{NOT_OFFERED['kron']}; got structure='kron'")
    return _variances(
        "full" if structure == "full" else "diagonal",
        model,
        X_train,
        y_train,
        X_test,
        last_layer_indices(model),
        likelihood=likelihood,
        prior_precision=prior_precision,
        noise_var=noise_var,
    )


@in_model_precision
def minibatch_predictive_variance(
    model: Any,
    X_train: Any,
    y_train: Any,
    X_test: Any,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: float,
    n_data: int,
) -> np.ndarray:
    """The variances of ``laplax.laplace(..., curv_type="full", num_curv_samples=n,
    num_total_samples=N)`` on the n rows given, N = ``n_data`` (module docstring)."""
    samples = (int(X_train.shape[0]), positive_int(n_data, "n_data"))
    return _variances(
        "full",
        model,
        X_train,
        y_train,
        X_test,
        subset_indices(model, None),
        samples=samples,
        likelihood=likelihood,
        prior_precision=prior_precision,
        noise_var=noise_var,
    )


predictive_variance.diagonal_predictive_variance = diagonal_predictive_variance
predictive_variance.low_rank_predictive_variance = low_rank_predictive_variance
predictive_variance.log_marginal_likelihood = log_marginal_likelihood
predictive_variance.posterior_samples = posterior_samples
predictive_variance.structured_posterior_samples = structured_posterior_samples
predictive_variance.predictive_probabilities = predictive_probabilities
predictive_variance.last_layer_predictive_variance = last_layer_predictive_variance
predictive_variance.minibatch_predictive_variance = minibatch_predictive_variance
predictive_variance.low_rank_log_marginal_likelihood = low_rank_log_marginal_likelihood


@functools.cache
def _hessian_program(network: Network, loss: Any) -> Any:
    """The compiled diag(J Ω_H⁻¹ Jᵀ) at each test input, Ω_H from laplax's Hessian-vector
    product (module docstring)."""
    jax = _jax()
    from laplax.curv import set_posterior_fn
    from laplax.curv.cov import CURVATURE_METHODS
    from laplax.curv.hessian import create_hessian_mv
    from laplax.eval.pushforward import lin_pred_mean, lin_pred_var, lin_setup

    def program(theta_hat, index, data, arguments, X_test):
        forward, params = model_fn(network, theta_hat, index), theta_hat[index]
        mv = create_hessian_mv(forward, params, data, loss_fn=loss)
        curvature = CURVATURE_METHODS["full"](mv, layout=params)
        posterior_fn = set_posterior_fn("full", curvature, layout=params)
        fns = [lin_setup, lin_pred_mean, lin_pred_var]
        predictive = _push(posterior_fn, forward, params, arguments, fns)
        out = jax.vmap(predictive)(X_test)["pred_var"]
        return out, network_outputs(network, theta_hat, index, data["input"])

    return jit(program)


@in_model_precision
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
    """gᵀΩ_H⁻¹g from laplax's Hessian-vector product of its loss, the full posterior and the
    linearized pushforward (module docstring)."""
    kw = {"likelihood": likelihood, "prior_precision": prior_precision, "noise_var": noise_var}
    S = subset_indices(model, None)
    network, inputs = _inputs(model, X_train, y_train, S, **kw)
    program = _hessian_program(network, _loss(likelihood, noise_var))
    v = np.asarray(_call(program, model, X_train, inputs, X_test=as_jax(X_test)), dtype=float)
    return v if likelihood in MULTI_OUTPUT else v.reshape(-1)


predictive_variance.hessian_predictive_variance = hessian_predictive_variance
