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

__all__ = [
    "GAUSSIAN",
    "MULTI_OUTPUT",
    "DenseOracle",
    "HessianOracle",
    "StreamedOracle",
    "jacobian",
    "outputs",
]

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


# ---------------------------------------------------------------------- the true Hessian
def _negative_log_likelihood(f: Any, y: Any, likelihood: str, noise: Any) -> Any:
    """Σ_n −log p(y_n | f_n) up to constants in θ, as a torch scalar (f: (N, C))."""
    import torch

    if likelihood in GAUSSIAN:
        s2 = torch.as_tensor(noise, dtype=f.dtype)
        return 0.5 * torch.sum((f - y.reshape(f.shape)) ** 2 / s2)
    if likelihood == "binary":
        return torch.nn.functional.binary_cross_entropy_with_logits(f[:, 0], y, reduction="sum")
    return torch.nn.functional.cross_entropy(f, y.long(), reduction="sum")


def _flat_function(model: Any) -> tuple[Any, Any]:
    """(θ ↦ (x ↦ f(x; θ)) on a float64 copy of ``model``, θ̂ flat in ``parameters()`` order)."""
    import torch

    m = _float64(model)
    named = [(name, t.shape, int(t.numel())) for name, t in m.named_parameters()]
    sizes = [n for _, _, n in named]
    theta = torch.nn.utils.parameters_to_vector(m.parameters()).detach()

    def forward(flat: Any, X: Any) -> Any:
        pieces = flat.split(sizes)
        tensors = {n: t.view(s) for (n, s, _), t in zip(named, pieces, strict=True)}
        f = torch.func.functional_call(m, tensors, (X,))
        return f.reshape(X.shape[0], -1)

    return forward, theta


@dataclass(frozen=True, eq=False)
class HessianOracle:
    """The Laplace approximation with the true Hessian of the negative log joint, dense in
    float64, at the model's θ (a MAP or any other point).

    Ω_H = ∇²_θ Σ_n −log p(y_n | f(x_n; θ)) + V, by ``torch.func.hessian`` of the summed
    negative log-likelihood over the flat parameter vector of a float64 copy of the model.
    It is the GGN plus the residual term Σ_n Σ_c r_nc ∇²_θ f_c(x_n), r_n = ∂[−log p(y_n | f)]/∂f
    at f_n (:attr:`DenseOracle.residuals`), which vanishes for a model linear in θ (Martens
    2020, §8) but not at an MLP's MAP, where only Σ_n J_nᵀ r_n + V(θ̂ − μ0) vanishes. At a
    local minimum of the negative log joint Ω_H is positive semi-definite; elsewhere it need
    not be, and a variance gᵀΩ_H⁻¹g exists only where it is positive definite:
    :meth:`predictive_variance` refuses otherwise, and the cases report
    :attr:`min_eigenvalue`.

    References
    ----------
    .. [1] D. J. C. MacKay, "A Practical Bayesian Framework for Backpropagation Networks",
       Neural Computation 4(3), 1992, §4 (the Laplace approximation with the Hessian of the
       log posterior).
    .. [2] A. Immer, M. Korzepa, M. Bauer, "Improving predictions of Bayesian neural nets
       via local linearization", AISTATS 2021, arXiv:2008.08400, §3 (the GGN as the Hessian
       of the linearized model; the residual term it drops).
    .. [3] J. Martens, "New Insights and Perspectives on the Natural Gradient Method", JMLR
       21 (2020), §8 (the Hessian = GGN + Σ r ∇²f decomposition).
    """

    oracle: DenseOracle

    @property
    def problem(self) -> Problem:
        """The oracle's problem."""
        return self.oracle.problem

    @cached_property
    def nll_hessian(self) -> np.ndarray:
        """∇²_θ Σ_n −log p(y_n | f(x_n; θ)) at θ (p × p), one ``torch.func.hessian`` call."""
        import torch

        p = self.problem
        forward, theta = _flat_function(p.model)
        X = torch.as_tensor(p.X_train).double()
        y = torch.as_tensor(p.y_train)
        y = y.long() if p.likelihood == "multiclass" else y.double()
        noise = self.oracle.noise_vector

        def nll(flat: Any) -> Any:
            return _negative_log_likelihood(forward(flat, X), y, p.likelihood, noise)

        H = torch.func.hessian(nll)(theta).detach().numpy()
        return 0.5 * (H + H.T)

    @cached_property
    def output_hessians(self) -> np.ndarray:
        """∇²_θ f_c(x_n) for every training row and output, (N, C, p, p)."""
        import torch

        forward, theta = _flat_function(self.problem.model)
        X = torch.as_tensor(self.problem.X_train).double()

        def row(x: Any) -> Any:
            return torch.func.hessian(lambda t: forward(t, x[None])[0])(theta)

        return torch.func.vmap(row)(X).detach().numpy()

    @cached_property
    def residual_terms(self) -> np.ndarray:
        """R_n = Σ_c r_nc ∇²_θ f_c(x_n) per training row, (N, p, p)."""
        return np.einsum("nc,ncpq->npq", self.oracle.residuals, self.output_hessians)

    @cached_property
    def omega(self) -> np.ndarray:
        """Ω_H = ∇²(negative log-likelihood) + V (p × p)."""
        return self.nll_hessian + np.diag(self.oracle.V)

    @cached_property
    def min_eigenvalue(self) -> float:
        """The smallest eigenvalue of Ω_H (> 0 where the Laplace approximation exists)."""
        return float(np.linalg.eigvalsh(self.omega)[0])

    @cached_property
    def gradient_norm(self) -> float:
        """‖∇_θ[−log p(y | θ) − log p(θ)]‖ = ‖Σ_n J_nᵀ r_n + V(θ − μ0)‖ at θ (0 at the MAP)."""
        o = self.oracle
        prior = o.V * (o.theta - self.problem.prior_mean_vector())
        return float(np.linalg.norm(o.gradients.sum(axis=0) + prior))

    @cached_property
    def relative_difference(self) -> float:
        """‖H − GGN‖_F / ‖GGN‖_F: how far the Hessian is from the GGN (0 for a linear model)."""
        return float(
            np.linalg.norm(self.nll_hessian - self.oracle.ggn) / np.linalg.norm(self.oracle.ggn)
        )

    def _rows(self) -> np.ndarray:
        return self.oracle.G.reshape(-1, self.oracle.theta.size)

    def predictive_variance(self) -> np.ndarray:
        """gᵀΩ_H⁻¹g for every test point and output, (M,) or (M, C); a ValueError when Ω_H is
        not positive definite (then no Laplace approximation exists at θ)."""
        if not self.min_eigenvalue > 0.0:
            raise ValueError(
                f"the Hessian precision of problem {self.problem.name!r} (seed "
                f"{self.problem.seed}) is not positive definite: smallest eigenvalue "
                f"{self.min_eigenvalue:.3g}"
            )
        G = self._rows()
        L = np.linalg.cholesky(self.omega)
        W = np.linalg.solve(L, G.T)
        return self.oracle._per_output(np.sum(W * W, axis=0))

    def variance_tolerance(self) -> np.ndarray:
        """The variance rule of :mod:`.tolerance` on Ω_H, with ‖Ω‖₂ replaced by the size of
        the terms summed into it, ‖GGN‖₂ + Σ_n ‖R_n‖₂ + max V: a relative error γ in each
        per-sample Hessian J_nᵀH_nJ_n + R_n perturbs Ω_H by at most γ times that, which
        exceeds γ‖Ω_H‖₂ when the residual terms cancel each other or the GGN."""
        o = self.oracle
        G = self._rows()
        W = np.linalg.solve(self.omega, G.T).T
        w2 = np.sum(W * W, axis=1)
        gw = np.linalg.norm(G, axis=1) * np.sqrt(w2)
        prior_var = np.sum(G * G / o.V, axis=1)
        residual = sum(float(np.linalg.norm(R, 2)) for R in self.residual_terms)
        scale = float(np.linalg.norm(o.ggn, 2)) + residual + float(np.max(o.V))
        g = gamma(self.problem.dtype, o.n_rows, o.theta.size)
        return o._per_output(SAFETY * g * (scale * w2 + 2.0 * gw + prior_var))


@dataclass(frozen=True, eq=False)
class StreamedOracle:
    """The GGN Laplace variances of a multiclass problem with many logits, in float64,
    without any N·C × p array.

    Ω = Σ_n J_nᵀ H_n J_n + V is accumulated one training row at a time: J_n (C × p) by
    ``torch.func.jacrev`` of the flat-parameter function of a float64 copy of the model, and
    with H_n = diag(π_n) − π_n π_nᵀ (π_n = softmax f_n, no jitter)

        J_nᵀ H_n J_n = (D_n J_n)ᵀ(D_n J_n) − (J_nᵀπ_n)(J_nᵀπ_n)ᵀ,   D_n = diag(√π_n),

    a symmetric rank-C update (BLAS ``dsyrk``) and a rank-one correction, so the memory is
    O(p² + C·p) and the work O(N·C·p²). The variances are diag(G_m Ω⁻¹ G_mᵀ) per test point
    from the Cholesky factor Ω = LLᵀ, ‖L⁻¹g‖² for each row g of the test Jacobians (M·C × p).
    On a small problem it is :class:`DenseOracle` to rounding (tests/conformance).

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations:
       New Results and Methods", arXiv:2605.09075 (2026), §2.1 eqs. (2)–(3) (Ω and the
       linearized predictive variance).
    .. [2] A. Immer, M. Korzepa, M. Bauer, "Improving predictions of Bayesian neural nets
       via local linearization", AISTATS 2021, arXiv:2008.08400, §3 (the GGN of the
       categorical likelihood).
    """

    problem: Problem

    def __post_init__(self) -> None:
        if self.problem.likelihood != "multiclass":
            raise ValueError(
                f"problem must be multiclass for the streamed oracle; got likelihood="
                f"{self.problem.likelihood!r}"
            )
        if self.problem.subset is not None:
            raise ValueError("problem must have no subset for the streamed oracle")

    def _jacobians(self, X: Any) -> Any:
        """Yield (J_n (C × p), f_n (C,)) in float64 for each row of ``X``."""
        import torch

        forward, theta = _flat_function(self.problem.model)
        X = torch.as_tensor(X).double()
        for x in X:
            row = x[None]
            J = torch.func.jacrev(lambda t, r=row: forward(t, r)[0])(theta)
            with torch.no_grad():
                f = forward(theta, row)[0]
            yield J.detach().numpy(), f.numpy()

    @cached_property
    def V(self) -> np.ndarray:
        """The prior precision vector."""
        return self.problem.prior_vector()

    @cached_property
    def omega(self) -> np.ndarray:
        """Ω = Σ_n J_nᵀ H_n J_n + V (p × p), accumulated row by row."""
        import scipy.linalg.blas

        p = self.V.size
        upper = np.zeros((p, p), order="F")
        for J, f in self._jacobians(self.problem.X_train):
            z = np.exp(f - f.max())
            pi = z / z.sum()
            B = np.sqrt(pi)[:, None] * J  # D_n J_n, C × p
            u = J.T @ pi  # J_nᵀ π_n
            upper = scipy.linalg.blas.dsyrk(1.0, B, trans=1, beta=1.0, c=upper, overwrite_c=1)
            upper = scipy.linalg.blas.dsyr(-1.0, u, a=upper, overwrite_a=1)
        omega = np.triu(upper) + np.triu(upper, 1).T
        omega[np.diag_indices(p)] += self.V
        return omega

    @cached_property
    def G(self) -> np.ndarray:
        """Test Jacobian rows (M·C × p), test point by test point."""
        return np.concatenate([J for J, _ in self._jacobians(self.problem.X_test)])

    @property
    def n_rows(self) -> int:
        """N′ = N·C, the rows of the weighted Jacobian."""
        return int(
            self.problem.X_train.shape[0] * (self.G.shape[0] // self.problem.X_test.shape[0])
        )

    @cached_property
    def _cholesky(self) -> np.ndarray:
        """L with Ω = LLᵀ (lower)."""
        import scipy.linalg

        return scipy.linalg.cholesky(self.omega, lower=True)

    @cached_property
    def _whitened(self) -> np.ndarray:
        """L⁻¹Gᵀ (p × M·C)."""
        import scipy.linalg

        return scipy.linalg.solve_triangular(self._cholesky, self.G.T, lower=True)

    def predictive_variance(self) -> np.ndarray:
        """gᵀΩ⁻¹g for every test point and logit, (M, C)."""
        M = self.problem.X_test.shape[0]
        return np.sum(self._whitened**2, axis=0).reshape(M, -1)

    def variance_tolerance(self) -> np.ndarray:
        """The rule of :func:`.tolerance.variance_tolerance` (M, C), with ‖Ω‖₂ its largest
        eigenvalue (Ω is symmetric positive definite; Lanczos, ``scipy.sparse.linalg.eigsh``)
        and w = Ω⁻¹g = L⁻ᵀ(L⁻¹g)."""
        import scipy.linalg
        import scipy.sparse.linalg

        W = scipy.linalg.solve_triangular(self._cholesky, self._whitened, lower=True, trans="T")
        w2 = np.sum(W * W, axis=0)
        gw = np.linalg.norm(self.G, axis=1) * np.sqrt(w2)
        prior_var = np.sum(self.G * self.G / self.V, axis=1)
        norm = float(scipy.sparse.linalg.eigsh(self.omega, k=1, which="LA", tol=1e-10)[0][0])
        g = gamma(self.problem.dtype, self.n_rows, self.V.size)
        M = self.problem.X_test.shape[0]
        return (SAFETY * g * (norm * w2 + 2.0 * gw + prior_var)).reshape(M, -1)
