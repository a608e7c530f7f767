"""FSP-Laplace on a torch model: Algorithm 2 at the FSP MAP and the linearised predictive.

T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace: Function-Space
Priors for the Laplace Approximation in Bayesian Deep Learning", NeurIPS 2024,
arXiv:2407.13711, §3.2 and Algorithm 2 (docs/mathematics.md, "FSP-Laplace on a torch model").

:func:`network_fsp_laplace` takes a network trained to the FSP MAP (Algorithm 1,
:func:`laplace_lab.networks.fsp_training.train_fsp_map`), the GP prior's covariance function, the
fixed context points C of the covariance computation and the training inputs. It forms the
Jacobian J(C) of the d' outputs at the context points and the weighted Jacobian J_w of the
likelihood's Gauss–Newton curvature at the training inputs (per-sample Jacobians in chunks), and
runs Algorithm 2 (:func:`laplace_lab.numerics.fsp.fsp_laplace`: Lanczos on Σ(C, C), the thin
SVD of M = J(C)ᵀL, the r × r eigenproblem and the step-9 truncation). A d'-output network gets
d' independent GP priors with the same covariance function, Σ(C, C) ⊗ I_{d'}.

The posterior is N(w*, S Sᵀ) in weight space; the linearised network
f_lin(x, w) = f(x, w*) + J(x)(w − w*) makes the predictive at x* Gaussian with mean f(x*, w*)
and covariance J(x*) S Sᵀ J(x*)ᵀ (:meth:`NetworkFSPLaplace.predict`,
:meth:`NetworkFSPLaplace.covariance`). Jacobians are computed in chunks of rows; J(C) and J_w
are held on the host in float64 (memory O((n_C d' + N d') p)), the linear algebra of
Algorithm 2 runs on the host in float64.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from laplace_lab._checks import dtype_eps, nonnegative_float, one_of, positive_float, positive_int
from laplace_lab.numerics._layout import _trainable
from laplace_lab.numerics.backend import to_numpy
from laplace_lab.numerics.fsp import FSPLaplace, fsp_laplace, fsp_laplace_from_factor
from laplace_lab.numerics.ggn import GGN
from laplace_lab.numerics.jacobians import jacobian_chunks, parameter_layout
from laplace_lab.numerics.krylov import lanczos_inverse_sqrt

__all__ = [
    "FunctionPredictive",
    "NetworkFSPLaplace",
    "OutputGram",
    "kronecker_factor",
    "network_fsp_laplace",
]

_LIKELIHOODS = ("regression", "binary", "multiclass")


class FunctionPredictive(NamedTuple):
    """The linearised predictive of the network outputs: f(x*) ~ N(mean, variance).

    ``mean`` is f(x*, w*) and ``variance`` the epistemic Var f(x*) = diag(J S Sᵀ Jᵀ); shape
    (n,) for one output, (n, d') for d' outputs (host float64).
    """

    mean: np.ndarray
    variance: np.ndarray


@dataclass(frozen=True, eq=False)
class OutputGram:
    """Σ(C, C) ⊗ I_{d'}: d' independent GP outputs with one covariance function.

    Rows are ordered (context point, output), the order of J(C) reshaped from
    (n_C, d', p) to (n_C d', p).

    Parameters
    ----------
    kernel : callable
        ``kernel(X1, X2)`` and ``kernel.diag(X)`` — a kernel of
        :mod:`laplace_lab.numerics.kernels` or of ``sklearn.gaussian_process.kernels``.
    points : (n_C, d) array
        The context points C.
    n_outputs : int
        d'.
    jitter : float
        Added to the diagonal, relative to the mean prior variance: Σ + jitter·mean(diag Σ)·I.
    """

    kernel: Any
    points: np.ndarray
    n_outputs: int = 1
    jitter: float = 1e-6
    matrix: np.ndarray = field(init=False, repr=False)  #: Σ(C, C) + jitter (n_C × n_C)

    def __post_init__(self) -> None:
        if not callable(self.kernel) or not hasattr(self.kernel, "diag"):
            raise TypeError(
                "kernel must be callable as kernel(X1, X2) and have kernel.diag(X); got "
                f"{type(self.kernel).__name__}"
            )
        C = _rows(self.points, "context")
        positive_int(self.n_outputs, "n_outputs")
        nonnegative_float(self.jitter, "jitter")
        K = np.asarray(self.kernel(C, C), dtype=np.float64)
        if K.shape != (C.shape[0], C.shape[0]) or not np.all(np.isfinite(K)):
            raise ValueError(f"kernel(C, C) must be a finite {C.shape[0]}² matrix")
        diag = np.asarray(self.kernel.diag(C), dtype=np.float64)
        if np.any(diag <= 0):
            raise ValueError("kernel.diag(C) must be positive (prior variances)")
        K = 0.5 * (K + K.T) + self.jitter * float(diag.mean()) * np.eye(C.shape[0])
        object.__setattr__(self, "points", C)
        object.__setattr__(self, "matrix", K)

    @property
    def n(self) -> int:
        """n_C d', the size of the operator."""
        return int(self.points.shape[0]) * int(self.n_outputs)

    def matvec(self, v: np.ndarray) -> np.ndarray:
        """(Σ(C, C) ⊗ I_{d'}) v."""
        V = np.asarray(v, dtype=np.float64).reshape(-1, self.n_outputs)
        return (self.matrix @ V).reshape(-1)

    __call__ = matvec

    def diagonal(self) -> np.ndarray:
        """Prior variances at the context points (with jitter), repeated per output."""
        return np.repeat(np.diag(self.matrix), self.n_outputs)

    def dense(self) -> np.ndarray:
        """The n_C d' × n_C d' matrix (for small cases and references)."""
        return np.kron(self.matrix, np.eye(self.n_outputs))


def _rows(X: Any, name: str) -> np.ndarray:
    X = np.asarray(to_numpy(X) if hasattr(X, "detach") else X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2 or X.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty (n, d) array; got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{name} must be finite; it contains NaN or Inf")
    return X


def _jacobian(model: Any, X: Any, chunk_size: int | None) -> tuple[np.ndarray, np.ndarray]:
    """(J(X) (n, d', p), f(X) (n, d')) on the host in float64."""
    Js, fs = [], []
    for _, J, f in jacobian_chunks(model, X, chunk_size=chunk_size):
        J = to_numpy(J).astype(np.float64)
        f = to_numpy(f).astype(np.float64)
        Js.append(J[:, None, :] if J.ndim == 2 else J)
        fs.append(f[:, None] if f.ndim == 1 else f)
    return np.concatenate(Js), np.concatenate(fs)


def _weighted_jacobian(J: np.ndarray, f: np.ndarray, likelihood: str, noise_var: Any):
    """J_w of the likelihood's GGN (Σ_i J_iᵀ(−H_i)J_i = J_wᵀJ_w)."""
    if likelihood == "regression":
        return GGN.regression(
            J.reshape(J.shape[0], -1), noise_var=noise_var, prior_precision=1.0
        ).Jw
    if likelihood == "binary":
        return GGN.binary(J[:, 0], f[:, 0], prior_precision=1.0).Jw
    return GGN.multiclass(J, f, prior_precision=1.0, eps=0.0).Jw  # FSP has no jitter


@dataclass(frozen=True, eq=False)
class NetworkFSPLaplace:
    """The FSP-Laplace posterior of a torch model: N(w*, S Sᵀ) and its linearised predictive.

    Attributes
    ----------
    model : torch.nn.Module
        The network at w*.
    result : FSPLaplace
        Algorithm 2's output (``scale`` = S, the truncation k, context variances, …).
    gram : OutputGram
        Σ(C, C) ⊗ I_{d'} at the fixed context points.
    likelihood : str
    noise_var : float or None
        σ² of a Gaussian likelihood (regression).
    chunk_size : int or None
        Rows per Jacobian chunk at prediction.
    """

    model: Any
    result: FSPLaplace
    gram: OutputGram
    likelihood: str
    noise_var: float | None
    chunk_size: int | None = None

    @property
    def scale(self) -> np.ndarray:
        """S (p × r'), the square root of the weight-space covariance."""
        return self.result.scale

    def _outputs(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        """(f(X) (n, d'), J(X) S (n, d', r')), J(X) S formed chunk by chunk."""
        X = _rows(X, "X") if not hasattr(X, "detach") else X
        means, zs = [], []
        for _, J, f in jacobian_chunks(self.model, X, chunk_size=self.chunk_size):
            J = to_numpy(J).astype(np.float64)
            zs.append((J[:, None, :] if J.ndim == 2 else J) @ self.scale)
            f = to_numpy(f).astype(np.float64)
            means.append(f[:, None] if f.ndim == 1 else f)
        return np.concatenate(means), np.concatenate(zs)

    def _squeeze(self, a: np.ndarray) -> np.ndarray:
        return a[:, 0] if a.shape[1] == 1 else a

    def predict(self, X: Any) -> FunctionPredictive:
        """Mean f(x*, w*) and epistemic variance diag(J(x*) S Sᵀ J(x*)ᵀ) at the rows of X."""
        mean, Z = self._outputs(X)
        return FunctionPredictive(self._squeeze(mean), self._squeeze(np.sum(Z * Z, axis=2)))

    def covariance(self, X: Any) -> np.ndarray:
        """The joint covariance J(X) S Sᵀ J(X)ᵀ of the outputs, (n d') × (n d') (small n)."""
        _, Z = self._outputs(X)
        Z = Z.reshape(-1, Z.shape[-1])
        return Z @ Z.T

    def sample(self, X: Any, n_samples: int, *, rng: Any) -> np.ndarray:
        """Functions of the linearised posterior at the rows of X: (n_samples, n[, d'])."""
        from laplace_lab._random import as_generator

        rng = as_generator(rng)
        mean, Z = self._outputs(X)
        eps = rng.standard_normal((positive_int(n_samples, "n_samples"), Z.shape[-1]))
        draws = mean[None] + np.einsum("ndr,sr->snd", Z, eps)
        return draws[..., 0] if draws.shape[-1] == 1 else draws


def kronecker_factor(gram: OutputGram, J_context: np.ndarray, num_steps: int) -> np.ndarray:
    """L = L_Σ ⊗ I_{d'} with L_Σ L_Σᵀ ≈ Σ(C, C)† from Lanczos on the n_C × n_C Gram matrix.

    Step 3 of Algorithm 2 runs Lanczos on the prior Gram matrix from one start vector. For d'
    independent outputs the matrix is Σ(C, C) ⊗ I_{d'}: every eigenvalue is repeated d' times,
    so a Krylov space of it has dimension at most n_C and the literal step 3 cannot represent
    (Σ ⊗ I)† (docs/mathematics.md, "FSP-Laplace on a torch model"). Lanczos on Σ(C, C)
    itself, started at the per-point norms of J(C)1 over the outputs, gives the factor.

    Parameters
    ----------
    gram : OutputGram
    J_context : (n_C, d', p) array
    num_steps : int
        Maximum Lanczos steps (capped at n_C).
    """
    v = np.linalg.norm(J_context.sum(axis=2), axis=1)
    if not np.any(v > 0):
        raise ValueError("J(C)1 is zero: the Lanczos start vector of step 2 is undefined")
    n_c = int(gram.points.shape[0])
    L = lanczos_inverse_sqrt(gram.matrix.__matmul__, v, min(num_steps, n_c))
    return np.kron(L, np.eye(gram.n_outputs))


def network_fsp_laplace(
    model: Any,
    X: Any,
    *,
    likelihood: str,
    kernel: Any,
    context: Any,
    noise_var: float | None = None,
    jitter: float = 1e-6,
    num_steps: int = 500,
    rcond: float | None = None,
    rtol: float = 1e-9,
    chunk_size: int | None = None,
) -> NetworkFSPLaplace:
    """Algorithm 2 of [1]_ on a torch model at its FSP MAP w*.

    Parameters
    ----------
    model : torch.nn.Module
        Trained to the FSP MAP, outputs (N,), (N, 1) or (N, d'); eval mode.
    X : (N, ...) array or tensor
        Training inputs (the likelihood's Gauss–Newton curvature, eq. (3.8)).
    likelihood : {"regression", "binary", "multiclass"}
        Gaussian (with ``noise_var``), Bernoulli on one logit, categorical on d' logits.
    kernel : callable
        The GP prior's covariance function: ``kernel(X1, X2)`` and ``kernel.diag(X)`` (the
        kernels of :mod:`laplace_lab.numerics.kernels`, or scikit-learn kernels).
    context : (n_C, d) array
        The fixed context points C of the covariance computation.
    noise_var : float
        σ² of the Gaussian likelihood; required for regression, refused otherwise.
    jitter : float
        Σ(C, C) + jitter·mean(diag Σ)·I (the Gram matrix of a smooth kernel is numerically
        singular).
    num_steps : int
        Maximum number of Lanczos steps (the paper: 500), capped at n_C d'.
    rcond, rtol : float
        As in :func:`laplace_lab.numerics.fsp.fsp_laplace` (``rtol=numpy.inf`` skips the
        step-9 truncation). Algorithm 2 runs in float64, with the rounding of the model's
        dtype in J(C) as its ``input_eps``.
    chunk_size : int, optional
        Rows per Jacobian chunk.

    Returns
    -------
    NetworkFSPLaplace

    References
    ----------
    .. [1] T. Cinquin, M. Pförtner, V. Fortuin, P. Hennig, R. Bamler, "FSP-Laplace: Function-Space
       Priors for the Laplace Approximation in Bayesian Deep Learning", NeurIPS 2024,
       arXiv:2407.13711, §3.2, eqs. (3.8)–(3.9) and Algorithm 2.
    """
    one_of(likelihood, "likelihood", _LIKELIHOODS)
    if likelihood == "regression":
        if noise_var is None:
            raise ValueError("noise_var is required for likelihood='regression'")
        noise_var = positive_float(noise_var, "noise_var")
    elif noise_var is not None:
        raise ValueError(f"noise_var must be None for likelihood={likelihood!r}")
    parameter_layout(model)  # validates the model
    C = _rows(context, "context")
    J_C, _ = _jacobian(model, C, chunk_size)
    n_out = J_C.shape[1]
    if (likelihood == "multiclass") != (n_out > 1):
        raise ValueError(f"likelihood={likelihood!r} does not match the model's {n_out} output(s)")
    gram = OutputGram(kernel, C, n_out, jitter)
    X = X if hasattr(X, "detach") else _rows(X, "X")
    J_X, f_X = _jacobian(model, X, chunk_size)
    Jw = _weighted_jacobian(J_X, f_X, likelihood, noise_var)
    num_steps = positive_int(num_steps, "num_steps")
    J_flat = J_C.reshape(-1, J_C.shape[-1])
    eps_in = dtype_eps(next(iter(_trainable(model).values())).dtype)  # J's own rounding
    if n_out == 1:
        result = fsp_laplace(
            J_flat, gram, Jw, num_steps=min(num_steps, gram.n), rcond=rcond, rtol=rtol,
            input_eps=eps_in,
        )  # fmt: skip
    else:
        result = fsp_laplace_from_factor(
            J_flat,
            kronecker_factor(gram, J_C, num_steps),
            Jw,
            prior_variance=gram.diagonal(),
            rcond=rcond,
            rtol=rtol,
            input_eps=eps_in,
        )
    return NetworkFSPLaplace(model, result, gram, likelihood, noise_var, chunk_size)
