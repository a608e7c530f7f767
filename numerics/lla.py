"""The linearized Laplace predictive of a model that is linear in given features.

The LLA of a trained network f_θ* (Immer et al. 2021; eqs. (1)–(2) of Ortega et al.,
arXiv:2601.21835) is the Gaussian posterior of the model linearised in its parameters,
f(x) ≈ f_θ*(x) + Φ(x)(θ − θ*) with Φ(x) = J_θ*(x) ∈ ℝ^{C×k}: precision
``A = Σ_n Φ_nᵀ Λ_n Φ_n + α I`` (Λ_n the Hessian of −log p(y_n | f) at f_θ*(x_n);
α = 1/σ_p², the precision of the weight prior θ ~ N(0, σ_p² I), not the noise variance σ0²
of regression) and predictive ``N(f_θ*(x*), Φ(x*) A⁻¹ Φ(x*)ᵀ)``. Everything depends on Φ
only through the kernel Φ(x) Φ(x')ᵀ (the NTK when Φ = J), so the same code serves

- the exact LLA (Φ = J, small k; :class:`LinearizedLaplace`),
- the last-layer LLA (Φ = the last layer's columns of J; ``subset="last_layer"``),
- ScaLLA (Φ = g_φ, the surrogate's m features; :mod:`laplace_lab.numerics.scalla`).

:class:`FeatureLaplace` holds one eigendecomposition of the smaller of the two Grams,
ΦᵀΛΦ (k × k) or Λ^{½}ΦΦᵀΛ^{½} (N·C × N·C), so that any isotropic prior precision α, and the
Laplace evidence over a grid of α, cost no further factorisation
(docs/mathematics.md, "7.6 ScaLLA"). Arrays are NumPy float64 on the host.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import expit

from laplace_lab._checks import (
    nonnegative_float,
    one_of,
    positive_float,
    positive_int,
    real_array,
)
from laplace_lab._random import as_generator
from laplace_lab.numerics.ggn import GGN
from laplace_lab.numerics.probit import probit_probability

__all__ = ["FeatureLaplace", "GaussianPredictive", "LinearizedLaplace", "feature_laplace"]

_LIKELIHOODS = ("regression", "binary", "multiclass")
_LINKS = ("probit", "mc")
#: Test rows (points × outputs) per block of the covariance computation.
_BLOCK_ROWS = 8192


def _as_host(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


@dataclass(frozen=True)
class GaussianPredictive:
    """A Gaussian predictive over the C outputs of M inputs: N(mean_i, covariance_i).

    Attributes
    ----------
    mean : (M, C) ndarray
    covariance : (M, C, C) ndarray
    likelihood : {"regression", "binary", "multiclass"} or None
        The model's likelihood, which decides what :meth:`probabilities` means (None: not
        known; one output is then read as the logit of a binary classifier).
    """

    mean: np.ndarray
    covariance: np.ndarray
    likelihood: str | None = None

    def __post_init__(self) -> None:
        if self.likelihood is None:
            return
        one_of(self.likelihood, "likelihood", _LIKELIHOODS)
        C = int(np.shape(self.mean)[1])
        if self.likelihood == "multiclass" and C < 2:
            raise ValueError(f"likelihood='multiclass' needs C ≥ 2 outputs; got C={C}")
        if self.likelihood == "binary" and C != 1:
            raise ValueError(f"likelihood='binary' needs one output; got C={C}")

    def variance(self) -> np.ndarray:
        """The (M, C) marginal variances, diag(covariance_i)."""
        return np.diagonal(self.covariance, axis1=1, axis2=2).copy()

    def gaussian_entropy(self) -> np.ndarray:
        """½ log det(2πe Σ_i) per input (the "Gaussian" OOD score of Ortega et al., §3).

        Eigenvalues are floored at 1e-12 · max(λ_max, 1e-300) so that a rank-deficient
        covariance gives a finite, very negative entropy.
        """
        lam = np.linalg.eigvalsh(self.covariance)
        floor = 1e-12 * np.maximum(lam[:, -1:], 1e-300)
        C = lam.shape[1]
        return 0.5 * (
            np.sum(np.log(np.maximum(lam, floor)), axis=1) + C * np.log(2 * np.pi * np.e)
        )

    def probabilities(
        self, *, link: str = "probit", samples: int = 1000, rng: Any = None
    ) -> np.ndarray:
        """Class probabilities under the Gaussian over the logits f_i ~ N(mean_i, covariance_i).

        C ≥ 2 logits (multiclass): E[softmax(f)], (M, C). One logit (binary): P(y = 1) =
        E[σ(f)], (M, 1). ``link="probit"``: the probit approximation, σ or softmax of
        μ_c / √(1 + π Σ_cc / 8) (deterministic; :func:`~laplace_lab.numerics.probit_probability`);
        ``link="mc"``: the average over ``samples`` draws from the full Gaussian (needs
        ``rng``). A regression predictive has no class probabilities (ValueError).

        References
        ----------
        .. [1] D. J. C. MacKay, "The evidence framework applied to classification networks",
           Neural Computation 4(5), 1992.
        """
        one_of(link, "link", _LINKS)
        if self.likelihood == "regression":
            raise ValueError(
                "probabilities need a classification likelihood; this predictive has "
                "likelihood='regression'"
            )
        mu = self.mean
        if link == "probit":
            return probit_probability(mu, self.variance())
        samples = positive_int(samples, "samples")
        gen = as_generator(rng)
        L = _psd_cholesky(self.covariance)
        out = np.zeros_like(mu)
        for a in range(0, samples, 256):
            s = min(256, samples - a)
            eps = gen.standard_normal((s, *mu.shape))
            f = np.einsum("mab,smb->sma", L, eps)
            f += mu
            out += (expit(f, out=f) if mu.shape[1] == 1 else _softmax_in_place(f)).sum(axis=0)
        return out / samples


def _softmax_in_place(f: np.ndarray) -> np.ndarray:
    """``scipy.special.softmax(f, axis=-1)`` written over ``f``: the same operations in the same
    order (shift by the maximum, exp, divide by the sum), without temporaries."""
    f -= f.max(axis=-1, keepdims=True)
    np.exp(f, out=f)
    f /= f.sum(axis=-1, keepdims=True)
    return f


def _psd_cholesky(S: np.ndarray) -> np.ndarray:
    """Factors L with L Lᵀ = S for PSD (possibly singular) matrices, via eigh."""
    lam, U = np.linalg.eigh(S)
    return U * np.sqrt(np.clip(lam, 0.0, None))[..., None, :]


def _weighted_rows(
    features: np.ndarray, logits: np.ndarray, likelihood: str, noise_var: float, jitter: float
) -> np.ndarray:
    """The rows Λ_n^{½ᵀ} Φ_n of every point (N·C' × k), from the GGN constructors."""
    if likelihood == "multiclass":
        if features.shape[1] < 2:
            raise ValueError(
                "likelihood='multiclass' needs C ≥ 2 outputs (use likelihood='binary' for one "
                f"logit); got features of shape {features.shape}"
            )
        return np.asarray(GGN.multiclass(features, logits, prior_precision=1.0, eps=jitter).Jw)
    if features.shape[1] != 1:
        raise ValueError(
            f"likelihood={likelihood!r} needs one output; got features of shape {features.shape}"
        )
    if likelihood == "binary":
        return np.asarray(GGN.binary(features[:, 0], logits.reshape(-1), prior_precision=1.0).Jw)
    return np.asarray(GGN.regression(features[:, 0], noise_var=noise_var, prior_precision=1.0).Jw)


@dataclass(frozen=True)
class FeatureLaplace:
    """The Laplace posterior of a model linear in features Φ, with isotropic prior α I.

    Build it with :func:`feature_laplace`. ``covariance(Φ_test)`` is
    Φ(x*) (WᵀW + α I)⁻¹ Φ(x*)ᵀ with W the Hessian-weighted training rows.

    Attributes
    ----------
    rows : (R, k) ndarray
        W: the rows Λ_n^{½ᵀ} Φ_n of all training points.
    eigenvalues, eigenvectors : ndarray
        Of WᵀW (k × k) when R ≥ k, else of W Wᵀ (R × R).
    prior_precision : float
        α.
    """

    rows: np.ndarray
    eigenvalues: np.ndarray
    eigenvectors: np.ndarray
    prior_precision: float

    @property
    def k(self) -> int:
        """Number of features."""
        return int(self.rows.shape[1])

    @property
    def primal(self) -> bool:
        """True when the k × k Gram was decomposed (R ≥ k)."""
        return self.eigenvectors.shape[0] == self.k

    def with_prior_precision(self, prior_precision: float) -> FeatureLaplace:
        """The same posterior under another α (no new factorisation)."""
        alpha = positive_float(prior_precision, "prior_precision")
        return FeatureLaplace(self.rows, self.eigenvalues, self.eigenvectors, alpha)

    def log_det_precision(self, prior_precision: Any = None) -> np.ndarray | float:
        """log det(WᵀW + α I) for α (default: this posterior's; an array gives an array)."""
        a = self.prior_precision if prior_precision is None else prior_precision
        alphas = np.atleast_1d(real_array(a, "prior_precision")).astype(np.float64)
        if not np.all(np.isfinite(alphas) & (alphas > 0)):
            raise ValueError(
                f"prior_precision must be finite and positive; got prior_precision={a!r}"
            )
        lam = np.clip(self.eigenvalues, 0.0, None)
        zeros = self.k - lam.size  # eigenvalues of WᵀW beyond the rank R
        out = np.log(lam[None, :] + alphas[:, None]).sum(axis=1) + zeros * np.log(alphas)
        return float(out[0]) if np.ndim(a) == 0 else out

    def covariance(self, features: Any) -> np.ndarray:
        """Φ(x*) A⁻¹ Φ(x*)ᵀ for every test point: (M, C, k) features in, (M, C, C) out."""
        F = _as_host(features)
        if F.ndim != 3 or F.shape[2] != self.k or F.shape[0] == 0:
            raise ValueError(f"features must have shape (M, C, k) with k={self.k}; got {F.shape}")
        if not np.all(np.isfinite(F)):
            raise ValueError("features must be finite; they contain NaN or Inf")
        M, C, k = F.shape
        alpha, lam, U = (
            self.prior_precision,
            np.clip(self.eigenvalues, 0.0, None),
            self.eigenvectors,
        )
        out = np.empty((M, C, C))
        step = max(1, _BLOCK_ROWS // C)
        for a in range(0, M, step):
            G = F[a : a + step].reshape(-1, k)
            if self.primal:  # A⁻¹ = U (Λ + α)⁻¹ Uᵀ
                Z = (G @ U) / np.sqrt(lam + alpha)
                cov = Z.reshape(-1, C, k) @ Z.reshape(-1, C, k).transpose(0, 2, 1)
            else:  # Woodbury: A⁻¹ = (I − Wᵀ U (Λ + α)⁻¹ Uᵀ W) / α
                Gr = G.reshape(-1, C, k)
                Z = ((G @ self.rows.T) @ U / np.sqrt(lam + alpha)).reshape(-1, C, lam.size)
                cov = (Gr @ Gr.transpose(0, 2, 1) - Z @ Z.transpose(0, 2, 1)) / alpha
            out[a : a + step] = 0.5 * (cov + cov.transpose(0, 2, 1))
        return out


def feature_laplace(
    features: Any,
    logits: Any,
    *,
    likelihood: str,
    prior_precision: float,
    noise_var: float = 1.0,
    jitter: float = 0.0,
) -> FeatureLaplace:
    """The Laplace posterior of f(x) = f*(x) + Φ(x) w, w ~ N(0, α⁻¹ I), at w = 0.

    Precision Σ_n Φ_nᵀ Λ_n Φ_n + α I (eq. (2) of [1]_ with Φ = J); Λ_n is the Hessian of the
    negative log-likelihood at the MAP outputs: 1/σ² (regression), p(1 − p) (binary),
    diag(π) − ππᵀ (multiclass; exact unless ``jitter`` > 0 adds jitter·I).

    Parameters
    ----------
    features : (N, C, k) array or tensor
        Φ(x_n) of the training points (C = 1 for regression and binary).
    logits : (N, C) array or tensor
        f_θ*(x_n) (ignored for regression).
    likelihood : {"regression", "binary", "multiclass"}
    prior_precision : float
        α = 1/σ_p² > 0, the precision of the weight prior θ ~ N(0, σ_p² I).
    noise_var : float
        σ0², the observation noise variance (regression only).
    jitter : float
        ε ≥ 0 added to every multiclass Hessian Λ_n (0: the exact GGN).

    References
    ----------
    .. [1] L. A. Ortega, S. Rodríguez-Santana, D. Hernández-Lobato, "Scalable Linearized Laplace
       Approximation via Surrogate Neural Kernel", arXiv:2601.21835 (2026), §2.1, eq. (2).
    """
    one_of(likelihood, "likelihood", _LIKELIHOODS)
    alpha = positive_float(prior_precision, "prior_precision")
    s2 = positive_float(noise_var, "noise_var")
    F = _as_host(features)
    if F.ndim != 3 or 0 in F.shape:
        raise ValueError(f"features must be a non-empty (N, C, k) array; got shape {F.shape}")
    if not np.all(np.isfinite(F)):
        raise ValueError("features must be finite; they contain NaN or Inf")
    f = _as_host(logits).reshape(F.shape[0], -1)
    W = _weighted_rows(F, f, likelihood, s2, nonnegative_float(jitter, "jitter"))
    R, k = W.shape
    lam, U = np.linalg.eigh(W.T @ W if R >= k else W @ W.T)
    return FeatureLaplace(W, lam, U, alpha)


def _targets(y: Any, f: np.ndarray, likelihood: str) -> np.ndarray:
    """``y`` as (N,) float64 targets of the N training points, checked for ``likelihood``."""
    y = _as_host(y) if hasattr(y, "detach") else np.asarray(y)
    t = real_array(y.astype(np.float64) if y.dtype == bool else y, "y").astype(np.float64)
    N, C = f.shape
    if t.ndim == 2 and t.shape[1] == 1:
        t = t[:, 0]
    if t.shape != (N,):
        raise ValueError(
            f"y must have shape ({N},) (one target per training point); got {t.shape}"
        )
    if not np.all(np.isfinite(t)):
        raise ValueError("y must be finite; it contains NaN or Inf")
    if likelihood == "binary" and not np.all((t == 0) | (t == 1)):
        raise ValueError("y must hold binary labels 0 or 1 (likelihood='binary')")
    if likelihood == "multiclass" and not np.all((t == np.round(t)) & (t >= 0) & (t < C)):
        raise ValueError(f"y must hold integer class labels in [0, {C}) (likelihood='multiclass')")
    return t


def _log_likelihood(f: np.ndarray, y: np.ndarray, likelihood: str, noise_var: float) -> float:
    """log p(y | f) summed over the points (``y`` from :func:`_targets`)."""
    if likelihood == "multiclass":
        z = f - f.max(axis=1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        return float(logp[np.arange(y.size), y.astype(np.int64)].sum())
    f = f.reshape(-1)
    if likelihood == "binary":
        return float(np.sum(y * f - np.logaddexp(0.0, f)))
    r = y - f
    return float(-0.5 * np.sum(r * r) / noise_var - 0.5 * y.size * np.log(2 * np.pi * noise_var))


@dataclass(frozen=True)
class LinearizedLaplace:
    """The linearized Laplace approximation of a torch model from its per-sample Jacobians.

    The dense reference for small p (it forms the N × C × k Jacobian): Φ = J (all
    parameters) or the columns ``subset`` of J (e.g. the last layer). Build it with
    :meth:`fit`.

    Attributes
    ----------
    model : torch.nn.Module
    likelihood : str
    posterior : FeatureLaplace
    subset : (k,) int64 ndarray or None
        The parameter indices of Φ (None: all).
    noise_var : float
    logits : (N, C) ndarray
        f_θ*(x_n) of the training points.
    """

    model: Any
    likelihood: str
    posterior: FeatureLaplace
    subset: np.ndarray | None
    noise_var: float
    logits: np.ndarray

    @classmethod
    def fit(
        cls,
        model: Any,
        X_train: Any,
        *,
        likelihood: str,
        prior_precision: float,
        subset: Any = None,
        noise_var: float = 1.0,
        jitter: float = 0.0,
    ) -> LinearizedLaplace:
        """Accumulate the GGN of eq. (2) of [1]_ over ``X_train`` (one pass) and decompose it.

        Parameters
        ----------
        model : torch.nn.Module
            At its MAP, in eval mode; (N, C) outputs (N or (N, 1) for one output).
        X_train : (N, ...) array or tensor
        likelihood : {"regression", "binary", "multiclass"}
        prior_precision : float
            α = 1/σ_p², the precision of the weight prior θ ~ N(0, σ_p² I).
        subset : None, "last_layer" or sequence of int
            Parameters to linearise in (the others stay at θ*).
        noise_var : float
            σ0², the observation noise variance (regression only).
        jitter : float
            ε ≥ 0 added to every multiclass Hessian (0: the exact GGN of eq. (2)).

        References
        ----------
        .. [1] L. A. Ortega, S. Rodríguez-Santana, D. Hernández-Lobato, "Scalable Linearized
           Laplace Approximation via Surrogate Neural Kernel", arXiv:2601.21835 (2026),
           §2.1, eqs. (1)–(2).
        """
        from laplace_lab.numerics.jacobians import layer_call_order, parameter_layout

        idx = subset
        if isinstance(subset, str):  # the layer the forward pass calls last
            one_of(subset, "subset", ("last_layer",))
            called = layer_call_order(model, X_train)
            if not called:
                raise ValueError(
                    "subset='last_layer' needs the forward pass to call a module that owns "
                    "parameters (it applies them functionally); pass the indices instead"
                )
            idx = parameter_layout(model).layer_indices(called[-1])
        J, f = _jacobian_and_outputs(model, X_train, idx)
        post = feature_laplace(
            J,
            f,
            likelihood=likelihood,
            prior_precision=prior_precision,
            noise_var=noise_var,
            jitter=jitter,
        )
        sub = None if idx is None else np.asarray(idx, dtype=np.int64)
        return cls(model, likelihood, post, sub, float(noise_var), f)

    def with_prior_precision(self, prior_precision: float) -> LinearizedLaplace:
        """The same approximation under another α (no new Jacobians or factorisation)."""
        post = self.posterior.with_prior_precision(prior_precision)
        return LinearizedLaplace(
            self.model, self.likelihood, post, self.subset, self.noise_var, self.logits
        )

    def log_evidence(self, y: Any, prior_precision: Any) -> np.ndarray:
        """The Laplace estimate of log p(y) for each α of ``prior_precision`` (MacKay 1992).

        ``log p(y | θ*) − ½ α ‖θ*_S‖² + (k/2) log α − ½ log det(J_Sᵀ Λ J_S + α I)``, with
        θ*_S the k linearised parameters (the MAP is not re-trained: the post-hoc choice of
        the prior precision, as in §3 of [1]_).

        References
        ----------
        .. [1] L. A. Ortega, S. Rodríguez-Santana, D. Hernández-Lobato, "Scalable Linearized
           Laplace Approximation via Surrogate Neural Kernel", arXiv:2601.21835 (2026), §3.
        """
        from laplace_lab.numerics._layout import trainable_vector

        alphas = np.atleast_1d(real_array(prior_precision, "prior_precision")).astype(float)
        y = _targets(y, self.logits, self.likelihood)
        theta = trainable_vector(self.model)
        if self.subset is not None:
            theta = theta[self.subset]
        ll = _log_likelihood(self.logits, y, self.likelihood, self.noise_var)
        logdet = np.atleast_1d(self.posterior.log_det_precision(alphas))
        k = self.posterior.k
        return ll - 0.5 * alphas * float(theta @ theta) + 0.5 * k * np.log(alphas) - 0.5 * logdet

    def predictive(self, X: Any) -> GaussianPredictive:
        """N(f_θ*(x*), J(x*) Σ J(x*)ᵀ) for every row of ``X``."""
        J, f = _jacobian_and_outputs(self.model, X, self.subset)
        return GaussianPredictive(f, self.posterior.covariance(J), self.likelihood)


def _jacobian_and_outputs(model: Any, X: Any, subset: Any) -> tuple[np.ndarray, np.ndarray]:
    """J (N, C, k) and f (N, C) as float64 host arrays."""
    from laplace_lab.numerics.jacobians import per_sample_jacobian

    J = per_sample_jacobian(model, X, subset=subset).detach().double().cpu().numpy()
    f = model_outputs(model, X)
    return (J[:, None, :] if J.ndim == 2 else J), f


def model_outputs(model: Any, X: Any) -> np.ndarray:
    """f_θ*(X) as a (N, C) float64 host array."""
    import torch

    ref = next(model.parameters())
    Xt = torch.as_tensor(np.asarray(X) if not torch.is_tensor(X) else X)
    Xt = Xt.to(device=ref.device, dtype=ref.dtype if Xt.is_floating_point() else Xt.dtype)
    with torch.no_grad():
        f = torch.cat([model(Xt[a : a + 4096]) for a in range(0, Xt.shape[0], 4096)])
    return f.detach().double().cpu().numpy().reshape(Xt.shape[0], -1)
