"""The target contract: what ``laplace-lab validate --target MODULE:CALLABLE`` calls.

Required — the target itself::

    predictive_variance(model, X_train, y_train, X_test, *, likelihood, prior_precision,
                        noise_var, subset=None) -> array

returns the epistemic (function-space) variances of the linearized Laplace predictive with
the generalised Gauss–Newton (GGN) precision, gᵀΩ⁻¹g with g = ∂f(x*)/∂θ at the MAP and

    Ω = Σ_n J_nᵀ H_n J_n + V,   H_n = 1/σ0² (regression), σ(f_n)(1 − σ(f_n)) (binary),
                                H_n = diag(π_n) − π_n π_nᵀ (multiclass, π_n = softmax f_n);

with a subset S, the Laplace approximation over θ_S only (the other parameters fixed at
the MAP): g_Sᵀ Ω_SS⁻¹ g_S. Arguments:

- ``model``: a ``torch.nn.Module`` at its MAP, in evaluation mode; its parameters' dtype
  (float32 or float64) is the dtype of the case. The target must not change its parameters.
- ``X_train`` (N, d), ``X_test`` (M, d): tensors in the model's dtype. ``y_train`` (N,):
  floats (regression), 0./1. (binary), int64 labels in [0, C) (multiclass).
- ``likelihood``: ``"regression"`` (one output, Gaussian noise of variance ``noise_var``),
  ``"binary"`` (one logit, Bernoulli), ``"multiclass"`` (C logits, categorical),
  ``"multioutput-regression"`` (C outputs, independent Gaussian noise of per-output
  variances σ_c², p(y|f) = Π_c N(y_c | f_c, σ_c²): H_n = diag(1/σ_c²); ``y_train`` (N, C)
  floats, ``noise_var`` a float64 array (C,) of the σ_c², variances (M, C) as for
  multiclass).
- ``prior_precision``: a float α (V = αI) or a float64 array of length p (V = diag), in
  ``parameters()`` order; a precision, not a variance.
- ``noise_var``: σ0² for regression; 1.0 for the classification likelihoods; the (C,) array
  of the σ_c² for multi-output regression.
- ``prior_mean`` (keyword, passed only by the cases of a prior with a non-zero mean, to every
  capability they call): μ0 of the prior N(μ0, V⁻¹), a float64 array of length p in
  ``parameters()`` order; the model is then at the MAP of that prior, log p(θ̂) in the
  evidence is log N(θ̂; μ0, V⁻¹), and Ω (hence the variances) does not depend on μ0 given
  θ̂. A target whose function takes no keyword ``prior_mean`` (nor ``**kwargs``) is not
  offered those cases (N/A).
- ``subset``: None (all parameters) or a 1-D int64 array of distinct indices into the flat
  parameter vector ``torch.nn.utils.parameters_to_vector(model.parameters())``, in any
  order (cases use unsorted, non-contiguous subsets spanning layers).
- Returns an array (NumPy, or anything ``numpy.asarray`` accepts, e.g. a CPU tensor) of
  shape (M,) for regression and binary, (M, C) for multiclass and multi-output regression
  (the diagonal of J* Ω⁻¹ J*ᵀ per test point).

Optional capabilities, declared as attributes of the target (functions attached to it, or
methods of an object whose ``__call__`` is the required function); cases that need one the
target lacks are SKIPPED, not failed:

- ``subset_masks``: a mapping from method name to
  ``select(model, X_train, y_train, *, likelihood, prior_precision, noise_var, k) -> indices``
  (k distinct indices into the flat parameter vector; order ignored). Names, rules as in
  :mod:`laplace_lab.numerics.selection`: ``"gradient_laplace"`` (k largest scores
  s_i = (1/N) Σ_n w_n g_i(x_n)²), ``"greedy_laplace"`` (Alg. 2, candidates the top min(2k, p)
  scores), ``"subnet_diagonal"`` (k smallest diag(Ω), i.e. the largest diagonal-Laplace
  variances), ``"largest_magnitude"`` (k largest |θ̂_i|), ``"largest_marginal_variance"``
  (k largest diag(Ω⁻¹)), ``"last_k"``, ``"neural_linear"`` (the last layer; k ignored).
- ``posterior_samples(model, X_train, y_train, *, likelihood, prior_precision, noise_var,
  subset=None, n_samples, seed) -> (n_samples, p)``: parameter vectors θ ~ N(θ̂, Ω⁻¹)
  (with a subset: θ_S ~ N(θ̂_S, Ω_SS⁻¹), θ̂ elsewhere); ``seed`` an int.
- ``structured_posterior_samples(model, X_train, y_train, *, likelihood, prior_precision,
  noise_var, structure, convention, rank, n_samples, seed) -> (n_samples, p)``: parameter
  vectors θ ~ N(θ̂, P⁻¹) of a structured Laplace posterior over all parameters, P by
  ``structure``: ``"diag"`` (diag(Ω), Ω as above: the posterior of
  ``diagonal_predictive_variance``), ``"kron"`` (the KFAC precision ⊕_l K_l + αI of
  ``kfac_predictive_variance`` with its ``convention``, ``"joint"`` or ``"separate"``, the
  isotropic prior added exactly) or ``"low_rank"`` (U_r diag(λ_r) U_rᵀ + V of
  ``low_rank_predictive_variance`` with its ``rank``). ``convention`` and ``rank`` are
  passed for every structure, None where they do not apply (``convention`` but for
  ``"kron"``, ``rank`` but for ``"low_rank"``); ``seed`` an int; float64 or the model's
  dtype; docs/validation.md, "Structured posterior samples".
- ``log_marginal_likelihood(model, X_train, y_train, *, likelihood, prior_precision,
  noise_var) -> float``: log p(y|θ̂) + log p(θ̂) + (p/2) log 2π − ½ log det Ω (for
  multi-output regression log p(y|θ̂) = Σ_n Σ_c log N(y_nc | f_c(x_n), σ_c²)).
- ``low_rank_predictive_variance(model, X_train, y_train, X_test, *, likelihood,
  prior_precision, noise_var, rank) -> array``: the variances with Ω replaced by
  U_r diag(λ_r) U_rᵀ + V, (λ_r, U_r) the top-r eigenpairs of the GGN part Σ_n J_nᵀH_nJ_n.
- ``optimize_prior(model, X_train, y_train, *, likelihood, prior_precision, noise_var,
  optimize_noise) -> (prior_precision, noise_var)``: empirical Bayes at the given MAP. The
  isotropic prior precision α > 0 — and, when ``optimize_noise`` is True (regression only),
  the noise variance σ0² — that maximise the Laplace log marginal likelihood
  log p(y|θ̂) + log p(θ̂) + (p/2) log 2π − ½ log det Ω as a function of (α, σ0²) with θ̂
  held at the model's parameters (Ω's GGN part scales with 1/σ0²; the MAP is not re-fitted,
  as in post-hoc tuning); ``prior_precision`` (a float) and ``noise_var`` are the starting
  values. Returns two floats; with ``optimize_noise`` False, σ0² as passed.
- ``diagonal_predictive_variance(model, X_train, y_train, X_test, *, likelihood,
  prior_precision, noise_var, subset=None) -> array``: the variances gᵀ diag(Ω)⁻¹ g of the
  factorised (diagonal) Laplace posterior N(θ̂, diag(Ω)⁻¹), Ω as above (per output for
  multiclass); with a ``subset`` S (as for the required function: distinct int64 indices,
  in any order) the diagonal Laplace over θ_S only, the other parameters fixed at the MAP,
  g_Sᵀ diag(Ω_SS)⁻¹ g_S = g_Sᵀ diag(Ω)_S⁻¹ g_S (laplace-torch's ``DiagSubnetLaplace``),
  g_S the test Jacobian's columns in the order of S. Cases pass ``subset`` only when it is
  not None, so a target without the keyword still runs the others; shape as for the
  required function; docs/validation.md, "Diagonal and KFAC Laplace".
- ``kfac_predictive_variance(model, X_train, y_train, X_test, *, likelihood,
  prior_precision, noise_var, convention) -> array``: the variances gᵀ P⁻¹ g of the KFAC
  Laplace posterior for an MLP of ``torch.nn.Linear`` layers with biases (every
  likelihood; per output for multiclass), P = ⊕_l K_l + αI with the isotropic prior added
  exactly (through the eigendecompositions of the factors), the output-side factor the
  backpropagated exact output Hessian G_l = Σ_n D_nᵀ H_n D_n (D_n = ∂f(x_n)/∂s_l, C × out,
  at the layer's output s_l; H_n as in Ω above; for one output G_l = Σ_n w_n δ_n δ_nᵀ,
  w_n = 1/σ0² or σ(f_n)(1 − σ(f_n)); for C logits Σ_n Σ_c g_nc g_ncᵀ over the columns
  g_nc = D_nᵀ r_nc of any square root R_n R_nᵀ = H_n, curvlinops' "type-2") and
  ``convention`` ``"joint"`` (K_l = G_l ⊗ Ã_l on [W b], Ã_l = (1/N) Σ_n ã_n ã_nᵀ with
  ã = [a; 1]) or ``"separate"`` (K_l = G_l ⊗ A_l on W, A_l = (1/N) Σ_n a_n a_nᵀ, and G_l
  alone on b: the weight–bias cross block dropped; laplace-torch's ``KronLaplace``);
  docs/mathematics.md, "Diagonal and KFAC Laplace".
  On a network with ``torch.nn.Conv2d`` layers (weight sharing over R output positions)
  the cases pass one more keyword, ``approximation``, and only there: ``"expand"`` or
  ``"reduce"`` (Eschenhagen et al., arXiv:2311.00636, §3). With ã_{n,r} = [patch_{n,r}; 1]
  (the patch in the weight's (C_in, kh, kw) row-major order, so W (out, C_in·kh·kw)
  row-major is ``parameters()``'s order), g_{n,c,r} = D_{n,r}ᵀ r_nc at the output position
  r: ``"expand"`` Ã_l = (1/(N R)) Σ_{n,r} ã_{n,r} ã_{n,r}ᵀ, G_l = Σ_{n,c,r} g_{n,c,r}
  g_{n,c,r}ᵀ; ``"reduce"`` Ã_l = (1/N) Σ_n ā_n ā_nᵀ with ā_n = (1/R) Σ_r ã_{n,r},
  G_l = Σ_{n,c} ḡ_{n,c} ḡ_{n,c}ᵀ with ḡ_{n,c} = Σ_r g_{n,c,r} (curvlinops'
  ``kfac_approx``); a Linear layer has R = 1, where the two agree; the test Jacobian's
  block of a conv layer is Σ_r δ_{c,r} ã_rᵀ. A target whose function takes no keyword
  ``approximation`` (nor ``**kwargs``) is not offered those cases (N/A), as for
  ``prior_mean``.
- ``ekfac_predictive_variance(model, X_train, y_train, X_test, *, likelihood,
  prior_precision, noise_var, convention) -> array``: gᵀP⁻¹g of the EKFAC Laplace posterior
  (George et al., arXiv:1806.03884) on the same MLPs: each block keeps KFAC's eigenbasis
  Q = Q_G ⊗ Q_A (``"joint"``: one block [W b]; ``"separate"``: Q_G ⊗ Q_Ā on W with
  Ā = (1/N) Σ_n a_n a_nᵀ, and Q_G on b) and takes as eigenvalues the exact second moments
  s_ij = Σ_n Σ_c ((Q_Gᵀ g_nc)_i (Q_Aᵀ ã_n)_j)² (g_nc as for KFAC; one output: g_n = √w_n δ_n;
  on b: s_i = Σ_n Σ_c (Q_Gᵀ g_nc)_i²), so P = ⊕ Q diag(s) Qᵀ + αI, the prior added exactly;
  per output for multiclass; docs/mathematics.md, "EKFAC Laplace".
- ``last_layer_predictive_variance(model, X_train, y_train, X_test, *, likelihood,
  prior_precision, noise_var, structure) -> array``: the variances of the linearized
  Laplace over the parameters S of the model's last ``torch.nn.Linear`` layer only, its
  weight and its bias (the last Linear module the forward pass calls, as laplace-torch's
  ``subset_of_weights="last_layer"`` finds it), every other parameter fixed at the MAP;
  ``structure`` ``"full"`` (g_Sᵀ Ω_SS⁻¹ g_S), ``"diag"`` (g_Sᵀ diag(Ω_SS)⁻¹ g_S) or
  ``"kron"`` (g_Sᵀ P_SS⁻¹ g_S with P_SS the layer's KFAC block G ⊗ A on W and G on b in
  the ``"separate"`` convention above, G = Σ_n H_n for the last layer, α isotropic and added
  exactly); shape as for the required function; docs/validation.md, "Last-layer Laplace".
- ``ef_predictive_variance(model, X_train, y_train, X_test, *, likelihood, prior_precision,
  noise_var, structure) -> array``: the variances of the linearized Laplace posterior
  N(θ̂, P⁻¹) with the empirical Fisher in place of the GGN, P = EF + V,
  EF = Σ_n g_n g_nᵀ with g_n = ∇_θ [−log p(y_n | f(x_n; θ))] at the MAP — the per-sample
  gradients of the negative log-likelihood of the labelled training points, g_n = J_nᵀ r_n
  with r_n = (f_n − y_n)/σ0² (regression), σ(f_n) − y_n (binary) or π_n − e_{y_n}
  (multiclass): summed over the data, not averaged, and labels and residuals matter (it is
  not the GGN); ``structure`` ``"full"`` (gᵀP⁻¹g) or ``"diag"`` (gᵀ diag(P)⁻¹ g, the
  factorised posterior, as for ``diagonal_predictive_variance``); per output for
  multiclass, shape as for the required function; docs/validation.md, "Empirical Fisher".
- ``predictive_probabilities(model, X_train, y_train, X_test, *, likelihood,
  prior_precision, noise_var, link, n_samples, seed) -> array``: class probabilities of the
  linearized Laplace predictive over the logits, f* ~ N(f̂(x*), G Ω⁻¹ Gᵀ) with G = ∂f(x*)/∂θ
  (C × p) and Ω the full GGN precision above, for ``likelihood`` ``"binary"`` ((M,): P(y = 1))
  or ``"multiclass"`` ((M, C)). ``link``: ``"probit"`` (σ(μ/√(1 + πv/8)); C logits: the
  softmax of μ_k/√(1 + πΣ_kk/8)), ``"mc"`` (the average of σ(f) or softmax(f) over
  ``n_samples`` draws of f from the full C × C Gaussian, seeded by the int ``seed``) or
  ``"bridge"`` (multiclass only: the Laplace bridge's Dirichlet mean α/Σ_l α_l after
  conditioning the Gaussian on 1ᵀf = 0, laplace-torch's ``link_approx="bridge"``);
  ``n_samples`` and ``seed`` are passed for every link; docs/mathematics.md, "Class
  probabilities of the linearized predictive".

- ``minibatch_predictive_variance(model, X_train, y_train, X_test, *, likelihood,
  prior_precision, noise_var, n_data) -> array``: the variances gᵀP⁻¹g when ``X_train``,
  ``y_train`` are a minibatch of n rows of a data set of N = ``n_data`` rows (n < N, the
  model at its MAP on all N) and the curvature is the minibatch's scaled to the data set,
  P = (N/n) Σ_{n in batch} J_nᵀ H_n J_n + V, the unbiased estimate of the full GGN from a
  uniform subsample; shape as for the required function; docs/validation.md, "Curvature of
  a minibatch".

- ``low_rank_log_marginal_likelihood(model, X_train, y_train, *, likelihood,
  prior_precision, noise_var, rank) -> float``: the Laplace log marginal likelihood of the
  low-rank posterior of ``low_rank_predictive_variance``, log p(y|θ̂) + log p(θ̂) +
  (p/2) log 2π − ½ log det Ω_r with Ω_r = U_r diag(λ_r) U_rᵀ + V, so for V = αI
  log det Ω_r = p log α + Σ_{i≤r} log(1 + λ_i/α); docs/validation.md, "Low-rank evidence".

- ``hessian_predictive_variance(model, X_train, y_train, X_test, *, likelihood,
  prior_precision, noise_var) -> array``: the variances gᵀΩ_H⁻¹g of the Laplace
  approximation with the true Hessian of the negative log joint in place of the GGN,
  Ω_H = ∇²_θ Σ_n −log p(y_n | f(x_n; θ)) + V = GGN + Σ_n Σ_c r_nc ∇²_θ f_c(x_n) + V
  (r_n = ∂[−log p(y_n | f)]/∂f at f(x_n; θ), as for ``ef_predictive_variance``), at the
  model's parameters θ as given — a MAP or not (the cases include a model a few optimiser
  steps from its initialisation) — and g = ∂f(x*)/∂θ there; the cases' Ω_H are positive
  definite. Shape as for the required function; docs/validation.md, "True-Hessian Laplace".

A target is named ``MODULE:CALLABLE`` (``CALLABLE`` may be dotted, e.g. ``mod:obj.method``).
Shipped: ``laplace_lab.conformance.adapters.numerics:predictive_variance`` (laplace-lab's
own kernels) and ``laplace_lab.conformance.adapters.laplace_torch:predictive_variance``
(laplace-torch 0.3, extra ``laplace-lab[laplace-torch]``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from laplace_lab._plugins import load_plugin

__all__ = [
    "CAPABILITIES",
    "EF_STRUCTURES",
    "KFAC_APPROXIMATIONS",
    "KFAC_CONVENTIONS",
    "LAST_LAYER_STRUCTURES",
    "LINKS",
    "MASK_METHODS",
    "SAMPLE_STRUCTURES",
    "NotOffered",
    "Target",
    "load_target",
]

#: The optional capabilities a target may declare.
CAPABILITIES = (
    "subset_masks",
    "posterior_samples",
    "structured_posterior_samples",
    "log_marginal_likelihood",
    "low_rank_predictive_variance",
    "optimize_prior",
    "diagonal_predictive_variance",
    "kfac_predictive_variance",
    "ekfac_predictive_variance",
    "last_layer_predictive_variance",
    "ef_predictive_variance",
    "predictive_probabilities",
    "minibatch_predictive_variance",
    "low_rank_log_marginal_likelihood",
    "hessian_predictive_variance",
)
#: The links of ``predictive_probabilities``.
LINKS = ("probit", "mc", "bridge")
#: The Hessian structures of ``last_layer_predictive_variance``.
LAST_LAYER_STRUCTURES = ("full", "diag", "kron")
#: The structures of ``ef_predictive_variance``.
EF_STRUCTURES = ("full", "diag")
#: The posterior structures of ``structured_posterior_samples``.
SAMPLE_STRUCTURES = ("diag", "kron", "low_rank")
#: The weight–bias conventions of ``kfac_predictive_variance``.
KFAC_CONVENTIONS = ("joint", "separate")
#: The KFAC approximations of a weight-sharing (Conv2d) layer, ``approximation=``.
KFAC_APPROXIMATIONS = ("expand", "reduce")
#: The mask names a target's ``subset_masks`` may use.
MASK_METHODS = (
    "gradient_laplace",
    "greedy_laplace",
    "subnet_diagonal",
    "largest_magnitude",
    "largest_marginal_variance",
    "last_k",
    "neural_linear",
)


class NotOffered(ValueError):
    """The target does not offer what a call asks for (a structure, a convention, a
    likelihood, a prior), with the reason; an adapter raises it *before* it calls the library.

    The runner reports such a case N/A (not offered), apart from ERROR, which is kept for a
    library that crashed or answered outside the contract on what it does offer. The message
    names the library, its version and why (``"not offered by laplax 0.0.2: no
    Kronecker-factored curvature"``).
    """


@dataclass(frozen=True)
class Target:
    """An implementation under test: the required function and the capabilities it declares.

    Build with :meth:`from_callable` or :func:`load_target`.
    """

    name: str
    predictive_variance: Callable[..., Any]
    capabilities: Mapping[str, Any]

    @classmethod
    def from_callable(cls, fn: Callable[..., Any], name: str | None = None) -> Target:
        """Wrap ``fn`` and read its capability attributes (module docstring)."""
        if not callable(fn):
            raise TypeError(f"target must be callable; got {type(fn).__name__}")
        caps = {c: getattr(fn, c) for c in CAPABILITIES if getattr(fn, c, None) is not None}
        masks = caps.get("subset_masks")
        if masks is not None:
            if not isinstance(masks, Mapping):
                raise TypeError(f"subset_masks must be a mapping; got {type(masks).__name__}")
            unknown = sorted(set(masks) - set(MASK_METHODS))
            if unknown:
                raise ValueError(
                    f"subset_masks must use names among {list(MASK_METHODS)}; got {unknown}"
                )
        for c, value in caps.items():
            if c != "subset_masks" and not callable(value):
                raise TypeError(f"{c} must be callable; got {type(value).__name__}")
        label = name or f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', fn)}"
        return cls(label, fn, caps)

    def has(self, capability: str, method: str | None = None) -> bool:
        """Whether the target declares ``capability`` (and the mask ``method``)."""
        if capability == "predictive_variance":
            return True
        if capability not in self.capabilities:
            return False
        return method is None or method in self.capabilities[capability]

    def call(self, capability: str, *args: Any, method: str | None = None, **kwargs: Any) -> Any:
        """Call the required function or a capability."""
        if capability == "predictive_variance":
            fn = self.predictive_variance
        elif capability == "subset_masks":
            fn = self.capabilities["subset_masks"][method]
        else:
            fn = self.capabilities[capability]
        return fn(*args, **kwargs)


@functools.cache
def _resolve(spec: str) -> Any:
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise ValueError(f"target must be MODULE:CALLABLE; got target={spec!r}")
    obj: Any = load_plugin(module, "target")
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as err:
            raise ValueError(f"target {spec!r}: {module} has no attribute {attr!r}") from err
    return obj


def load_target(spec: str) -> Target:
    """The target named ``MODULE:CALLABLE`` (imported; a ValueError if it cannot be)."""
    if not isinstance(spec, str):
        raise TypeError(f"target must be a string MODULE:CALLABLE; got {type(spec).__name__}")
    return Target.from_callable(_resolve(spec), name=spec)


def as_float_array(value: Any, name: str, shape: tuple[int, ...]) -> np.ndarray:
    """A target's output as a float64 array of ``shape``, or a ValueError naming it."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().double().numpy()
    arr = np.asarray(value, dtype=np.float64)
    squeezed = tuple(n for n in arr.shape if n != 1)
    if arr.shape != shape and squeezed == tuple(n for n in shape if n != 1):
        arr = arr.reshape(shape)  # singleton axes only, e.g. (M, 1) for (M,)
    if arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape}; got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite; got NaN or Inf")
    return arr
