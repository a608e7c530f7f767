"""ScaLLA: the linearized Laplace approximation with a learned surrogate neural kernel.

L. A. Ortega, S. Rodríguez-Santana, D. Hernández-Lobato, "Scalable Linearized Laplace
Approximation via Surrogate Neural Kernel", arXiv:2601.21835 (2026), §2. The LLA of a
trained network f_θ* depends on its Jacobians only through the NTK J(x) J(x')ᵀ (§2.1). ScaLLA
trains a surrogate g_φ : 𝒳 → ℝ^{C×m} whose kernel g_φ(x) g_φ(x')ᵀ matches the NTK, using
Jacobian–vector products only (eq. 3; :mod:`laplace_lab.numerics.surrogate_kernel`), and then
computes the LLA with the features Φ(x) = g_φ(x) in place of J(x): the m × m precision
``Σ_n g(x_n)ᵀ Λ_n g(x_n) + α I`` and the predictive ``N(f_θ*(x*), g(x*) A⁻¹ g(x*)ᵀ)``
(:mod:`laplace_lab.numerics.lla`). Context points (eq. 7) make the kernel match away from the
training data; the *biased* target (eq. 9) makes training and context inputs independent
under the learned kernel, for out-of-distribution detection (§2.3).

Cost: training is ``steps`` × (s + 1 forward passes of f_θ* for the JVPs + one forward and
backward pass of g_φ) on batches of fixed size, linear in the number of parameters P;
the precision is one pass over the N training inputs with the surrogate, O(N·C·m²);
a prediction is one surrogate pass, O(C·m²) per input. No C × P Jacobian is formed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from laplace_lab._checks import one_of
from laplace_lab._random import as_generator
from laplace_lab.numerics.lla import (
    FeatureLaplace,
    GaussianPredictive,
    feature_laplace,
    model_outputs,
)
from laplace_lab.numerics.surrogate_kernel import SurrogateFit, train_surrogate

__all__ = ["ScaLLA"]

_LIKELIHOODS = ("regression", "binary", "multiclass")


@dataclass(frozen=True)
class ScaLLA:
    """Scalable linearized Laplace: the LLA in the feature space of a trained surrogate.

    Build it with :meth:`fit`; ``predictive(X)`` gives the Gaussian predictive over the
    outputs, ``kernel(X1, X2)`` the learned kernel.

    Attributes
    ----------
    model : torch.nn.Module
        The trained network f_θ* (the predictive mean).
    likelihood : str
    surrogate : SurrogateFit
        g_φ, its feature scale and training losses.
    posterior : FeatureLaplace
        The LLA posterior in the m-dimensional feature space.

    Examples
    --------
    >>> lla = ScaLLA.fit(model, X_train, likelihood="multiclass", prior_precision=1.0,
    ...                  m=100, context=X_context, biased=True, steps=2000, rng=0)
    >>> pred = lla.predictive(X_test)        # pred.mean (M, C), pred.covariance (M, C, C)
    >>> probs = pred.probabilities(link="mc", rng=1)

    References
    ----------
    .. [1] L. A. Ortega, S. Rodríguez-Santana, D. Hernández-Lobato, "Scalable Linearized Laplace
       Approximation via Surrogate Neural Kernel", arXiv:2601.21835 (2026), §2.
    """

    model: Any
    likelihood: str
    surrogate: SurrogateFit
    posterior: FeatureLaplace

    @classmethod
    def fit(
        cls,
        model: Any,
        X_train: Any,
        *,
        likelihood: str,
        prior_precision: float,
        m: int,
        rng: np.random.Generator | int,
        context: Any = None,
        biased: bool = False,
        surrogate: Any = None,
        steps: int = 2000,
        batch_size: int = 64,
        context_batch_size: int | None = None,
        num_probes: int = 4,
        dist: str = "rademacher",
        lr: float = 1e-3,
        noise_var: float = 1.0,
        progress: bool = True,
    ) -> ScaLLA:
        """Train the surrogate (eq. 3), then accumulate the precision in its feature space.

        Parameters
        ----------
        model : torch.nn.Module
            The trained network at θ*, in eval mode; (N, C) outputs (one output for
            regression and binary).
        X_train : (N, ...) array or tensor
            The training inputs (the data of the LLA precision, eq. 2).
        likelihood : {"regression", "binary", "multiclass"}
        prior_precision : float
            α = 1/σ_p² of the weight prior θ ~ N(0, σ_p² I): the surrogate kernel stands for
            the NTK.
        m : int
            Features per output (the paper: m = 100).
        rng : numpy.random.Generator or int
            The only source of randomness (surrogate initialisation, batches, probes).
        context : (N_c, ...) array or tensor, optional
            Context inputs (eq. 7), e.g. an auxiliary data set resembling the evaluation
            data.
        biased : bool
            Train on the biased target of eq. (9) (needs ``context``).
        surrogate : torch.nn.Module, optional
            g_φ mapping (n, ...) to (n, C·m) or (n, C, m); default: the model's architecture
            with its last Linear layer widened to C·m outputs, re-initialised.
        steps, batch_size, context_batch_size, num_probes, dist, lr, progress
            Training options of :func:`~laplace_lab.numerics.surrogate_kernel.train_surrogate`.
        noise_var : float
            σ0², the observation noise variance (regression only).

        Returns
        -------
        ScaLLA
        """
        one_of(likelihood, "likelihood", _LIKELIHOODS)
        fit = train_surrogate(
            model,
            X_train,
            m=m,
            rng=as_generator(rng),
            context=context,
            biased=biased,
            surrogate=surrogate,
            steps=steps,
            batch_size=batch_size,
            context_batch_size=context_batch_size,
            num_probes=num_probes,
            dist=dist,
            lr=lr,
            progress=progress,
        )
        posterior = feature_laplace(
            fit.features(X_train),
            model_outputs(model, X_train),
            likelihood=likelihood,
            prior_precision=prior_precision,
            noise_var=noise_var,
        )
        return cls(model, likelihood, fit, posterior)

    def features(self, X: Any) -> np.ndarray:
        """g(x) for every row of ``X``: (N, C, m) float64."""
        return self.surrogate.features(X).double().cpu().numpy()

    def kernel(self, X1: Any, X2: Any = None) -> np.ndarray:
        """The learned kernel g(x_i) g(x'_j)ᵀ as an (N1, C, N2, C) array (X2 = X1 by default)."""
        F1 = self.features(X1)
        F2 = F1 if X2 is None else self.features(X2)
        return np.einsum("iam,jbm->iajb", F1, F2)

    def with_prior_precision(self, prior_precision: float) -> ScaLLA:
        """The same surrogate and precision under another α (no new training)."""
        post = self.posterior.with_prior_precision(prior_precision)
        return ScaLLA(self.model, self.likelihood, self.surrogate, post)

    def predictive(self, X: Any) -> GaussianPredictive:
        """N(f_θ*(x*), g(x*) A⁻¹ g(x*)ᵀ) for every row of ``X``."""
        return GaussianPredictive(
            model_outputs(self.model, X),
            self.posterior.covariance(self.features(X)),
            self.likelihood,
        )
