"""The inputs of a conformance case: a model at its MAP, data, prior, noise and subset.

Every problem is rebuilt deterministically from a seed, so a failure's reproducer is two
lines: ``problem = build_problem(NAME, seed=SEED)`` and the call of the target. Two model
families:

- **linear-Gaussian**: ``torch.nn.Linear(d, 1)`` with Gaussian noise, set to the exact
  posterior mean of Bayesian linear regression on the features (x, 1) — the weights and
  the bias in ``parameters()`` order. Linearized Laplace is then exact Bayesian linear
  regression (full and on a subset, with the other weights fixed). In
  ``linear-gaussian-orthogonal`` the design columns are orthogonal to each other and to
  the constant, so the GGN ΦᵀΦ/σ0² is diagonal and diagonal Laplace is exact too.
- **MLPs**: a tanh network d → h → C trained to its MAP (full-batch L-BFGS in float64 on the
  negative log joint) for regression, binary (one logit) and multiclass (C logits)
  likelihoods; N′ = N·C < p so that the prior matters for every test point.
- **multi-output regression** (``likelihood="multioutput-regression"``): C = 3 outputs with
  independent Gaussian noise of per-output variances σ² = (0.1, 0.4, 0.9),
  p(y|f) = Π_c N(y_c | f_c, σ_c²); ``linear-gaussian-multi-output`` is
  ``torch.nn.Linear(d, 3)`` at the exact posterior mean (each output's row [w_c, b_c] is
  Bayesian linear regression on (x, 1) with its own σ_c², the posterior factorising over
  the outputs), ``mlp-regression-multi-output`` a tanh MLP 3-6-3 at its MAP.

A ``-minibatch`` problem is an MLP at its MAP on N = 24 rows whose ``X_train``, ``y_train``
are a minibatch of n = 8 of them (drawn without replacement), ``n_data`` = N.
Subsets are drawn unsorted and non-contiguous across layers. The ``-prior-mean`` problems
have a prior N(μ0, V⁻¹) with μ0 ≠ 0 (drawn per parameter), the model at the MAP of
that prior: for the linear model the posterior mean of Bayesian linear regression with prior
mean μ0, for the MLP the minimiser of the loss regularised by ½(θ − μ0)ᵀV(θ − μ0).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from laplace_lab._checks import integer, one_of
from laplace_lab._random import keyed_generator
from laplace_lab.theory import BayesianLinearRegression

__all__ = ["PROBLEMS", "Problem", "build_problem", "problem_names"]


@dataclass(eq=False)
class Problem:
    """The arguments of one call of a target (the contract in :mod:`.contract`).

    Attributes
    ----------
    name : str
        The registry key of the problem builder.
    seed : int
        The seed it was built from.
    model : torch.nn.Module
        At its MAP, in evaluation mode, in ``dtype``.
    X_train, y_train, X_test : torch.Tensor
        Inputs (N, d) and (M, d) in the model's dtype; targets (N,): floats (regression),
        0./1. (binary), int64 labels (multiclass); (N, C) floats (multi-output regression).
    likelihood : {"regression", "binary", "multiclass", "multioutput-regression"}
    prior_precision : float or (p,) ndarray
        V (a float means V = αI).
    noise_var : float or (C,) ndarray
        σ0² (1.0 for classification); per-output σ_c² for multi-output regression.
    subset : (k,) int64 ndarray or None
    prior_mean : (p,) float64 ndarray or None
        μ0 of the prior N(μ0, V⁻¹) (None: zero), in ``parameters()`` order; passed to the
        target as ``prior_mean`` only when it is not None.
    n_data : int or None
        For a minibatch problem, N: the size of the data set the model was fitted on, of
        which ``X_train``, ``y_train`` are n < N rows (None otherwise).
    """

    name: str
    seed: int
    model: Any
    X_train: Any
    y_train: Any
    X_test: Any
    likelihood: str
    prior_precision: float | np.ndarray
    noise_var: float | np.ndarray
    subset: np.ndarray | None = None
    prior_mean: np.ndarray | None = None
    n_data: int | None = None

    @property
    def dtype(self) -> Any:
        """The torch dtype of the model's parameters."""
        return next(self.model.parameters()).dtype

    @property
    def p(self) -> int:
        """The number of parameters."""
        return sum(int(t.numel()) for t in self.model.parameters())

    def prior_vector(self) -> np.ndarray:
        """V as a length-p float64 vector."""
        v = np.asarray(self.prior_precision, dtype=np.float64)
        return np.full(self.p, float(v)) if v.ndim == 0 else v.copy()

    def prior_mean_vector(self) -> np.ndarray:
        """μ0 as a length-p float64 vector (zeros when the problem has none)."""
        return np.zeros(self.p) if self.prior_mean is None else self.prior_mean.copy()

    def target_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of the target call (a fresh copy of the model); ``prior_mean``
        only when the problem has one."""
        prior, noise = self.prior_precision, self.noise_var
        kw = {
            "likelihood": self.likelihood,
            "prior_precision": prior if isinstance(prior, float) else prior.copy(),
            "noise_var": noise if isinstance(noise, float) else noise.copy(),
        }
        if self.prior_mean is not None:
            kw["prior_mean"] = self.prior_mean.copy()
        return kw

    def fresh_model(self) -> Any:
        """A deep copy of the model (a target that modifies its model cannot leak)."""
        return copy.deepcopy(self.model)


PROBLEMS: dict[str, Callable[[np.random.Generator], dict[str, Any]]] = {}


def _problem(name: str) -> Callable:
    def register(fn: Callable) -> Callable:
        PROBLEMS[name] = fn
        return fn

    return register


#: Problems that also exist rounded to float32, as NAME-float32.
FLOAT32 = (
    "linear-gaussian",
    "mlp-regression",
    "mlp-binary",
    "mlp-multiclass",
    "mlp-regression-subset",
)


def problem_names() -> list[str]:
    """Every problem's name (the float32 variants end in ``-float32``)."""
    return [*PROBLEMS, *(f"{n}-float32" for n in FLOAT32)]


def build_problem(name: str, *, seed: int = 0) -> Problem:
    """The problem ``name`` built from ``seed`` (deterministic; float64 unless the name ends
    in ``-float32``).

    Parameters
    ----------
    name : str
        One of :func:`problem_names`.
    seed : int
        ≥ 0; the stream is keyed by (name without dtype suffix, seed).
    """
    import torch

    one_of(name, "problem", problem_names())
    seed = integer(seed, "seed", low=0)
    spec = copy.deepcopy(_float64_spec(name.removesuffix("-float32"), seed))
    dtype = torch.float32 if name.endswith("-float32") else torch.float64
    model = spec.pop("model").to(dtype).eval()
    for p in model.parameters():
        p.requires_grad_(True)
    cast = {k: torch.as_tensor(spec.pop(k), dtype=dtype) for k in ("X_train", "X_test")}
    y = spec.pop("y_train")
    y = torch.as_tensor(y, dtype=torch.int64 if spec["likelihood"] == "multiclass" else dtype)
    return Problem(name=name, seed=seed, model=model, y_train=y, **cast, **spec)


@functools.cache
def _float64_spec(base: str, seed: int) -> dict[str, Any]:
    """The float64 problem (trained once; a float32 variant is its rounding)."""
    return PROBLEMS[base](keyed_generator("conformance-problem", base, seed=seed))


# ----------------------------------------------------------------------------- models
def _tanh_mlp(d: int, hidden: int, out: int, rng: np.random.Generator) -> Any:
    import torch

    model = torch.nn.Sequential(
        torch.nn.Linear(d, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, out)
    ).double()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.as_tensor(rng.normal(0.0, 0.7, size=tuple(p.shape))))
    return model


def negative_log_joint(
    model: Any, X: Any, y: Any, likelihood: str, noise_var: float, V: Any, mu0: Any = 0.0
):
    """−log p(y | X, θ) − log p(θ) up to constants (the MAP objective), as a torch scalar;
    the prior N(μ0, V⁻¹) (``mu0`` zero by default)."""
    import torch

    f = model(X)
    if likelihood == "regression":
        nll = 0.5 * torch.sum((f[:, 0] - y) ** 2) / noise_var
    elif likelihood == "multioutput-regression":
        s2 = torch.as_tensor(noise_var, dtype=f.dtype)
        nll = 0.5 * torch.sum((f - y) ** 2 / s2)
    elif likelihood == "binary":
        nll = torch.nn.functional.binary_cross_entropy_with_logits(f[:, 0], y, reduction="sum")
    else:
        nll = torch.nn.functional.cross_entropy(f, y, reduction="sum")
    theta = torch.nn.utils.parameters_to_vector(model.parameters())
    return nll + 0.5 * torch.sum(V * (theta - torch.as_tensor(mu0, dtype=theta.dtype)) ** 2)


def _train_to_map(
    model: Any, X: np.ndarray, y: np.ndarray, likelihood: str, noise_var, prior, mu0=0.0
):
    """Full-batch L-BFGS in float64 on the negative log joint (strong Wolfe line search),
    prior N(μ0, V⁻¹)."""
    import torch

    Xt = torch.as_tensor(X, dtype=torch.float64)
    yt = torch.as_tensor(y, dtype=torch.int64 if likelihood == "multiclass" else torch.float64)
    p = sum(int(t.numel()) for t in model.parameters())
    V = torch.as_tensor(np.broadcast_to(np.asarray(prior, dtype=np.float64), (p,)).copy())
    opt = torch.optim.LBFGS(
        model.parameters(),
        lr=1.0,
        max_iter=500,
        tolerance_grad=1e-10,
        tolerance_change=1e-14,
        line_search_fn="strong_wolfe",
    )

    def closure():
        opt.zero_grad()
        loss = negative_log_joint(model, Xt, yt, likelihood, noise_var, V, mu0)
        loss.backward()
        return loss

    opt.step(closure)
    return model


def _mlp_problem(
    rng: np.random.Generator,
    likelihood: str,
    *,
    n: int = 16,
    d: int = 3,
    hidden: int = 8,
    classes: int = 3,
    n_test: int = 6,
    noise_var: float = 0.3,
    prior: float | str = 2.5,
    subset_size: int | None = None,
    prior_mean: bool = False,
) -> dict[str, Any]:
    out = classes if likelihood == "multiclass" else 1
    X = rng.normal(size=(n, d))
    a = rng.normal(size=d)
    if likelihood == "regression":
        y = np.sin(X @ a) + rng.normal(0.0, np.sqrt(noise_var), size=n)
    elif likelihood == "binary":
        y = (np.tanh(X @ a) + 0.5 * rng.normal(size=n) > 0).astype(np.float64)
    else:
        y = np.argmax(X @ rng.normal(size=(d, classes)) + 0.5 * rng.normal(size=(n, classes)), 1)
    if likelihood != "regression":
        noise_var = 1.0
    model = _tanh_mlp(d, hidden, out, rng)
    p = sum(int(t.numel()) for t in model.parameters())
    V = rng.choice([0.5, 1.0, 2.0, 4.0], size=p) if prior == "diagonal" else float(prior)
    mu0 = rng.uniform(-1.0, 1.0, size=p) if prior_mean else None
    _train_to_map(model, X, y, likelihood, noise_var, V, 0.0 if mu0 is None else mu0)
    X_test = np.concatenate([rng.normal(size=(n_test - 2, d)), X[:2]])  # 2 training inputs
    return {
        "prior_mean": mu0,
        "model": model,
        "X_train": X,
        "y_train": y,
        "X_test": X_test,
        "likelihood": likelihood,
        "prior_precision": V,
        "noise_var": float(noise_var),
        "subset": None if subset_size is None else _scattered_subset(p, subset_size, rng),
    }


def _scattered_subset(p: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """k distinct indices in a random order, neither sorted nor contiguous."""
    while True:
        S = rng.choice(p, size=k, replace=False).astype(np.int64)
        if np.any(np.diff(S) < 0) and np.any(np.abs(np.diff(np.sort(S))) > 1):
            return S


def _linear_problem(
    rng: np.random.Generator,
    *,
    n: int = 12,
    d: int = 4,
    n_test: int = 6,
    noise_var: float = 0.3,
    prior: float | str = 2.0,
    subset: bool = False,
    spectrum: tuple[float, ...] | None = None,
    orthogonal: bool = False,
    prior_mean: bool = False,
) -> dict[str, Any]:
    import torch

    scale = np.ones(d) if spectrum is None else np.asarray(spectrum)
    X = rng.normal(size=(n, d)) * scale
    if orthogonal:  # columns orthogonal to each other and to 1, norms √n·scale: ΦᵀΦ diagonal
        Q, _ = np.linalg.qr(np.hstack([np.ones((n, 1)), X]))
        X = Q[:, 1:] * np.sqrt(n) * scale
    y = X @ rng.normal(size=d) + 0.5 + rng.normal(0.0, np.sqrt(noise_var), size=n)
    V = rng.choice([0.5, 1.0, 2.0, 4.0], size=d + 1) if prior == "diagonal" else float(prior)
    features = np.hstack([X, np.ones((n, 1))])  # parameters() order: weight, then bias
    mu0 = rng.uniform(-1.5, 1.5, size=d + 1) if prior_mean else None
    blr = BayesianLinearRegression(
        np.zeros(d + 1) if mu0 is None else mu0,
        np.diag(1.0 / np.broadcast_to(V, (d + 1,))),
        noise_var,
    )
    w = blr.map((features, y))
    model = torch.nn.Linear(d, 1).double()
    with torch.no_grad():
        model.weight.copy_(torch.as_tensor(w[:d]).reshape(1, d))
        model.bias.copy_(torch.as_tensor(w[d:]))
    X_test = np.concatenate([rng.normal(size=(n_test - 1, d)) * scale, X[:1]])
    return {
        "prior_mean": mu0,
        "model": model,
        "X_train": X,
        "y_train": y,
        "X_test": X_test,
        "likelihood": "regression",
        "prior_precision": V,
        "noise_var": noise_var,
        "subset": _scattered_subset(d + 1, 3, rng) if subset else None,
    }


_problem("linear-gaussian")(lambda rng: _linear_problem(rng))
_problem("mlp-regression")(lambda rng: _mlp_problem(rng, "regression"))
_problem("mlp-multiclass")(lambda rng: _mlp_problem(rng, "multiclass"))
_problem("mlp-regression-subset")(lambda rng: _mlp_problem(rng, "regression", subset_size=12))
_problem("linear-gaussian-subset")(lambda rng: _linear_problem(rng, subset=True))
_problem("linear-gaussian-diagonal-prior")(lambda rng: _linear_problem(rng, prior="diagonal"))
_problem("linear-gaussian-spectrum")(
    lambda rng: _linear_problem(rng, n=30, d=6, spectrum=(8.0, 4.0, 1.0, 0.5, 0.3, 0.2))
)
_problem("linear-gaussian-orthogonal")(
    lambda rng: _linear_problem(rng, orthogonal=True, spectrum=(2.0, 1.0, 0.5, 1.5))
)
_problem("mlp-regression-diagonal-prior")(
    lambda rng: _mlp_problem(rng, "regression", prior="diagonal", subset_size=12)
)
_problem("mlp-binary")(lambda rng: _mlp_problem(rng, "binary"))
_problem("mlp-binary-subset")(lambda rng: _mlp_problem(rng, "binary", subset_size=12))
_problem("mlp-multiclass-subset")(lambda rng: _mlp_problem(rng, "multiclass", subset_size=12))
#: The per-output noise variances of the multi-output problems (distinct: symmetry-breaking).
MULTI_OUTPUT_NOISE = (0.1, 0.4, 0.9)


def _multi_output_problem(rng: np.random.Generator, *, linear: bool) -> dict[str, Any]:
    """C = 3 outputs, noise σ² = :data:`MULTI_OUTPUT_NOISE`: a linear model at its exact
    posterior mean (N = 12, d = 4, p = 15) or a tanh MLP 3-6-3 at its MAP (N = 12, p = 45,
    N·C = 36 < p), isotropic prior α = 2."""
    import torch

    s2 = np.asarray(MULTI_OUTPUT_NOISE)
    n, d, C, alpha = 12, 4 if linear else 3, s2.size, 2.0
    X = rng.normal(size=(n, d))
    A = rng.normal(size=(d, C))
    clean = X @ A + np.array([0.5, -0.3, 0.2]) if linear else np.sin(X @ A)
    y = clean + rng.normal(size=(n, C)) * np.sqrt(s2)
    if linear:
        features = np.hstack([X, np.ones((n, 1))])
        W = np.stack(
            [
                BayesianLinearRegression(np.zeros(d + 1), np.eye(d + 1) / alpha, s).map(
                    (features, y[:, c])
                )
                for c, s in enumerate(s2)
            ]
        )  # (C, d + 1): row c is output c's [w_c, b_c]
        model = torch.nn.Linear(d, C).double()
        with torch.no_grad():
            model.weight.copy_(torch.as_tensor(W[:, :d]))
            model.bias.copy_(torch.as_tensor(W[:, d]))
    else:
        model = _tanh_mlp(d, 6, C, rng)
        _train_to_map(model, X, y, "multioutput-regression", s2, alpha)
    return {
        "model": model,
        "X_train": X,
        "y_train": y,
        "X_test": np.concatenate([rng.normal(size=(5, d)), X[:1]]),
        "likelihood": "multioutput-regression",
        "prior_precision": alpha,
        "noise_var": s2.copy(),
        "subset": None,
    }


_problem("tiny-mlp-regression")(lambda rng: _mlp_problem(rng, "regression", d=2, hidden=3, n=8))
_problem("linear-gaussian-multi-output")(lambda rng: _multi_output_problem(rng, linear=True))
_problem("mlp-regression-multi-output")(lambda rng: _multi_output_problem(rng, linear=False))
_problem("linear-gaussian-prior-mean")(lambda rng: _linear_problem(rng, prior_mean=True))
_problem("mlp-regression-prior-mean")(lambda rng: _mlp_problem(rng, "regression", prior_mean=True))


def _minibatch_problem(rng: np.random.Generator, likelihood: str) -> dict[str, Any]:
    """An MLP at its MAP on N = 24 rows, handed a minibatch of n = 8 of them."""
    spec = _mlp_problem(rng, likelihood, n=24)
    rows = np.sort(rng.choice(24, size=8, replace=False))
    return {
        **spec,
        "X_train": spec["X_train"][rows],
        "y_train": spec["y_train"][rows],
        "n_data": 24,
    }


_problem("mlp-regression-minibatch")(lambda rng: _minibatch_problem(rng, "regression"))
_problem("mlp-multiclass-minibatch")(lambda rng: _minibatch_problem(rng, "multiclass"))
_problem("mlp-binary-minibatch")(lambda rng: _minibatch_problem(rng, "binary"))


def _nonstationary_problem(rng: np.random.Generator) -> dict[str, Any]:
    """A tanh MLP 3-8-1 (p = 41) on N = 16 regression rows, σ0² = 0.3, left after 10 Adam
    steps (learning rate 0.05) on the negative log joint from its initialisation: far from
    its MAP (the gradient is not zero). The prior precision is α = max(2.5, −2λ_min) with
    λ_min the smallest eigenvalue of the negative log-likelihood's Hessian there, so that the
    Hessian precision H + αI is positive definite (its smallest eigenvalue ≥ α/2)."""
    import torch

    n, d, noise_var = 16, 3, 0.3
    X = rng.normal(size=(n, d))
    y = np.sin(X @ rng.normal(size=d)) + rng.normal(0.0, np.sqrt(noise_var), size=n)
    model = _tanh_mlp(d, 8, 1, rng)
    Xt, yt = torch.as_tensor(X), torch.as_tensor(y)
    V = torch.full((sum(int(t.numel()) for t in model.parameters()),), 2.5, dtype=torch.float64)
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    for _ in range(10):
        opt.zero_grad()
        negative_log_joint(model, Xt, yt, "regression", noise_var, V).backward()
        opt.step()
    names = [name for name, _ in model.named_parameters()]
    shapes = [t.shape for t in model.parameters()]
    theta = torch.nn.utils.parameters_to_vector(model.parameters()).detach()

    def nll(flat: Any) -> Any:
        pieces = flat.split([s.numel() for s in shapes])
        tensors = {k: t.view(s) for k, s, t in zip(names, shapes, pieces, strict=True)}
        f = torch.func.functional_call(model, tensors, (Xt,))
        return 0.5 * torch.sum((f[:, 0] - yt) ** 2) / noise_var

    lam = float(torch.linalg.eigvalsh(torch.func.hessian(nll)(theta))[0])
    return {
        "model": model,
        "X_train": X,
        "y_train": y,
        "X_test": np.concatenate([rng.normal(size=(4, d)), X[:2]]),
        "likelihood": "regression",
        "prior_precision": max(2.5, -2.0 * lam),
        "noise_var": noise_var,
        "subset": None,
    }


_problem("mlp-regression-nonstationary")(_nonstationary_problem)


# ----------------------------------------------------------------------------- CNNs
def _sum_over_positions() -> Any:
    """A module summing a (N, 1, H, W) feature map over its positions: (N, 1)."""
    import torch

    class SumOverPositions(torch.nn.Module):
        """f(x) = Σ_r s_r: the sum of the (one-channel) feature map over its positions."""

        def forward(self, s: Any) -> Any:
            return s.sum(dim=(2, 3)).reshape(s.shape[0], 1)

    return SumOverPositions()


def conv_features(X: np.ndarray, image: int = 4, kernel: int = 3) -> np.ndarray:
    """The features (Σ_r patch_r, R) of ``conv-linear-gaussian`` (N, kernel² + 1): a single
    Conv2d(1, 1, kernel) summed over its R output positions is linear in θ = [W, b] with
    these features (the patch in the weight's (kh, kw) row-major order), written here by
    index loops without any convolution."""
    X = np.asarray(X, dtype=np.float64).reshape(-1, image, image)
    side = image - kernel + 1
    patches = np.zeros((X.shape[0], kernel * kernel))
    for i in range(side):
        for j in range(side):
            patches += X[:, i : i + kernel, j : j + kernel].reshape(X.shape[0], -1)
    return np.hstack([patches, np.full((X.shape[0], 1), float(side * side))])


def _conv_linear_problem(rng: np.random.Generator) -> dict[str, Any]:
    """Conv2d(1, 1, 3) on 4 × 4 images (R = 4 positions) summed over the positions, Gaussian
    noise σ0² = 0.3, α = 2 (p = 10, N = 12): set to the exact posterior mean of Bayesian
    linear regression on :func:`conv_features`."""
    import torch

    n, n_test, noise_var, alpha = 12, 6, 0.3, 2.0
    X = rng.normal(size=(n, 16))
    features = conv_features(X)
    y = features @ rng.normal(0.0, 0.5, size=10) + rng.normal(0.0, np.sqrt(noise_var), size=n)
    blr = BayesianLinearRegression(np.zeros(10), np.eye(10) / alpha, noise_var)
    w = blr.map((features, y))
    conv = torch.nn.Conv2d(1, 1, 3)
    model = torch.nn.Sequential(
        torch.nn.Unflatten(1, (1, 4, 4)), conv, _sum_over_positions()
    ).double()
    with torch.no_grad():
        conv.weight.copy_(torch.as_tensor(w[:9]).reshape(1, 1, 3, 3))
        conv.bias.copy_(torch.as_tensor(w[9:]))
    return {
        "model": model,
        "X_train": X,
        "y_train": y,
        "X_test": np.concatenate([rng.normal(size=(n_test - 1, 16)), X[:1]]),
        "likelihood": "regression",
        "prior_precision": alpha,
        "noise_var": noise_var,
        "subset": None,
    }


def _cnn_multiclass_problem(rng: np.random.Generator) -> dict[str, Any]:
    """scikit-learn's 8 × 8 digits 0, 1, 2 (pixels / 16), N = 20 training and M = 6 test
    images (4 held out, 2 training ones), Conv2d(1, 2, 3, stride=2) → tanh → Flatten →
    Linear(18, 3) (p = 77, N·C = 60 < p), trained to its MAP (float64 L-BFGS), α = 2.5."""
    import torch
    from sklearn.datasets import load_digits

    digits = load_digits()
    rows = np.flatnonzero(digits.target < 3)
    chosen = rng.choice(rows, size=24, replace=False)
    X = digits.data[chosen].astype(np.float64) / 16.0
    y = digits.target[chosen].astype(np.int64)
    model = torch.nn.Sequential(
        torch.nn.Unflatten(1, (1, 8, 8)),
        torch.nn.Conv2d(1, 2, 3, stride=2),
        torch.nn.Tanh(),
        torch.nn.Flatten(),
        torch.nn.Linear(18, 3),
    ).double()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.as_tensor(rng.normal(0.0, 0.5, size=tuple(p.shape))))
    _train_to_map(model, X[:20], y[:20], "multiclass", 1.0, 2.5)
    return {
        "model": model,
        "X_train": X[:20],
        "y_train": y[:20],
        "X_test": np.concatenate([X[20:], X[:2]]),
        "likelihood": "multiclass",
        "prior_precision": 2.5,
        "noise_var": 1.0,
        "subset": None,
    }


_problem("conv-linear-gaussian")(_conv_linear_problem)
_problem("cnn-multiclass")(_cnn_multiclass_problem)
#: The logits of ``mlp-multiclass-1000``.
MANY_CLASSES = 1000


def _many_outputs_problem(rng: np.random.Generator) -> dict[str, Any]:
    """A tanh MLP 3-2-1000 (p = 3·2 + 2 + 2·1000 + 1000 = 3,008) at its MAP on N = 40 rows
    labelled with 40 distinct classes of C = 1000 (the other 960 classes unseen), M = 3 test
    points (the last a training input). The prior is diagonal, V_i drawn uniformly
    from [0.5, 4]: under an isotropic prior the MAP rows of the unseen classes would all be
    equal (they solve the same equations), and so would their variances. The weighted
    Jacobian of the data has N·C = 40,000 rows: 0.96 GB in float64."""
    n, d, hidden, C = 40, 3, 2, MANY_CLASSES
    X = rng.normal(size=(n, d))
    y = rng.choice(C, size=n, replace=False).astype(np.int64)
    model = _tanh_mlp(d, hidden, C, rng)
    p = sum(int(t.numel()) for t in model.parameters())
    V = rng.uniform(0.5, 4.0, size=p)
    _train_to_map(model, X, y, "multiclass", 1.0, V)
    return {
        "model": model,
        "X_train": X,
        "y_train": y,
        "X_test": np.concatenate([rng.normal(size=(2, d)), X[:1]]),
        "likelihood": "multiclass",
        "prior_precision": V,
        "noise_var": 1.0,
        "subset": None,
    }


_problem("mlp-multiclass-1000")(_many_outputs_problem)
