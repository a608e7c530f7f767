"""The dense float64 oracle: the GGN of a small network written out as a p × p matrix.

Computed independently of any target and of :mod:`laplace_lab.numerics`: Jacobians by one
``torch.autograd.grad`` call per output and input row on a float64 copy of the model,

    Ω = Σ_n J_nᵀ H_n J_n + V,   H_n = 1/σ0² (regression), σ(f_n)(1 − σ(f_n)) (binary),
                                H_n = diag(π_n) − π_n π_nᵀ (multiclass, no jitter),
                                H_n = diag(1/σ_c²) (multi-output regression),

and every quantity by dense NumPy linear algebra on it: the linearized-Laplace epistemic
variances gᵀΩ⁻¹g (on a subset S: g_Sᵀ Ω_SS⁻¹ g_S, the other parameters fixed at the MAP),
those of the diagonal Laplace posterior gᵀ diag(Ω)⁻¹ g,
the logits' Gaussian N(f̂(x*), G Ω⁻¹ Gᵀ) at each test point (the linearized predictive
whose class probabilities the links approximate), the Laplace log marginal likelihood, the
top-r eigenpairs of the GGN part, the criteria
of the sub-network selection rules, and the empirical-Fisher precision
P = Σ_n g_n g_nᵀ + V from the per-sample gradients g_n = J_nᵀ r_n of the negative
log-likelihood (r_n = ∂[−log p(y_n | f)]/∂f at f_n: (f_n − y_n)/σ0², σ(f_n) − y_n or
π_n − e_{y_n}) with its full and diagonal variances. Equation numbers are those of
S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
Results and Methods", arXiv:2605.09075 (2026): Ω eqs. (2) and (4) and App. C.5,
predictive eqs. (3) and (5).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from laplace_lab.conformance.problems import Problem
from laplace_lab.conformance.tolerance import (
    SAFETY,
    covariance_tolerance,
    diagonal_tolerance,
    gamma,
    mean_tolerance,
    variance_tolerance,
)

__all__ = ["GAUSSIAN", "MULTI_OUTPUT", "DenseOracle", "jacobian", "outputs"]

#: The likelihoods whose answers are (M, C) per test point, and the Gaussian ones.
MULTI_OUTPUT = ("multiclass", "multioutput-regression")
GAUSSIAN = ("regression", "multioutput-regression")


def _float64(model: Any) -> Any:
    return copy.deepcopy(model).double().eval()


def outputs(model: Any, X: Any) -> np.ndarray:
    """f(X) of a float64 copy of ``model``, (N, C) float64."""
    import torch

    with torch.no_grad():
        f = _float64(model)(torch.as_tensor(X).double())
    return f.reshape(f.shape[0], -1).numpy()


def jacobian(model: Any, X: Any) -> np.ndarray:
    """∂f_c(x_n)/∂θ, (N, C, p) float64, one autograd call per row and output, θ in
    ``parameters()`` order."""
    import torch

    m = _float64(model)
    params = list(m.parameters())
    X = torch.as_tensor(X).double()
    rows = []
    for x in X:
        f = m(x[None]).reshape(-1)
        per_output = []
        for c in range(f.shape[0]):
            grads = torch.autograd.grad(f[c], params, retain_graph=c + 1 < f.shape[0])
            per_output.append(torch.cat([g.reshape(-1) for g in grads]))
        rows.append(torch.stack(per_output))
    return torch.stack(rows).detach().numpy()


def _log_sigmoid(f: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -f)


@dataclass(frozen=True, eq=False)
class DenseOracle:
    """The dense float64 Laplace approximation of one :class:`~.problems.Problem`."""

    problem: Problem

    # ------------------------------------------------------------------ ingredients
    @cached_property
    def theta(self) -> np.ndarray:
        """θ̂ in float64 (the model's own values, cast up)."""
        import torch

        params = self.problem.model.parameters()
        return torch.nn.utils.parameters_to_vector(params).detach().double().numpy()

    @cached_property
    def V(self) -> np.ndarray:
        """The prior precision vector."""
        return self.problem.prior_vector()

    @cached_property
    def noise_vector(self) -> np.ndarray:
        """The Gaussian noise variances (C,): σ0² or the per-output σ_c² (1 for
        classification)."""
        C = self.f.shape[1]
        return np.broadcast_to(np.asarray(self.problem.noise_var, dtype=np.float64), (C,)).copy()

    @cached_property
    def J(self) -> np.ndarray:
        """Training Jacobian (N, C, p)."""
        return jacobian(self.problem.model, self.problem.X_train)

    @cached_property
    def G(self) -> np.ndarray:
        """Test Jacobian (M, C, p)."""
        return jacobian(self.problem.model, self.problem.X_test)

    @cached_property
    def f(self) -> np.ndarray:
        """Training outputs (N, C)."""
        return outputs(self.problem.model, self.problem.X_train)

    @cached_property
    def H(self) -> np.ndarray:
        """Per-point output Hessians of the negative log-likelihood, (N, C, C)."""
        lik, f = self.problem.likelihood, self.f
        if lik == "regression":
            return np.full((f.shape[0], 1, 1), 1.0 / self.problem.noise_var)
        if lik == "multioutput-regression":
            H = np.diag(1.0 / self.noise_vector)  # diag(1/σ_c²) at every point
            return np.broadcast_to(H, (f.shape[0], *H.shape)).copy()
        if lik == "binary":
            s = 1.0 / (1.0 + np.exp(-f[:, 0]))
            return (s * (1.0 - s))[:, None, None]
        z = np.exp(f - f.max(axis=1, keepdims=True))
        pi = z / z.sum(axis=1, keepdims=True)
        return pi[:, :, None] * np.eye(pi.shape[1]) - pi[:, :, None] * pi[:, None, :]

    @cached_property
    def ggn(self) -> np.ndarray:
        """Σ_n J_nᵀ H_n J_n (p × p), the likelihood part of Ω."""
        p = self.J.shape[2]
        HJ = np.einsum("ncd,ndq->ncq", self.H, self.J)  # H_n J_n, then one BLAS product
        A = self.J.reshape(-1, p).T @ HJ.reshape(-1, p)
        return 0.5 * (A + A.T)

    @cached_property
    def omega(self) -> np.ndarray:
        """Ω = GGN + V (p × p)."""
        return self.ggn + np.diag(self.V)

    @property
    def n_rows(self) -> int:
        """N′ = N·C, the rows of the weighted Jacobian."""
        return int(self.J.shape[0] * self.J.shape[1])

    def _indices(self, subset: np.ndarray | None) -> np.ndarray:
        return np.arange(self.theta.size) if subset is None else np.asarray(subset)

    # ------------------------------------------------------------------ predictive
    def predictive_variance(self, subset: np.ndarray | None = None) -> np.ndarray:
        """g_Sᵀ Ω_SS⁻¹ g_S for every test point and output, (M,) or (M, C)."""
        S = self._indices(subset)
        G = self.G[:, :, S]
        W = np.linalg.solve(self.omega[np.ix_(S, S)], G.reshape(-1, S.size).T).T
        v = np.sum(W * G.reshape(-1, S.size), axis=1).reshape(G.shape[:2])
        return v if self.problem.likelihood in MULTI_OUTPUT else v[:, 0]

    def variance_tolerance(self, subset: np.ndarray | None = None) -> np.ndarray:
        """The rule of :mod:`.tolerance` for every entry of :meth:`predictive_variance`."""
        S = self._indices(subset)
        G = self.G[:, :, S]
        tol = variance_tolerance(
            self.omega[np.ix_(S, S)],
            G.reshape(-1, S.size),
            self.V[S],
            dtype=self.problem.dtype,
            n_rows=self.n_rows,
        ).reshape(G.shape[:2])
        return tol if self.problem.likelihood in MULTI_OUTPUT else tol[:, 0]

    # ------------------------------------------------------------------ logits' Gaussian
    @cached_property
    def test_outputs(self) -> np.ndarray:
        """f̂(x*) at the test inputs (M, C): the mean of the linearized predictive."""
        return outputs(self.problem.model, self.problem.X_test)

    @cached_property
    def output_covariance(self) -> np.ndarray:
        """G_m Ω⁻¹ G_mᵀ per test point (M, C, C): the covariance of the logits."""
        M, C, p = self.G.shape
        W = np.linalg.solve(self.omega, self.G.reshape(-1, p).T).T.reshape(M, C, p)
        S = np.einsum("mcp,mdp->mcd", self.G, W)
        return 0.5 * (S + np.swapaxes(S, 1, 2))

    def mean_tolerance(self) -> np.ndarray:
        """The forward-pass rule of :mod:`.tolerance` for :attr:`test_outputs`, (M, C)."""
        M, C, p = self.G.shape
        tol = mean_tolerance(
            self.G.reshape(-1, p), self.theta, dtype=self.problem.dtype, n_rows=self.n_rows
        )
        return tol.reshape(M, C)

    def output_covariance_tolerance(self) -> np.ndarray:
        """The bilinear rule of :mod:`.tolerance` for :attr:`output_covariance`, (M, C, C)."""
        return np.stack(
            [
                covariance_tolerance(
                    self.omega, g, self.V, dtype=self.problem.dtype, n_rows=self.n_rows
                )
                for g in self.G
            ]
        )

    # ------------------------------------------------------------------ diagonal Laplace
    def _per_output(self, v: np.ndarray) -> np.ndarray:
        v = v.reshape(self.G.shape[:2])
        return v if self.problem.likelihood in MULTI_OUTPUT else v[:, 0]

    def diagonal_variance(self, subset: np.ndarray | None = None) -> np.ndarray:
        """gᵀ diag(Ω)⁻¹ g for every test point and output: the factorised posterior
        N(θ̂, diag(Ω)⁻¹), (M,) or (M, C); on a subset S, g_Sᵀ diag(Ω_SS)⁻¹ g_S."""
        S = slice(None) if subset is None else np.asarray(subset)
        G = self.G[:, :, S].reshape(-1, self._indices(subset).size)
        return self._per_output((G * G) @ (1.0 / np.diag(self.omega)[S]))

    def diagonal_tolerance(self, subset: np.ndarray | None = None) -> np.ndarray:
        """The diagonal rule of :mod:`.tolerance` for :meth:`diagonal_variance`."""
        S = slice(None) if subset is None else np.asarray(subset)
        h = np.linalg.norm(np.abs(self.H), ord=2, axis=(1, 2))  # ‖|H_n|‖₂
        abs_diag = np.einsum("n,ncp->p", h, self.J**2) + self.V
        G = self.G[:, :, S].reshape(-1, self._indices(subset).size)
        tol = diagonal_tolerance(
            np.diag(self.omega)[S], abs_diag[S], G, dtype=self.problem.dtype, n_rows=self.n_rows
        )
        return self._per_output(tol)

    # ------------------------------------------------------------------ evidence
    @cached_property
    def log_likelihood(self) -> float:
        """log p(y | X, θ̂)."""
        y = self.problem.y_train.detach().cpu().numpy()
        f, lik = self.f, self.problem.likelihood
        if lik == "regression":
            s2 = self.problem.noise_var
            r = y - f[:, 0]
            return float(-0.5 * np.sum(r * r) / s2 - 0.5 * y.size * math.log(2 * math.pi * s2))
        if lik == "multioutput-regression":  # Σ_n Σ_c log N(y_nc | f_nc, σ_c²)
            s2 = self.noise_vector
            r = y.reshape(f.shape) - f
            n = f.shape[0]
            return float(-0.5 * np.sum(r * r / s2) - 0.5 * n * np.sum(np.log(2 * math.pi * s2)))
        if lik == "binary":
            return float(np.sum(y * _log_sigmoid(f[:, 0]) + (1 - y) * _log_sigmoid(-f[:, 0])))
        shifted = f - f.max(axis=1, keepdims=True)
        logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        return float(np.sum(logp[np.arange(y.size), y.astype(np.int64)]))

    @cached_property
    def log_prior(self) -> float:
        """log N(θ̂; μ0, V⁻¹) (μ0 = 0 unless the problem has a prior mean)."""
        t, V = self.theta - self.problem.prior_mean_vector(), self.V
        return float(
            -0.5 * t @ (V * t) + 0.5 * np.sum(np.log(V)) - 0.5 * t.size * math.log(2 * math.pi)
        )

    @cached_property
    def log_marginal_likelihood(self) -> float:
        """log p(y|θ̂) + log p(θ̂) + (p/2) log 2π − ½ log det Ω (Laplace at θ̂)."""
        _, logdet = np.linalg.slogdet(self.omega)
        p = self.theta.size
        return (
            self.log_likelihood + self.log_prior + 0.5 * p * math.log(2 * math.pi) - 0.5 * logdet
        )

    # ------------------------------------------------------------------ low rank
    @cached_property
    def ggn_spectrum(self) -> tuple[np.ndarray, np.ndarray]:
        """Eigenvalues (decreasing) and eigenvectors of the GGN part."""
        lam, U = np.linalg.eigh(self.ggn)
        return lam[::-1], U[:, ::-1]

    def low_rank_omega(self, rank: int) -> np.ndarray:
        """Ω_r = U_r diag(λ_r) U_rᵀ + V with the exact top-r eigenpairs."""
        lam, U = self.ggn_spectrum
        Ur = U[:, :rank]
        return (Ur * lam[:rank]) @ Ur.T + np.diag(self.V)

    def low_rank_variance(self, rank: int) -> np.ndarray:
        """gᵀΩ_r⁻¹g for every test point and output."""
        O = self.low_rank_omega(rank)
        G = self.G.reshape(-1, self.theta.size)
        v = np.sum(np.linalg.solve(O, G.T).T * G, axis=1).reshape(self.G.shape[:2])
        return v if self.problem.likelihood in MULTI_OUTPUT else v[:, 0]

    # ------------------------------------------------------------------ selection criteria
    @cached_property
    def scores(self) -> np.ndarray:
        """Gradient-Laplace scores s_i = (1/N) Σ_n w_n g_i(x_n)² (Alg. 1): w = 1 regression,
        σ(1 − σ) binary; multiclass: squared column norms of the weighted Jacobian / N."""
        lik = self.problem.likelihood
        if lik == "regression":
            return np.mean(self.J[:, 0, :] ** 2, axis=0)
        if lik == "binary":
            return np.mean(self.H[:, 0, 0, None] * self.J[:, 0, :] ** 2, axis=0)
        # H_n = W_n W_nᵀ: the squared column norms of W_nᵀ J_n are diag(J_nᵀ H_n J_n)
        return np.einsum("ncp,ncd,ndp->p", self.J, self.H, self.J) / self.J.shape[0]

    @cached_property
    def marginal_variances(self) -> np.ndarray:
        """diag(Ω⁻¹)."""
        return np.diag(np.linalg.inv(self.omega)).copy()

    # ------------------------------------------------------------------ empirical Fisher
    @cached_property
    def residuals(self) -> np.ndarray:
        """r_n = ∂[−log p(y_n | f)]/∂f at the training outputs f_n, (N, C): (f_n − y_n)/σ0²,
        σ(f_n) − y_n or π_n − e_{y_n}."""
        y = self.problem.y_train.detach().cpu().numpy()
        f, lik = self.f, self.problem.likelihood
        if lik in GAUSSIAN:
            return (f - y.reshape(f.shape)) / self.noise_vector
        if lik == "binary":
            return 1.0 / (1.0 + np.exp(-f)) - y[:, None]
        z = np.exp(f - f.max(axis=1, keepdims=True))
        r = z / z.sum(axis=1, keepdims=True)
        r[np.arange(y.size), y.astype(np.int64)] -= 1.0
        return r

    @cached_property
    def gradients(self) -> np.ndarray:
        """Per-sample gradients of the negative log-likelihood g_n = J_nᵀ r_n, (N, p)."""
        return np.einsum("ncp,nc->np", self.J, self.residuals)

    @cached_property
    def empirical_fisher(self) -> np.ndarray:
        """EF = Σ_n g_n g_nᵀ (p × p)."""
        return self.gradients.T @ self.gradients

    @cached_property
    def ef_precision(self) -> np.ndarray:
        """P = EF + V (p × p), the precision of the empirical-Fisher Laplace posterior."""
        return self.empirical_fisher + np.diag(self.V)

    def ef_variance(self, structure: str) -> np.ndarray:
        """gᵀP⁻¹g (``"full"``) or gᵀ diag(P)⁻¹ g (``"diag"``) per test point and output."""
        G = self.G.reshape(-1, self.theta.size)
        if structure == "full":
            v = np.sum(np.linalg.solve(self.ef_precision, G.T).T * G, axis=1)
        else:
            v = (G * G) @ (1.0 / np.diag(self.ef_precision))
        return self._per_output(v)

    @cached_property
    def gradient_error_scale(self) -> np.ndarray:
        """ĝ_n = |J_n|ᵀ(|r_n| + s_n) (N, p): a target's g_n = J_nᵀr_n is off by at most
        γ·ĝ_n, from relative errors γ in J_n and the residual's error γ·s_n,
        s_n = |H_n|·(|J_n||θ̂| + |f_n| + |y_n|) (regression: the forward pass's
        |δf| ≤ γ|J_n||θ̂|, as in the mean rule, and the subtraction f − y) or
        |H_n|·|J_n||θ̂| + 1 (σ and softmax: their Jacobian is H_n, and their rounding)."""
        absJ = np.abs(self.J)
        forward = absJ @ np.abs(self.theta)  # (N, C)
        if self.problem.likelihood in GAUSSIAN:
            y = np.abs(self.problem.y_train.detach().cpu().numpy()).reshape(self.f.shape)
            scale = np.einsum("ncd,nd->nc", np.abs(self.H), forward + np.abs(self.f) + y)
        else:
            scale = np.einsum("ncd,nd->nc", np.abs(self.H), forward) + 1.0
        return np.einsum("ncp,nc->np", absJ, np.abs(self.residuals) + scale)

    def ef_tolerance(self, structure: str) -> np.ndarray:
        """The rule for :meth:`ef_variance`: ``"full"``, the variance rule on P plus
        4γ·2 Σ_n |g_nᵀw| (ĝ_nᵀ|w|), the first-order effect wᵀδPw of the gradients' errors
        (w = P⁻¹g); ``"diag"``, the diagonal rule with D_i = Σ_n (g_ni² + 2|g_ni| ĝ_ni) + V_i."""
        G = self.G.reshape(-1, self.theta.size)
        g, scale = self.gradients, self.gradient_error_scale
        kw = {"dtype": self.problem.dtype, "n_rows": self.n_rows}
        if structure == "full":
            W = np.linalg.solve(self.ef_precision, G.T)  # (p, R)
            extra = 2.0 * np.sum(np.abs(g @ W) * (scale @ np.abs(W)), axis=0)
            g_ = gamma(self.problem.dtype, self.n_rows, self.theta.size)
            tol = variance_tolerance(self.ef_precision, G, self.V, **kw) + SAFETY * g_ * extra
        else:
            D = np.sum(g * g + 2.0 * np.abs(g) * scale, axis=0) + self.V
            tol = diagonal_tolerance(np.diag(self.ef_precision), D, G, **kw)
        return self._per_output(tol)
