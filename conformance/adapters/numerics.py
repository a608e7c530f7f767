"""laplace-lab's own kernels behind the conformance contract (every capability).

``laplace-lab validate --target laplace_lab.conformance.adapters.numerics:predictive_variance``

Jacobians from :func:`laplace_lab.numerics.per_sample_jacobian`, the GGN factor
:class:`laplace_lab.numerics.GGN` (multiclass without the ε-jitter, as the contract states Ω),
variances from :func:`~laplace_lab.numerics.predictive_variance` /
:func:`~laplace_lab.numerics.subnetwork_variance` (Woodbury, float32 evaluated in float64),
masks from the selection registry, low rank from
:class:`~laplace_lab.numerics.LowRankLaplace` (thick-restart Lanczos), empirical Bayes from
the evidence of :class:`~laplace_lab.numerics.laplace_variants.SpectralLaplace` maximised by
Brent's method in log α (nested in log σ0² when the noise is optimised), diagonal Laplace
from :func:`~laplace_lab.numerics.laplace_variants.diagonal_laplace_variance` on the same
GGN (on a subset, on the GGN of its columns), KFAC from
:func:`laplace_lab.numerics.kfac.fit_kfac` and EKFAC from
:func:`laplace_lab.numerics.ekfac.fit_ekfac` (both weight–bias conventions; for C logits
the type-2 output factor Σ_n D_nᵀ H_n D_n, variances (M, C)),
empirical-Fisher Laplace from :func:`laplace_lab.numerics.empirical_fisher.empirical_fisher`
(the per-sample gradients of the negative log-likelihood as the rows of a GGN factor) through
the same full and diagonal variances,
structured posterior samples (:func:`structured_posterior_samples`) from the diagonal of
the same GGN, from the eigendecompositions of ``fit_kfac``'s factors (:func:`kfac_draws`)
and from ``LowRankLaplace``'s eigenpairs by perturbation and solve (``LowRankLaplace.draws``),
class probabilities from the logits' Gaussian (covariance G Ω⁻¹ Gᵀ by Woodbury in float64)
through :func:`~laplace_lab.numerics.probit_probability`,
:meth:`~laplace_lab.numerics.GaussianPredictive.probabilities` (Monte Carlo) and
:func:`~laplace_lab.numerics.laplace_bridge.bridge_probability`.
Computations run in the model's dtype on torch tensors.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from laplace_lab._checks import one_of, positive_float, positive_int
from laplace_lab._random import as_generator
from laplace_lab.conformance.adapters._parameters import parameter_offsets, subset_indices
from laplace_lab.conformance.adapters._streamed import (
    DENSE_LIMIT_BYTES,
    streamed_variance,
    weighted_jacobian_bytes,
)
from laplace_lab.conformance.contract import (
    EF_STRUCTURES,
    KFAC_APPROXIMATIONS,
    KFAC_CONVENTIONS,
    LAST_LAYER_STRUCTURES,
    MASK_METHODS,
    SAMPLE_STRUCTURES,
)
from laplace_lab.numerics import (
    GGN,
    GaussianPredictive,
    LowRankLaplace,
    SubnetProblem,
    cholesky,
    parameter_layout,
    per_sample_jacobian,
    probit_probability,
    select,
    subnetwork_variance,
    to_numpy,
)
from laplace_lab.numerics import predictive_variance as _full_variance
from laplace_lab.numerics.ekfac import fit_ekfac
from laplace_lab.numerics.empirical_fisher import empirical_fisher
from laplace_lab.numerics.kfac import KFACLaplace, fit_kfac
from laplace_lab.numerics.laplace_bridge import bridge_probability
from laplace_lab.numerics.laplace_variants import SpectralLaplace, diagonal_laplace_variance

__all__ = ["predictive_variance"]


def _outputs(model: Any, X: Any) -> Any:
    import torch

    with torch.no_grad():
        f = model(X)
    return f.reshape(f.shape[0], -1)


def _ggn(model: Any, X: Any, likelihood: str, noise_var: float, prior_precision: Any) -> GGN:
    J = per_sample_jacobian(model, X)  # (N, p) or (N, C, p) in the model's dtype
    f = _outputs(model, X)
    if likelihood == "regression":
        return GGN.regression(J, noise_var=noise_var, prior_precision=prior_precision)
    if likelihood == "multioutput-regression":
        J = J if J.ndim == 3 else J[:, None, :]
        return GGN.multi_output_regression(J, noise_var=noise_var, prior_precision=prior_precision)
    if likelihood == "binary":
        return GGN.binary(J, f[:, 0], prior_precision=prior_precision)
    return GGN.multiclass(J, f, prior_precision=prior_precision, eps=0.0)


def _test_rows(model: Any, X_test: Any, likelihood: str) -> Any:
    return per_sample_jacobian(model, X_test)  # (M, p) or (M, C, p)


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
    """Epistemic variances gᵀΩ⁻¹g (g_Sᵀ Ω_SS⁻¹ g_S on a subset); the conformance contract.
    Ω = GGN(θ̂) + V does not depend on a prior mean μ0 given θ̂ (``prior_mean`` unused).
    When the weighted Jacobian of the data would exceed :data:`._streamed.DENSE_LIMIT_BYTES`
    (many outputs) and all parameters are asked for, Ω is accumulated a chunk of rows at a
    time (:func:`._streamed.streamed_variance`)."""
    n_out = _outputs(model, X_test[:1]).shape[1]
    if subset is None and weighted_jacobian_bytes(model, X_train, n_out) > DENSE_LIMIT_BYTES:
        p = parameter_layout(model).p
        V = np.broadcast_to(np.asarray(prior_precision, dtype=np.float64), (p,)).copy()
        return streamed_variance(
            model, X_train, X_test, likelihood=likelihood, prior_vector=V, noise_var=noise_var
        )
    ggn = _ggn(model, X_train, likelihood, noise_var, prior_precision)
    G = _test_rows(model, X_test, likelihood)
    out = _full_variance(ggn, G) if subset is None else subnetwork_variance(ggn, G, subset)
    return to_numpy(out)


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
    """gᵀP⁻¹g with P = (N/n)·GGN of the n rows given + V, N = ``n_data``: the weighted
    Jacobian of the minibatch times √(N/n)."""
    n = int(X_train.shape[0])
    N = positive_int(n_data, "n_data")
    if N < n:
        raise ValueError(f"n_data must be at least the {n} rows given; got n_data={n_data!r}")
    batch = _ggn(model, X_train, likelihood, noise_var, prior_precision)
    ggn = GGN(batch.Jw * math.sqrt(N / n), batch.prior_precision, n_data=N, likelihood="custom")
    return to_numpy(_full_variance(ggn, _test_rows(model, X_test, likelihood)))


def _theta(model: Any) -> np.ndarray:
    import torch

    return torch.nn.utils.parameters_to_vector(model.parameters()).detach().double().numpy()


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
    """θ = θ̂ + L⁻ᵀz on S (Ω_SS = LLᵀ, z ~ N(0, I)), θ̂ elsewhere."""
    ggn = _ggn(model, X_train, likelihood, noise_var, prior_precision)
    theta = _theta(model)
    S = np.arange(theta.size) if subset is None else np.asarray(subset)
    L = np.linalg.cholesky(np.asarray(to_numpy(ggn.submatrix(S)), dtype=np.float64))
    z = as_generator(seed, "seed").standard_normal((int(n_samples), S.size))
    out = np.repeat(theta[None, :], int(n_samples), axis=0)
    out[:, S] += np.linalg.solve(L.T, z.T).T
    return out


def linear_blocks(model: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    """(weight indices (out, in), bias indices (out,)) in the flat θ of every
    ``torch.nn.Linear`` in module order, the layer order of
    :func:`~laplace_lab.numerics.kfac.fit_kfac` (W row-major, as ``parameters()`` holds it)."""
    import torch

    offsets = parameter_offsets(model)
    blocks = []
    for name, m in model.named_modules():
        if isinstance(m, torch.nn.Linear):
            if m.bias is None:
                raise ValueError(f"model's Linear layer {name!r} must have a bias")
            n_out, d = m.weight.shape
            weight = offsets[id(m.weight)] + np.arange(n_out * d).reshape(n_out, d)
            blocks.append((weight, offsets[id(m.bias)] + np.arange(n_out)))
    return blocks


def kfac_draws(model: Any, kfac: KFACLaplace, z: list[np.ndarray]) -> np.ndarray:
    """Δθ ~ N(0, P⁻¹) for KFAC's P = ⊕_l G_l ⊗ A_l + αI from standard normal draws z_l
    (n, out, in + 1), one array per layer: with G = Q_G Λ_G Q_Gᵀ and A = Q_A Λ_A Q_Aᵀ,
    P_l = (Q_G ⊗ Q_A)(Λ_G ⊗ Λ_A + αI)(Q_G ⊗ Q_A)ᵀ, so the layer's [W b] is
    M = Q_G (z ⊙ (λ_G,i λ_A,j + α)^{-1/2}) Q_Aᵀ (row-major vec(Q_G X Q_Aᵀ) = (Q_G ⊗ Q_A) vec X);
    (n, p) float64 (docs/mathematics.md, 9.14).

    References
    ----------
    .. [1] H. Ritter, A. Botev, D. Barber, "A Scalable Laplace Approximation for Neural
       Networks", ICLR 2018, §3 (sampling the Kronecker-factored posterior).
    """
    blocks = linear_blocks(model)
    n = z[0].shape[0]
    out = np.zeros((n, sum(int(t.numel()) for t in model.parameters())))
    layers = zip(kfac.eig_A, kfac.eig_G, blocks, z, strict=True)
    for (lA, QA), (lG, QG), (weight, bias), zl in layers:
        scale = 1.0 / np.sqrt(lG[:, None] * lA[None, :] + kfac.prior_precision)
        M = QG @ (zl * scale) @ QA.T  # (n, out, in + 1)
        out[:, weight.reshape(-1)] = M[:, :, :-1].reshape(n, -1)
        out[:, bias] = M[:, :, -1]
    return out


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
    """θ̂ + Δθ with Δθ ~ N(0, P⁻¹): ``"diag"`` z/√diag(Ω) from the GGN's diagonal,
    ``"kron"`` :func:`kfac_draws` of :func:`~laplace_lab.numerics.kfac.fit_kfac`
    (``convention``), ``"low_rank"`` :meth:`~laplace_lab.numerics.LowRankLaplace.draws` of
    :class:`~laplace_lab.numerics.LowRankLaplace` (``rank``, Lanczos seeded 0); the standard
    normal draws from ``numpy.random.default_rng(seed)``; (n_samples, p) float64."""
    one_of(structure, "structure", SAMPLE_STRUCTURES)
    n = positive_int(n_samples, "n_samples")
    rng = as_generator(seed, "seed")
    theta = _theta(model)
    if structure == "kron":
        kfac = fit_kfac(
            model,
            X_train,
            likelihood=likelihood,
            prior_precision=positive_float(prior_precision, "prior_precision"),
            noise_var=noise_var,
            convention=one_of(convention, "convention", KFAC_CONVENTIONS),
        )
        z = [
            rng.standard_normal((n, QG.shape[0], QA.shape[0]))
            for (_, QA), (_, QG) in zip(kfac.eig_A, kfac.eig_G, strict=True)
        ]
        return theta + kfac_draws(model, kfac, z)
    ggn = _ggn(model, X_train, likelihood, noise_var, prior_precision)
    if structure == "diag":
        d = np.asarray(to_numpy(ggn.diagonal()), dtype=np.float64)
        return theta + rng.standard_normal((n, theta.size)) / np.sqrt(d)
    low = LowRankLaplace.from_ggn(ggn, positive_int(rank, "rank"), rng=0)
    z = rng.standard_normal((n, theta.size))
    return theta + np.asarray(to_numpy(low.draws(z, rng.standard_normal((n, low.rank)))))


def _log_likelihood(f: Any, y: Any, likelihood: str, noise_var: float) -> float:
    """log p(y | f) summed over the training points (float64)."""
    import torch

    if likelihood == "regression":
        r = y.double() - f[:, 0]
        return -0.5 * float(r @ r) / noise_var - 0.5 * r.numel() * math.log(
            2 * math.pi * noise_var
        )
    if likelihood == "multioutput-regression":  # Σ_n Σ_c log N(y_nc | f_nc, σ_c²)
        r = (y.double().reshape(f.shape) - f).numpy()
        s2 = np.broadcast_to(np.asarray(noise_var, dtype=np.float64), (f.shape[1],))
        return float(
            -0.5 * np.sum(r * r / s2) - 0.5 * f.shape[0] * np.sum(np.log(2 * math.pi * s2))
        )
    if likelihood == "binary":
        return -float(
            torch.nn.functional.binary_cross_entropy_with_logits(
                f[:, 0], y.double(), reduction="sum"
            )
        )
    return -float(torch.nn.functional.cross_entropy(f, y.long(), reduction="sum"))


def _log_joint(model: Any, X_train: Any, y_train: Any, likelihood: str, noise_var, V, prior_mean):
    """log p(y|θ̂) + log p(θ̂) + (p/2) log 2π, the prior N(μ0, V⁻¹) (μ0 zero by default)."""
    f = _outputs(model, X_train).double()
    loglik = _log_likelihood(f, y_train, likelihood, noise_var)
    theta = _theta(model)
    if prior_mean is not None:
        theta = theta - np.broadcast_to(np.asarray(prior_mean, dtype=np.float64), theta.shape)
    log_prior = -0.5 * theta @ (V * theta) + 0.5 * np.sum(np.log(V))
    return float(loglik + log_prior)


def _logdet_lemma(B: np.ndarray, V: np.ndarray) -> float:
    """log det(BBᵀ + diag(V)) = Σ log V + log det(I + BᵀV⁻¹B) (matrix determinant lemma)."""
    K = (B / V[:, None]).T @ B + np.eye(B.shape[1])
    return float(np.sum(np.log(V)) + 2.0 * np.sum(np.log(np.diag(cholesky(K)))))


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
    """log p(y|θ̂) + log p(θ̂) + (p/2) log 2π − ½ log det Ω, with
    log det Ω = Σ log V + log det(I + J_w V⁻¹ J_wᵀ) (matrix determinant lemma) and the prior
    N(μ0, V⁻¹) (``prior_mean`` μ0, zero by default)."""
    ggn = _ggn(model, X_train, likelihood, noise_var, prior_precision)
    V = np.asarray(to_numpy(ggn.prior_precision), dtype=np.float64)
    joint = _log_joint(model, X_train, y_train, likelihood, noise_var, V, prior_mean)
    Jw = np.asarray(to_numpy(ggn.Jw), dtype=np.float64)
    return joint - 0.5 * _logdet_lemma(Jw.T, V)


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
) -> float:
    """The evidence with Ω_r = U diag(λ) Uᵀ + V, (λ, U) the top-``rank`` eigenpairs of
    J_wᵀJ_w from thick-restart Lanczos (seeded, as for the low-rank variances):
    log det Ω_r = Σ log V + log det(I + diag(√λ) UᵀV⁻¹U diag(√λ))."""
    ggn = _ggn(model, X_train, likelihood, noise_var, prior_precision)
    V = np.asarray(to_numpy(ggn.prior_precision), dtype=np.float64)
    low = LowRankLaplace.from_ggn(ggn, positive_int(rank, "rank"), rng=0)
    U = np.asarray(to_numpy(low.eigenvectors), dtype=np.float64)
    B = U * np.sqrt(np.asarray(low.eigenvalues, dtype=np.float64))
    joint = _log_joint(model, X_train, y_train, likelihood, noise_var, V, prior_mean)
    return joint - 0.5 * _logdet_lemma(B, V)


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
    """Variances under Ω_r = U_r diag(λ_r) U_rᵀ + V from thick-restart Lanczos (seeded)."""
    ggn = _ggn(model, X_train, likelihood, noise_var, prior_precision)
    low = LowRankLaplace.from_ggn(ggn, rank, rng=0)
    G = _test_rows(model, X_test, likelihood)
    flat = G.reshape(-1, G.shape[-1])
    return to_numpy(low.predictive_variance(flat)).reshape(tuple(G.shape[:-1]))


def evidence_function(model: Any, X_train: Any, y_train: Any, *, likelihood: str):
    """L(α, σ0²): the Laplace log marginal likelihood at the model's parameters θ̂.

    One eigendecomposition of the unweighted GGN part (regression: JᵀJ; classification: the
    GGN) in :class:`SpectralLaplace`, then each evaluation is O(min(N′, p)): with
    λ = α σ0² and ‖θ̂‖²/σ0², ``SpectralLaplace.log_evidence`` is exactly the α-dependent part
    ½ Σ_i [log λ − log(μ_i + λ)] − λ‖θ̂‖²/(2σ0²) (docs/mathematics.md, "Empirical Bayes at a
    fixed MAP"); classification has σ0² = 1.
    """
    ggn = _ggn(model, X_train, likelihood, 1.0, 1.0)
    spectral = SpectralLaplace(ggn.Jw)
    theta = _theta(model)
    t2 = float(theta @ theta)
    f = _outputs(model, X_train).double()

    def evidence(alpha: float, noise_var: float) -> float:
        lam = alpha * noise_var
        part = float(spectral.log_evidence([lam], t2 / noise_var)[0])
        return _log_likelihood(f, y_train, likelihood, noise_var) + part

    return evidence


def maximise_log_scale(fn, start: float) -> float:
    """argmax_x fn(x) over x > 0 by Brent's method in log x, bracketed downhill from
    ``start`` (``fn`` unimodal in log x)."""
    from scipy.optimize import minimize_scalar

    a0 = math.log(start)
    res = minimize_scalar(
        lambda a: -fn(math.exp(a)),
        bracket=(a0 - 0.5, a0 + 0.5),
        method="brent",
        options={"xtol": 1e-12, "maxiter": 500},
    )
    if not res.success:
        raise RuntimeError(f"Brent's method did not converge: {res.message}")
    return math.exp(float(res.x))


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
    """The α (and σ0²) maximising the Laplace evidence at θ̂, from the starting values.

    The evidence is strictly concave in (log α, log σ0²), so Brent's method in log α (and,
    when ``optimize_noise``, an outer Brent search on the profile in log σ0²) finds the
    unique optimum.

    Parameters
    ----------
    model : torch.nn.Module
        At its MAP θ̂, which stays fixed.
    X_train, y_train : torch.Tensor
        The training data (the conformance contract).
    likelihood : {"regression", "binary", "multiclass"}
    prior_precision : float
        The starting α > 0 (isotropic prior).
    noise_var : float
        σ0² > 0: the starting value when ``optimize_noise``, else kept.
    optimize_noise : bool
        Optimise σ0² too (regression only).

    Returns
    -------
    (float, float)
        (α*, σ0²*), σ0²* = ``noise_var`` unless ``optimize_noise``.

    References
    ----------
    .. [1] D. J. C. MacKay, "Bayesian interpolation", Neural Computation 4(3) (1992).
    .. [2] A. Immer, M. Bauer, V. Fortuin, G. Rätsch, M. E. Khan, "Scalable marginal
       likelihood estimation for model selection in deep learning", ICML 2021, §3.
    """
    one_of(likelihood, "likelihood", ("regression", "binary", "multiclass"))
    alpha0 = positive_float(prior_precision, "prior_precision")
    s0 = positive_float(noise_var, "noise_var")
    if not isinstance(optimize_noise, bool):
        raise TypeError(f"optimize_noise must be a bool; got {optimize_noise!r}")
    if optimize_noise and likelihood != "regression":
        raise ValueError(
            f"optimize_noise=True needs likelihood='regression'; got likelihood={likelihood!r}"
        )
    evidence = evidence_function(model, X_train, y_train, likelihood=likelihood)
    if not optimize_noise:
        return maximise_log_scale(lambda a: evidence(a, s0), alpha0), s0

    def profile(s2: float) -> float:
        return evidence(maximise_log_scale(lambda a: evidence(a, s2), alpha0), s2)

    s2 = maximise_log_scale(profile, s0)
    return maximise_log_scale(lambda a: evidence(a, s2), alpha0), s2


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
    """gᵀ diag(Ω)⁻¹ g: the factorised Laplace posterior N(θ̂, diag(Ω)⁻¹); on a subset S the
    diagonal subnetwork Laplace g_Sᵀ diag(Ω_SS)⁻¹ g_S, from the GGN of the weighted
    Jacobian's columns S and the prior V_S (the test Jacobian's columns S in the same order)."""
    import torch

    ggn = _ggn(model, X_train, likelihood, noise_var, prior_precision)
    G = _test_rows(model, X_test, likelihood)
    if subset is None:
        return diagonal_laplace_variance(ggn, G)
    S = torch.as_tensor(subset_indices(model, subset))
    sub = GGN(ggn.weighted_columns(S), ggn.prior_precision[S], n_data=ggn.n_data)
    return diagonal_laplace_variance(sub, G[..., S])


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
    approximation: str = "expand",
) -> np.ndarray:
    """gᵀP⁻¹g of KFAC Laplace (:func:`~laplace_lab.numerics.kfac.fit_kfac`), the isotropic
    prior added through the factors' eigendecompositions; ``convention`` "joint" or
    "separate"; ``approximation`` "expand" or "reduce" for Conv2d layers (the cases pass it
    on networks with Conv2d layers only; the two agree on Linear layers)."""
    kfac = fit_kfac(
        model,
        X_train,
        likelihood=likelihood,
        prior_precision=positive_float(prior_precision, "prior_precision"),
        noise_var=noise_var,
        convention=convention,
        approximation=one_of(approximation, "approximation", KFAC_APPROXIMATIONS),
    )
    return kfac.variance(model, X_test)


def ekfac_predictive_variance(
    model: Any,
    X_train: Any,
    y_train: Any,
    X_test: Any,
    *,
    likelihood: str,
    prior_precision: Any,
    noise_var: float,
    convention: str,
) -> np.ndarray:
    """gᵀP⁻¹g of EKFAC Laplace (:func:`~laplace_lab.numerics.ekfac.fit_ekfac`): KFAC's
    eigenbasis, the exact second moments as eigenvalues, the isotropic prior added exactly."""
    ekfac = fit_ekfac(
        model,
        X_train,
        likelihood=likelihood,
        prior_precision=positive_float(prior_precision, "prior_precision"),
        noise_var=noise_var,
        convention=convention,
    )
    return ekfac.variance(model, X_test)


def _last_layer(model: Any) -> np.ndarray:
    """The [W, b] indices of the last ``torch.nn.Linear`` module in the flat parameters."""
    import torch

    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    if not linears or linears[-1].bias is None:
        raise ValueError("last-layer Laplace needs a last torch.nn.Linear layer with a bias")
    ids = {id(linears[-1].weight), id(linears[-1].bias)}
    S, start = [], 0
    for t in model.parameters():
        if id(t) in ids:
            S.append(np.arange(start, start + int(t.numel())))
        start += int(t.numel())
    return np.concatenate(S)


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
    """Last-layer Laplace variances: ``"full"`` by
    :func:`~laplace_lab.numerics.subnetwork_variance` on the last layer's [W, b], ``"diag"``
    by :func:`~laplace_lab.numerics.laplace_variants.diagonal_laplace_variance` with the
    test Jacobian zero off the last layer (diag(Ω)⁻¹ is separable), ``"kron"`` by the last
    layer's term of :func:`~laplace_lab.numerics.kfac.fit_kfac` (separate convention)."""
    one_of(structure, "structure", LAST_LAYER_STRUCTURES)
    S = _last_layer(model)
    if structure == "kron":
        kfac = fit_kfac(
            model,
            X_train,
            likelihood=likelihood,
            prior_precision=positive_float(prior_precision, "prior_precision"),
            noise_var=noise_var,
            convention="separate",
        )
        return kfac.variance(model, X_test, layers=slice(-1, None))
    ggn = _ggn(model, X_train, likelihood, noise_var, prior_precision)
    G = _test_rows(model, X_test, likelihood)
    if structure == "full":
        return to_numpy(subnetwork_variance(ggn, G, S))
    off = np.setdiff1d(np.arange(G.shape[-1]), S)
    G = G.clone()
    G[..., off] = 0.0  # g_Sᵀ diag(Ω_SS)⁻¹ g_S: the other columns contribute nothing
    return diagonal_laplace_variance(ggn, G)


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
    """Empirical-Fisher Laplace variances: P = Σ_n g_n g_nᵀ + V from
    :func:`~laplace_lab.numerics.empirical_fisher.empirical_fisher`, then gᵀP⁻¹g by
    :func:`~laplace_lab.numerics.predictive_variance` (``"full"``) or gᵀ diag(P)⁻¹ g by
    :func:`~laplace_lab.numerics.laplace_variants.diagonal_laplace_variance` (``"diag"``)."""
    one_of(structure, "structure", EF_STRUCTURES)
    ef = empirical_fisher(
        model,
        X_train,
        y_train,
        likelihood=likelihood,
        prior_precision=prior_precision,
        noise_var=noise_var,
    )
    G = _test_rows(model, X_test, likelihood)
    if structure == "full":
        return to_numpy(_full_variance(ef, G))
    return diagonal_laplace_variance(ef, G)


def logit_covariance(ggn: GGN, G: Any) -> np.ndarray:
    """G_m Ω⁻¹ G_mᵀ per test point, (M, C, C) float64, by Woodbury on the N′ × N′ kernel
    (Ω = J_wᵀJ_w + V): G D Gᵀ − (J_w D Gᵀ)ᵀ (I + J_w D J_wᵀ)⁻¹ (J_w D Gᵀ), D = V⁻¹."""
    Jw = np.asarray(to_numpy(ggn.Jw), dtype=np.float64)
    D = 1.0 / np.asarray(to_numpy(ggn.prior_precision), dtype=np.float64)
    G = np.asarray(to_numpy(G), dtype=np.float64)
    M = G.shape[0]
    rows = G.reshape(-1, G.shape[-1])  # (M·C, p)
    L = np.linalg.cholesky((Jw * D) @ Jw.T + np.eye(Jw.shape[0]))
    Z = np.linalg.solve(L, (Jw * D) @ rows.T)  # L⁻¹ J_w D Gᵀ
    cov = (rows * D) @ rows.T - Z.T @ Z
    blocks = cov.reshape(M, -1, M, cov.shape[0] // M)
    S = np.einsum("mcmd->mcd", blocks)
    return 0.5 * (S + np.swapaxes(S, 1, 2))


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
    """Class probabilities of N(f̂(x*), G Ω⁻¹ Gᵀ) under ``link`` ("probit", "mc", "bridge")."""
    one_of(likelihood, "likelihood", ("binary", "multiclass"))
    ggn = _ggn(model, X_train, likelihood, noise_var, prior_precision)
    G = _test_rows(model, X_test, likelihood)
    G = G[:, None, :] if likelihood == "binary" else G  # (M, C, p)
    mean = np.asarray(to_numpy(_outputs(model, X_test)), dtype=np.float64)
    cov = logit_covariance(ggn, G)
    if link == "probit":
        p = probit_probability(mean, np.diagonal(cov, axis1=1, axis2=2))
    elif link == "mc":
        gaussian = GaussianPredictive(mean, cov, likelihood)
        p = gaussian.probabilities(link="mc", samples=int(n_samples), rng=int(seed))
    elif link == "bridge":
        if likelihood != "multiclass":
            raise ValueError("link='bridge' needs likelihood='multiclass' (C ≥ 3 logits)")
        p = bridge_probability(mean, cov)
    else:
        one_of(link, "link", ("probit", "mc", "bridge"))
    return p[:, 0] if likelihood == "binary" else p


def _selector(name: str):
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
        ggn = _ggn(model, X_train, likelihood, noise_var, prior_precision)
        layout = parameter_layout(model)
        problem = SubnetProblem(ggn, theta=_theta(model), layer_sizes=layout.layer_sizes())
        return select(name, problem, k)

    select_subset.__name__ = f"select_{name}"
    return select_subset


predictive_variance.subset_masks = {name: _selector(name) for name in MASK_METHODS}
predictive_variance.posterior_samples = posterior_samples
predictive_variance.structured_posterior_samples = structured_posterior_samples
predictive_variance.log_marginal_likelihood = log_marginal_likelihood
predictive_variance.low_rank_predictive_variance = low_rank_predictive_variance
predictive_variance.optimize_prior = optimize_prior
predictive_variance.diagonal_predictive_variance = diagonal_predictive_variance
predictive_variance.kfac_predictive_variance = kfac_predictive_variance
predictive_variance.ekfac_predictive_variance = ekfac_predictive_variance
predictive_variance.last_layer_predictive_variance = last_layer_predictive_variance
predictive_variance.ef_predictive_variance = ef_predictive_variance
predictive_variance.predictive_probabilities = predictive_probabilities
predictive_variance.minibatch_predictive_variance = minibatch_predictive_variance
predictive_variance.low_rank_log_marginal_likelihood = low_rank_log_marginal_likelihood


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
    """gᵀΩ_H⁻¹g with Ω_H = H + V, H the true Hessian of the negative log-likelihood at the
    model's parameters (:func:`laplace_lab.numerics.network_hessian.network_hessian`), by
    Cholesky in float64; a ValueError when Ω_H is not positive definite."""
    from laplace_lab.numerics.network_hessian import network_hessian

    H = network_hessian(model, X_train, y_train, likelihood=likelihood, noise_var=noise_var)
    V = np.broadcast_to(np.asarray(prior_precision, dtype=np.float64), (H.shape[0],))
    try:
        L = np.linalg.cholesky(H + np.diag(V))
    except np.linalg.LinAlgError as err:
        raise ValueError(
            "the Hessian precision H + V is not positive definite at the model's parameters"
        ) from err
    G = np.asarray(to_numpy(_test_rows(model, X_test, likelihood)), dtype=np.float64)
    W = np.linalg.solve(L, G.reshape(-1, H.shape[0]).T)
    v = np.sum(W * W, axis=0).reshape(G.shape[0], -1)
    return v if likelihood in ("multiclass", "multioutput-regression") else v[:, 0]


predictive_variance.hessian_predictive_variance = hessian_predictive_variance
