"""A small two-hidden-layer tanh MLP in NumPy with its exact Jacobian and RKHS-regularised MAP.

The synthetic set-ups of Cinquin et al., arXiv:2407.13711, App. B.1 (1-D regression on
sin(2πx), two-moons classification) use two hidden tanh layers of 50 (regression) or 100
(classification) units. Parameters are flattened in layer order (W1, b1, W2, b2, w3, b3), first
layer first, as everywhere in the project. The Jacobian is by hand (backpropagation through one
output), so no autodiff framework is needed; :func:`train_fsp_map` runs full-batch Adam on the
FSP objective of eq. (3.5) with the RKHS term of eq. (3.7) at fixed context points (Algorithm 1
with C fixed).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

__all__ = ["TanhMLP"]


@dataclass(frozen=True)
class TanhMLP:
    """f(x) = w3ᵀ tanh(W2 tanh(W1 x + b1) + b2) + b3 with d inputs and h hidden units."""

    d: int
    h: int

    @property
    def num_params(self) -> int:
        """p = h·d + h + h·h + h + h + 1."""
        return self.h * self.d + self.h + self.h * self.h + self.h + self.h + 1

    def init(self, rng: np.random.Generator) -> np.ndarray:
        """Glorot-style initial parameters, flattened."""
        d, h = self.d, self.h
        parts = [
            rng.standard_normal(h * d) / np.sqrt(d),
            np.zeros(h),
            rng.standard_normal(h * h) / np.sqrt(h),
            np.zeros(h),
            rng.standard_normal(h) / np.sqrt(h),
            np.zeros(1),
        ]
        return np.concatenate(parts)

    def _unpack(self, theta: np.ndarray):
        d, h = self.d, self.h
        i = 0
        W1 = theta[i : i + h * d].reshape(h, d)
        i += h * d
        b1 = theta[i : i + h]
        i += h
        W2 = theta[i : i + h * h].reshape(h, h)
        i += h * h
        b2 = theta[i : i + h]
        i += h
        w3 = theta[i : i + h]
        b3 = theta[i + h]
        return W1, b1, W2, b2, w3, b3

    def forward(self, theta: np.ndarray, X: np.ndarray) -> np.ndarray:
        """f(X), shape (n,)."""
        W1, b1, W2, b2, w3, b3 = self._unpack(theta)
        H1 = np.tanh(X @ W1.T + b1)
        H2 = np.tanh(H1 @ W2.T + b2)
        return H2 @ w3 + b3

    def jacobian(self, theta: np.ndarray, X: np.ndarray) -> np.ndarray:
        """J(X) = ∂f(X)/∂θ, shape (n, p), in the flattening order of :meth:`init`."""
        return self.forward_and_jacobian(theta, X)[1]

    def forward_and_jacobian(
        self, theta: np.ndarray, X: np.ndarray, out: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(f(X), J(X)) from one pass through the hidden layers; J written into ``out``
        (an (n, p) C-contiguous float64 array) when given."""
        W1, b1, W2, b2, w3, b3 = self._unpack(theta)
        n, d, h = X.shape[0], self.d, self.h
        H1 = np.tanh(X @ W1.T + b1)
        H2 = np.tanh(H1 @ W2.T + b2)
        D2 = w3 * (1.0 - H2**2)  # ∂f/∂(pre-activation 2)
        D1 = (D2 @ W2) * (1.0 - H1**2)  # ∂f/∂(pre-activation 1)
        J = np.empty((n, self.num_params)) if out is None else out
        i = 0
        np.multiply(D1[:, :, None], X[:, None, :], out=J[:, i : i + h * d].reshape(n, h, d))
        i += h * d
        J[:, i : i + h] = D1
        i += h
        np.multiply(D2[:, :, None], H1[:, None, :], out=J[:, i : i + h * h].reshape(n, h, h))
        i += h * h
        J[:, i : i + h] = D2
        J[:, i + h : i + 2 * h] = H2
        J[:, i + 2 * h] = 1.0
        return H2 @ w3 + b3, J


def train_fsp_map(
    model: TanhMLP,
    X: np.ndarray,
    y: np.ndarray,
    C: np.ndarray,
    K_CC: np.ndarray,
    *,
    likelihood: str,
    noise_std: float = 0.1,
    steps: int = 1000,
    lr: float = 5e-3,
    rng: np.random.Generator,
) -> np.ndarray:
    """Full-batch Adam on R_FSP(w) = −Σ log p(y | f(x)) + ½ f(C)ᵀ Σ(C, C)⁻¹ f(C) (eq. 3.5, 3.7).

    The gradient is ``J(X)ᵀ r + J(C)ᵀ Σ(C, C)⁻¹ f(C)`` with r = (f − y)/σ² (Gaussian) or
    σ(f) − y (Bernoulli), using the exact Jacobian.
    """
    theta = model.init(rng)
    chol = scipy.linalg.cho_factor(K_CC, lower=True)
    m = np.zeros_like(theta)
    v = np.zeros_like(theta)
    b1, b2, eps = 0.9, 0.999, 1e-8
    J_X = np.empty((X.shape[0], theta.size))
    J_C = np.empty((C.shape[0], theta.size))
    for t in range(1, steps + 1):
        f, _ = model.forward_and_jacobian(theta, X, out=J_X)
        r = (f - y) / noise_std**2 if likelihood == "gaussian" else 1.0 / (1.0 + np.exp(-f)) - y
        fC, _ = model.forward_and_jacobian(theta, C, out=J_C)
        grad = J_X.T @ r + J_C.T @ scipy.linalg.cho_solve(chol, fC)
        m = b1 * m + (1 - b1) * grad
        v = b2 * v + (1 - b2) * grad**2
        theta = theta - lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
    return theta
