"""laplace-torch 0.3 behind the conformance contract::

    laplace-lab validate \\
        --target laplace_lab.conformance.adapters.laplace_torch:predictive_variance

Needs the extra ``laplace-lab[laplace-torch]`` and laplace-torch itself, installed without
its torchvision requirement (torchvision is never imported by laplace-torch, BackPACK or
curvlinops at run time; README, "Validating an implementation"):

    pip install 'laplace-lab[laplace-torch]'
    pip install --no-deps laplace-torch==0.3 backpack-for-pytorch==1.7.1 \\
        curvlinops-for-pytorch==3.0.1 asdfghjkl==0.1a4

How the contract maps onto laplace-torch's public API, with its defaults (backend
CurvlinopsGGN, prior mean 0, temperature 1):

- all parameters: ``Laplace(model, lik, subset_of_weights="all", hessian_structure="full")``;
  a subset: ``subset_of_weights="subnetwork", subnetwork_indices=subset`` (full Hessian);
- regression: ``sigma_noise = √noise_var``, variances from ``la(X_test)``; multi-output
  regression with per-output noise variances is refused (:data:`NOT_OFFERED`): its
  ``sigma_noise`` is one scalar for all outputs;
- classification: the variances are the diagonal of ``la.functional_variance(Js)`` with
  ``Js`` from ``la.backend.jacobians(X_test)``; laplace-torch has no single-logit Bernoulli
  likelihood, so a binary model f runs as the two-logit softmax model [0, f], whose GGN is
  exactly the Bernoulli one (H = σ(f)(1 − σ(f)) on the f-logit) and whose f-logit variance
  is the contract's;
- prior: a float, or the vector V (restricted to the subset, in its order);
- masks: ``LargestMagnitudeSubnetMask``, ``LargestVarianceDiagLaplaceSubnetMask`` (with a
  ``DiagLaplace`` of the same prior and noise) and ``LastLayerSubnetMask``;
- samples: ``la.sample(n_samples, generator=torch.Generator().manual_seed(seed))``;
- structured samples: ``la.sample(n_samples, generator=...)`` of
  ``hessian_structure="diag"`` (``DiagLaplace.sample``: θ̂ + z ⊙ posterior_scale, the scale
  1/√(H/σ0² + V) of the diagonal GGN), ``"kron"`` (``KronLaplace.sample``: θ̂ +
  P^{-1/2} z through ``KronDecomposed.bmm(z, exponent=-0.5)``, the symmetric inverse square
  root (Q_1 ⊗ Q_2)(λ_1 λ_2ᵀ + α)^{-1/2}(Q_1 ⊗ Q_2)ᵀ per weight and (λ + α)^{-1/2} per bias
  factor; the separate convention only, as for KFAC below, so ``convention="joint"``
  raises) or ``"lowrank"`` (``LowRankLaplace.sample``, whose construction fails as in
  finding 3); the generator's draws in the model's dtype;
- evidence: ``la.log_marginal_likelihood()``; a prior mean μ0 as ``prior_mean`` (its scatter
  (θ̂ − μ0)ᵀP0(θ̂ − μ0), ``baselaplace.py:1039-1040``), also passed to the predictive (which
  does not use it: Ω does not depend on μ0 given θ̂);
- low rank: ``hessian_structure="lowrank"`` with ``backend_kwargs={"low_rank": rank}``, its
  variances and its ``la.log_marginal_likelihood()`` (the low-rank evidence);
- diagonal Laplace: ``hessian_structure="diag"`` (``DiagLaplace``), its GLM variances; on a
  subset ``subset_of_weights="subnetwork", hessian_structure="diag",
  subnetwork_indices=subset`` (``DiagSubnetLaplace``): its backend indexes the Jacobians'
  columns by ``subnetwork_indices`` as given (``Js[:, :, subnetwork_indices]``), so H, the
  prior and the test Jacobian are all in the subset's order, unsorted; the same dtype as the
  model; a vector prior on the subnetwork is refused as in finding 2;
- KFAC: ``hessian_structure="kron"`` (``KronLaplace``, default damping=False: the prior is
  added to the eigenvalues λ_G,i λ_A,j of the Kronecker products), its GLM variances. Its
  backends give each bias a Kronecker factor of its own (``CurvlinopsInterface.kron``
  calls ``KFACLinearOperator(separate_weight_and_bias=True)`` and appends ``[B, A]`` for the
  weight and ``[B]`` for the bias), the convention ``"separate"``; the joint [W b] factor is
  not offered, so ``convention="joint"`` is refused (:data:`NOT_OFFERED`). Its backend's
  ``fisher_type`` is type-2 (the exact output Hessian, ``stochastic=False``), so for C logits
  (``likelihood="classification"``, ``CrossEntropyLoss(reduction="sum")``) B is the
  contract's G_l = Σ_n D_nᵀ(diag(π_n) − π_nπ_nᵀ)D_n and the variances are the diagonal of
  ``functional_variance``, (M, C);
- last-layer Laplace: ``subset_of_weights="last_layer", hessian_structure=structure``
  (``FullLLLaplace``, ``DiagLLLaplace``, ``KronLLLaplace``). Its ``FeatureExtractor``
  takes as the last layer the last leaf module of the forward pass (it must be a
  ``torch.nn.Linear``) and its Jacobian [φ ⊗ I, I] puts the bias after the weight, as
  ``parameters()`` does; ``KronLLLaplace`` gives the bias its own factor (``"separate"``).
  Its Jacobians take the last layer's outputs for the model's, so the two-logit model
  [0, f] cannot stand in for a binary model, and ``likelihood="binary"`` is refused;
- empirical-Fisher Laplace: ``hessian_structure=structure`` ("full" or "diag") with
  ``backend=CurvlinopsEF`` (:data:`EF_BACKEND`; ``BackPackEF`` is the other EF backend), its
  GLM variances. laplace-torch's EF is the Gram of the per-sample gradients of its loss
  times its ``factor`` — ``MSELoss(reduction="sum")`` and ½ for regression, whose gradient is
  2(f − y)J, so ½·4 Σ_n r_n² J_nᵀJ_n — and the posterior precision multiplies every
  curvature by 1/σ0² (``_H_factor``): 2 Σ_n r_n² J_nᵀJ_n/σ0², which is 2σ0² times the EF of
  the Gaussian likelihood, Σ_n r_n² J_nᵀJ_n/σ0⁴ (docs/validation.md, finding 5); for
  classification (``CrossEntropyLoss``, factor 1, σ0 = 1) it is the EF;
- class probabilities: ``la(X_test, pred_type="glm", link_approx=link, n_samples=n_samples)``
  with ``link`` "probit", "mc" or "bridge" (laplace-torch's names); "mc" draws from torch's
  global generator (``la(..., generator=)`` is checked but not passed on to the GLM
  sampler), so the call runs under ``torch.random.fork_rng`` seeded with ``seed``; a binary
  model runs as [0, f] with ``diagonal_output=True`` for "mc" (the 2 × 2 covariance
  diag(0, v) has no Cholesky factor; the diagonal is exact since the first logit is
  constant), and P(y = 1) is the second column;
- empirical Bayes: α by ``la.optimize_prior_precision(pred_type="glm", method="marglik",
  prior_structure="scalar", init_prior_prec=prior_precision)`` with its defaults (Adam on
  log α, 100 steps, learning rate 0.1); α and σ0² together by laplace-torch's documented
  recipe, the same Adam steps on (log α, log σ) of ``-la.log_marginal_likelihood(α, σ)``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from laplace_lab._checks import positive_int
from laplace_lab.conformance.contract import NotOffered

#: What laplace-torch 0.3 does not offer: the adapter refuses these requests with
#: :class:`~laplace_lab.conformance.contract.NotOffered` before calling laplace-torch, and
#: the scoreboard reports them N/A (module docstring).
NOT_OFFERED = {
    "joint-kfac": (
        "not offered by laplace-torch 0.3: its KronLaplace gives every bias its own "
        "Kronecker factor (the 'separate' convention) and has no joint [W b] factor"
    ),
    "binary-last-layer": (
        "not offered by laplace-torch 0.3: it has no one-logit Bernoulli likelihood "
        "(aleximmer/Laplace#107, closed: its curvature backends had no BCE loss), and its "
        "last-layer Jacobians (backend.last_layer_jacobians) take the last Linear layer's "
        "outputs for the model's, so the two-logit model [0, f] cannot stand in for it"
    ),
    "per-output-noise": (
        "not offered by laplace-torch 0.3: one observation noise for all outputs (a "
        "sigma_noise tensor of several values stops its constructor at "
        "laplace/baselaplace.py:152, 'Boolean value of Tensor with more than one value is "
        "ambiguous', and its setter refuses one: 'Only homoscedastic output noise "
        "supported.', baselaplace.py:621-622)"
    ),
}

__all__ = ["predictive_variance"]

#: laplace-torch's defaults for ``optimize_prior_precision(method="marglik")``.
MARGLIK_STEPS, MARGLIK_LR = 100, 0.1
#: The curvature backend of ``ef_predictive_variance`` (a name in ``laplace.curvature``).
EF_BACKEND = "CurvlinopsEF"


def _laplace_torch() -> Any:
    try:
        import laplace
    except ImportError as err:
        raise ImportError(
            "this target needs laplace-torch 0.3: pip install 'laplace-lab[laplace-torch]' and "
            "pip install --no-deps laplace-torch==0.3 backpack-for-pytorch==1.7.1 "
            "curvlinops-for-pytorch==3.0.1 asdfghjkl==0.1a4"
        ) from err
    return laplace


def _two_logits(model: Any) -> Any:
    """The softmax model [0, f] of a one-logit model f (same parameters, same order)."""
    import torch

    class TwoLogits(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, x: Any) -> Any:
            f = self.inner(x).reshape(x.shape[0], 1)
            return torch.cat([torch.zeros_like(f), f], dim=1)

    return TwoLogits(model).eval()


def _setup(model: Any, X: Any, y: Any, likelihood: str) -> tuple[Any, str, Any]:
    """(network, laplace-torch likelihood, data loader) for the contract's likelihood."""
    from torch.utils.data import DataLoader, TensorDataset

    if likelihood == "multioutput-regression":
        raise NotOffered(f"{NOT_OFFERED['per-output-noise']}; got likelihood={likelihood!r}")
    if likelihood == "regression":
        net, lik, target = model, "regression", y.reshape(-1, 1).to(X.dtype)
    elif likelihood == "binary":
        net, lik, target = _two_logits(model), "classification", y.long()
    else:
        net, lik, target = model, "classification", y.long()
    return net, lik, DataLoader(TensorDataset(X, target), batch_size=len(X))


def _prior(prior_precision: Any, subset: Any, dtype: Any) -> Any:
    import torch

    if isinstance(prior_precision, float | int):
        return float(prior_precision)
    v = np.asarray(prior_precision, dtype=np.float64)
    return torch.as_tensor(v if subset is None else v[np.asarray(subset)], dtype=dtype)


def _prior_mean(prior_mean: Any, subset: Any, dtype: Any) -> dict[str, Any]:
    """``prior_mean`` for ``Laplace`` (restricted to the subset, in its order), or nothing."""
    import torch

    if prior_mean is None:
        return {}
    mu0 = np.asarray(prior_mean, dtype=np.float64)
    return {
        "prior_mean": torch.as_tensor(
            mu0 if subset is None else mu0[np.asarray(subset)], dtype=dtype
        )
    }


def _noise(likelihood: str, noise_var: float) -> dict[str, float]:
    return {"sigma_noise": math.sqrt(noise_var)} if likelihood == "regression" else {}


def _fit(
    model: Any,
    X: Any,
    y: Any,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: float,
    subset: Any = None,
    structure: str = "full",
    prior_mean: Any = None,
    **options: Any,
) -> tuple[Any, Any]:
    import torch

    laplace = _laplace_torch()
    net, lik, loader = _setup(model, X, y, likelihood)
    kw = {
        "prior_precision": _prior(prior_precision, subset, X.dtype),
        **_noise(likelihood, noise_var),
        **_prior_mean(prior_mean, subset, X.dtype),
    }
    if subset is None:
        la = laplace.Laplace(
            net, lik, subset_of_weights="all", hessian_structure=structure, **kw, **options
        )
    else:
        idx = torch.as_tensor(np.asarray(subset), dtype=torch.long)
        la = laplace.Laplace(
            net,
            lik,
            subset_of_weights="subnetwork",
            hessian_structure=structure,
            subnetwork_indices=idx,
            **kw,
        )
    la.fit(loader)
    return la, net


def _variances(la: Any, X_test: Any, likelihood: str) -> np.ndarray:
    if likelihood == "regression":
        _, f_var = la(X_test, pred_type="glm")
        return f_var.reshape(len(X_test)).detach().double().numpy()
    Js, _ = la.backend.jacobians(X_test)
    var = la.functional_variance(Js).diagonal(dim1=1, dim2=2).detach().double().numpy()
    return var[:, 1] if likelihood == "binary" else var


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
    """laplace-torch's GLM (linearized) function-space variances; the conformance contract."""
    la, _ = _fit(
        model,
        X_train,
        y_train,
        likelihood=likelihood,
        prior_precision=prior_precision,
        noise_var=noise_var,
        subset=subset,
        prior_mean=prior_mean,
    )
    return _variances(la, X_test, likelihood)


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
    """``la.sample`` with a seeded torch generator."""
    import torch

    la, _ = _fit(
        model,
        X_train,
        y_train,
        likelihood=likelihood,
        prior_precision=prior_precision,
        noise_var=noise_var,
        subset=subset,
    )
    generator = torch.Generator().manual_seed(int(seed))
    return la.sample(int(n_samples), generator=generator).detach().double().numpy()


#: laplace-torch's ``hessian_structure`` for each structure of the samples capability.
HESSIAN_STRUCTURES = {"diag": "diag", "kron": "kron", "low_rank": "lowrank"}


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
    """``la.sample`` of ``DiagLaplace``, ``KronLaplace`` (``convention="separate"`` only) or
    ``LowRankLaplace`` with a seeded torch generator (module docstring)."""
    import torch

    if structure not in HESSIAN_STRUCTURES:
        raise ValueError(
            f"structure must be one of {list(HESSIAN_STRUCTURES)}; got structure={structure!r}"
        )
    if structure == "kron" and convention != "separate":
        raise NotOffered(f"{NOT_OFFERED['joint-kfac']}; got convention={convention!r}")
    options = {}
    if structure == "low_rank":
        options = {"backend_kwargs": {"low_rank": positive_int(rank, "rank")}}
    fit = {"likelihood": likelihood, "prior_precision": prior_precision, "noise_var": noise_var}
    la, _ = _fit(
        model, X_train, y_train, **fit, structure=HESSIAN_STRUCTURES[structure], **options
    )
    generator = torch.Generator().manual_seed(int(seed))
    return la.sample(int(n_samples), generator=generator).detach().double().numpy()


def log_marginal_likelihood(
    model: Any,
    X_train: Any,
    y_train: Any,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: float,
    prior_mean: Any = None,
) -> float:
    """``la.log_marginal_likelihood()`` of the full Laplace approximation (with
    ``prior_mean``: ``Laplace(..., prior_mean=μ0)``, whose scatter is (θ̂ − μ0)ᵀP0(θ̂ − μ0))."""
    la, _ = _fit(
        model,
        X_train,
        y_train,
        likelihood=likelihood,
        prior_precision=prior_precision,
        noise_var=noise_var,
        prior_mean=prior_mean,
    )
    return float(la.log_marginal_likelihood().detach())


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
    """``hessian_structure="lowrank"`` (``LowRankLaplace``) with ``low_rank = rank``."""
    la, _ = _fit(
        model,
        X_train,
        y_train,
        likelihood=likelihood,
        prior_precision=prior_precision,
        noise_var=noise_var,
        structure="lowrank",
        backend_kwargs={"low_rank": positive_int(rank, "rank")},
    )
    return _variances(la, X_test, likelihood)


def low_rank_log_marginal_likelihood(
    model: Any,
    X_train: Any,
    y_train: Any,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: float,
    rank: int,
) -> float:
    """``la.log_marginal_likelihood()`` of ``LowRankLaplace`` with ``low_rank = rank`` (its
    ``log_det_posterior_precision``, ``laplace/baselaplace.py:2088-2093``)."""
    la, _ = _fit(
        model,
        X_train,
        y_train,
        likelihood=likelihood,
        prior_precision=prior_precision,
        noise_var=noise_var,
        structure="lowrank",
        backend_kwargs={"low_rank": positive_int(rank, "rank")},
    )
    return float(la.log_marginal_likelihood().detach())


def optimize_prior(
    model: Any,
    X_train: Any,
    y_train: Any,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: float,
    optimize_noise: bool,
) -> tuple[float, float]:
    """``la.optimize_prior_precision(method="marglik")``; with ``optimize_noise``, Adam on
    (log α, log σ) of ``la.log_marginal_likelihood`` (module docstring).

    Both take ``MARGLIK_STEPS`` Adam steps of learning rate ``MARGLIK_LR`` (laplace-torch's
    defaults) from the starting values and return the last iterate.

    References
    ----------
    .. [1] E. Daxberger, A. Kristiadi, A. Immer, R. Eschenhagen, M. Bauer, P. Hennig,
       "Laplace Redux — Effortless Bayesian Deep Learning", NeurIPS 2021.
    """
    import warnings

    import torch

    la, _ = _fit(
        model,
        X_train,
        y_train,
        likelihood=likelihood,
        prior_precision=prior_precision,
        noise_var=noise_var,
    )
    if not optimize_noise:
        with warnings.catch_warnings():  # the classification reminder about link_approx
            warnings.simplefilter("ignore", UserWarning)
            la.optimize_prior_precision(
                pred_type="glm",
                method="marglik",
                n_steps=MARGLIK_STEPS,
                lr=MARGLIK_LR,
                init_prior_prec=float(prior_precision),
                prior_structure="scalar",
            )
        return float(la.prior_precision.reshape(-1)[0]), float(noise_var)
    if likelihood != "regression":
        raise ValueError(
            f"optimize_noise=True needs likelihood='regression'; got likelihood={likelihood!r}"
        )
    dtype = X_train.dtype
    log_prior = torch.tensor([math.log(float(prior_precision))], dtype=dtype, requires_grad=True)
    log_sigma = torch.tensor([0.5 * math.log(noise_var)], dtype=dtype, requires_grad=True)
    optimizer = torch.optim.Adam([log_prior, log_sigma], lr=MARGLIK_LR)
    for _ in range(MARGLIK_STEPS):
        optimizer.zero_grad()
        neg_marglik = -la.log_marginal_likelihood(log_prior.exp(), log_sigma.exp())
        neg_marglik.backward()
        optimizer.step()
    return float(log_prior.detach().exp()), float(log_sigma.detach().exp() ** 2)


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
    """``hessian_structure="diag"`` (``DiagLaplace``; on a subset ``DiagSubnetLaplace``):
    its GLM variances."""
    fit = {"likelihood": likelihood, "prior_precision": prior_precision, "noise_var": noise_var}
    la, _ = _fit(model, X_train, y_train, **fit, subset=subset, structure="diag")
    return _variances(la, X_test, likelihood)


def kfac_predictive_variance(
    model: Any,
    X_train: Any,
    y_train: Any,
    X_test: Any,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: float,
    convention: str,
    approximation: str | None = None,
) -> np.ndarray:
    """``hessian_structure="kron"`` (``KronLaplace``): its GLM variances; ``convention``
    must be ``"separate"``, the only one laplace-torch has (module docstring); on a network
    with Conv2d layers ``approximation`` goes to curvlinops' ``KFACLinearOperator`` as
    ``asdl_fisher_kwargs={"kfac_approx": approximation}``."""
    if convention != "separate":
        raise NotOffered(f"{NOT_OFFERED['joint-kfac']}; got convention={convention!r}")
    fit = {"likelihood": likelihood, "prior_precision": prior_precision, "noise_var": noise_var}
    options = {}
    if approximation is not None:
        options["asdl_fisher_kwargs"] = {"kfac_approx": approximation}
    la, _ = _fit(model, X_train, y_train, **fit, structure="kron", **options)
    return _variances(la, X_test, likelihood)


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
    """``Laplace(model, lik, subset_of_weights="last_layer", hessian_structure=structure)``
    (``FullLLLaplace``, ``DiagLLLaplace``, ``KronLLLaplace``): its GLM variances; binary
    models are refused (module docstring)."""
    import torch

    if likelihood == "binary":
        raise NotOffered(NOT_OFFERED["binary-last-layer"])
    laplace = _laplace_torch()
    net, lik, loader = _setup(model, X_train, y_train, likelihood)
    prior: Any = prior_precision
    if not isinstance(prior_precision, float | int):
        layer = [m for m in model.modules() if isinstance(m, torch.nn.Linear)][-1]
        ids, start, S = {id(layer.weight), id(layer.bias)}, 0, []
        for t in model.parameters():
            if id(t) in ids:
                S.extend(range(start, start + int(t.numel())))
            start += int(t.numel())
        prior = _prior(prior_precision, np.asarray(S), X_train.dtype)
    la = laplace.Laplace(
        net,
        lik,
        subset_of_weights="last_layer",
        hessian_structure=structure,
        prior_precision=_prior(prior, None, X_train.dtype),
        **_noise(likelihood, noise_var),
    )
    la.fit(loader)
    if likelihood == "regression":
        _, f_var = la(X_test, pred_type="glm")
        return f_var.reshape(len(X_test)).detach().double().numpy()
    Js, _ = la.backend.last_layer_jacobians(X_test)
    return la.functional_variance(Js).diagonal(dim1=1, dim2=2).detach().double().numpy()


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
    """``Laplace(..., hessian_structure=structure, backend=CurvlinopsEF)`` (``FullLaplace``
    or ``DiagLaplace`` with the empirical Fisher): its GLM variances (module docstring)."""
    from laplace import curvature

    if structure not in ("full", "diag"):
        raise ValueError(f"structure must be 'full' or 'diag'; got structure={structure!r}")
    _laplace_torch()
    fit = {"likelihood": likelihood, "prior_precision": prior_precision, "noise_var": noise_var}
    backend = getattr(curvature, EF_BACKEND)
    la, _ = _fit(model, X_train, y_train, **fit, structure=structure, backend=backend)
    return _variances(la, X_test, likelihood)


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
    """``la(X_test, pred_type="glm", link_approx=link, n_samples=n_samples)`` of the full
    Laplace approximation (module docstring)."""
    import torch

    if likelihood not in ("binary", "multiclass"):
        raise ValueError(
            f"class probabilities need a classification likelihood; got {likelihood!r}"
        )
    la, _ = _fit(
        model,
        X_train,
        y_train,
        likelihood=likelihood,
        prior_precision=prior_precision,
        noise_var=noise_var,
    )
    diagonal = likelihood == "binary" and link == "mc"
    with torch.random.fork_rng(), torch.no_grad():
        torch.manual_seed(int(seed))
        p = la(
            X_test,
            pred_type="glm",
            link_approx=link,
            n_samples=int(n_samples),
            diagonal_output=diagonal,
        )
    p = p.detach().double().numpy()
    return p[:, 1] if likelihood == "binary" else p


def _mask(name: str):
    def select_subset(
        model: Any,
        X_train: Any,
        y_train: Any,
        *,
        likelihood: str,
        prior_precision: Any,
        noise_var: float,
        k: int,
    ) -> np.ndarray:
        laplace = _laplace_torch()
        from laplace.utils import subnetmask

        net, lik, loader = _setup(model, X_train, y_train, likelihood)
        if name == "largest_magnitude":
            mask = subnetmask.LargestMagnitudeSubnetMask(net, n_params_subnet=int(k))
        elif name == "subnet_diagonal":
            kw = {
                "prior_precision": _prior(prior_precision, None, X_train.dtype),
                **_noise(likelihood, noise_var),
            }
            diag = laplace.Laplace(
                net, lik, subset_of_weights="all", hessian_structure="diag", **kw
            )
            mask = subnetmask.LargestVarianceDiagLaplaceSubnetMask(net, int(k), diag)
        else:
            mask = subnetmask.LastLayerSubnetMask(net)
        return mask.select(loader).detach().cpu().numpy()

    select_subset.__name__ = f"select_{name}"
    return select_subset


predictive_variance.subset_masks = {
    "largest_magnitude": _mask("largest_magnitude"),
    "subnet_diagonal": _mask("subnet_diagonal"),
    "neural_linear": _mask("neural_linear"),
}
predictive_variance.posterior_samples = posterior_samples
predictive_variance.structured_posterior_samples = structured_posterior_samples
predictive_variance.log_marginal_likelihood = log_marginal_likelihood
predictive_variance.low_rank_predictive_variance = low_rank_predictive_variance
predictive_variance.optimize_prior = optimize_prior
predictive_variance.diagonal_predictive_variance = diagonal_predictive_variance
predictive_variance.kfac_predictive_variance = kfac_predictive_variance
predictive_variance.last_layer_predictive_variance = last_layer_predictive_variance
predictive_variance.ef_predictive_variance = ef_predictive_variance
predictive_variance.predictive_probabilities = predictive_probabilities
predictive_variance.low_rank_log_marginal_likelihood = low_rank_log_marginal_likelihood


#: The curvature backend of ``hessian_predictive_variance`` (a name in ``laplace.curvature``).
HESSIAN_BACKEND = "CurvlinopsHessian"


def hessian_predictive_variance(
    model: Any,
    X_train: Any,
    y_train: Any,
    X_test: Any,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: float,
) -> np.ndarray:
    """``Laplace(..., hessian_structure="full", backend=CurvlinopsHessian)`` (``FullLaplace``
    with curvlinops' ``HessianLinearOperator`` of its loss: the true Hessian of the negative
    log-likelihood, ``MSELoss(reduction="sum")`` times its factor ½ and 1/σ0² for regression,
    ``CrossEntropyLoss(reduction="sum")`` for classification), its GLM variances; a binary
    model runs as [0, f], whose cross-entropy is the Bernoulli negative log-likelihood of f,
    so its Hessian in θ is the Bernoulli one."""
    from laplace import curvature

    _laplace_torch()
    fit = {"likelihood": likelihood, "prior_precision": prior_precision, "noise_var": noise_var}
    backend = getattr(curvature, HESSIAN_BACKEND)
    la, _ = _fit(model, X_train, y_train, **fit, structure="full", backend=backend)
    return _variances(la, X_test, likelihood)


predictive_variance.hessian_predictive_variance = hessian_predictive_variance
