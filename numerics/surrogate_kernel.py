"""JVP matching: a surrogate network whose feature inner products learn the neural tangent kernel.

L. A. Ortega, S. Rodríguez-Santana, D. Hernández-Lobato, "Scalable Linearized Laplace
Approximation via Surrogate Neural Kernel", arXiv:2601.21835 (2026), §2.2–2.3. A surrogate
g_φ : 𝒳 → ℝ^{C×m} is trained so that K̃(x, x') = g_φ(x) g_φ(x')ᵀ approximates the NTK
K(x, x') = J(x) J(x')ᵀ of a trained network f_θ*, by minimising eq. (3),

    L(φ) = E_{x, x', v} ‖g_φ(x) g_φ(x')ᵀ − (J(x) v)(J(x') v)ᵀ‖²,

with probes v of zero mean and identity covariance (Rademacher or Gaussian). Only
Jacobian–vector products z_v(x) = J(x) v enter (:func:`model_jvp`, one forward-mode pass per
probe, ``torch.func.jvp``); the C × P Jacobian is never formed. Since the loss is quadratic
in the target, its gradient is unbiased for that of ‖Q − K‖² whatever the number of probes.

One step draws a mini-batch of training inputs, concatenated with a mini-batch of context
inputs when given (eq. 7), and s probes; the s-probe target ``K̂ = Z Zᵀ`` (Z: the n·C × s
JVPs over √s) and ``Q = G Gᵀ`` (G: the n·C × m features) enter only through small Gram
matrices (:func:`kernel_matching_loss`):

    ‖G Gᵀ − Z Zᵀ‖² = ‖GᵀG‖² − 2‖GᵀZ‖² + ‖ZᵀZ‖²,

O(n·C·(m + s)²) per step instead of O((n·C)²·(m + s)). The *biased* target of eq. (9) zeroes
the train–context blocks of K̂ (block-diagonal target): −2‖GᵀZ‖² becomes
−2(‖G_tᵀZ_t‖² + ‖G_cᵀZ_c‖²). Targets are divided by a scale c (the mean of z² over the first
batch) during training and the features multiplied by √c afterwards, so that the optimiser's
step size does not depend on the size of the NTK.

torch is imported lazily.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from laplace_lab._checks import integer, one_of, positive_float, positive_int
from laplace_lab._random import as_generator
from laplace_lab.numerics._layout import _check_model, _torch, _trainable

__all__ = [
    "SurrogateFit",
    "draw_probes",
    "kernel_matching_loss",
    "model_jvp",
    "surrogate_like",
    "train_surrogate",
]

Dist = Literal["rademacher", "gaussian"]
_DISTS = ("rademacher", "gaussian")
#: Rows per chunk when features are evaluated on many inputs.
_FEATURE_CHUNK = 4096


def _torch_generator(rng: np.random.Generator, device: Any) -> Any:
    """A torch generator seeded by one 63-bit draw of ``rng`` (fast on-device probes)."""
    torch = _torch()
    return torch.Generator(device=device).manual_seed(int(rng.integers(2**63 - 1)))


def draw_probes(
    num_probes: int,
    p: int,
    *,
    rng: np.random.Generator | int,
    dist: Dist = "rademacher",
    dtype: Any = None,
    device: Any = None,
) -> Any:
    """``num_probes`` probes v ∈ ℝ^p with E[v] = 0 and E[v vᵀ] = I, as a (s, p) tensor.

    Rademacher: v_i ∈ {−1, +1} uniformly; Gaussian: v ~ N(0, I). Drawn by torch on ``device``
    from a generator seeded by one draw of ``rng``.

    References
    ----------
    .. [1] L. A. Ortega, S. Rodríguez-Santana, D. Hernández-Lobato, "Scalable Linearized Laplace
       Approximation via Surrogate Neural Kernel", arXiv:2601.21835 (2026), §2.2, eqs. (4)–(6).
    """
    torch = _torch()
    s = positive_int(num_probes, "num_probes")
    p = positive_int(p, "p")
    one_of(dist, "dist", _DISTS)
    gen = _torch_generator(as_generator(rng), device or "cpu")
    dtype = dtype or torch.get_default_dtype()
    if dist == "gaussian":
        return torch.randn((s, p), generator=gen, dtype=dtype, device=device)
    V = torch.empty((s, p), dtype=dtype, device=device).bernoulli_(0.5, generator=gen)
    return V.mul_(2.0).sub_(1.0)


def model_jvp(model: Any, X: Any, V: Any) -> Any:
    """Jacobian–vector products z_v(x_n) = J_θ*(x_n) v for every row of ``X`` and probe of ``V``.

    One forward-mode pass (``torch.func.jvp``) per probe, vectorised over probes with
    ``torch.func.vmap``: the cost is that of s + 1 forward passes and the memory that of s
    sets of activations; the Jacobian is never formed.

    Parameters
    ----------
    model : torch.nn.Module
        The trained network f_θ* (batch-norm layers in eval mode).
    X : tensor, (n, ...)
        Inputs, on the model's device and dtype.
    V : tensor, (s, P)
        Probes over the trainable parameters, flattened in ``named_parameters()`` order.

    Returns
    -------
    tensor, (s, n, *out)
        ``out`` is the model's output shape per input, e.g. (C,).

    References
    ----------
    .. [1] L. A. Ortega, S. Rodríguez-Santana, D. Hernández-Lobato, "Scalable Linearized Laplace
       Approximation via Surrogate Neural Kernel", arXiv:2601.21835 (2026), §2.2.
    """
    return _jvp_function(model)(X, V)


def _jvp_function(model: Any) -> Any:
    """``(X, V) ↦ model_jvp(model, X, V)`` with the model's parameter and buffer maps taken once
    (the training loop calls it every step on the same, fixed model)."""
    torch = _torch()
    from torch.func import functional_call, jvp, vmap

    _check_model(model)
    params = {n: t.detach() for n, t in _trainable(model).items()}
    frozen = {n: t.detach() for n, t in model.named_parameters() if not t.requires_grad}
    buffers = dict(model.named_buffers())
    shapes = [t.shape for t in params.values()]
    sizes = [t.numel() for t in params.values()]
    P = sum(sizes)
    untied = [n for n, _ in model.named_parameters(remove_duplicate=False)]
    plain = None if frozen or buffers or untied != list(params) else _plain_sequential(model)

    def run(X: Any, V: Any) -> Any:
        if V.ndim != 2 or V.shape[1] != P:
            raise ValueError(f"V must have shape (s, P) with P={P}; got V.shape={tuple(V.shape)}")
        tangents = {
            n: v.reshape(V.shape[0], *shape)
            for n, shape, v in zip(params, shapes, torch.split(V, sizes, dim=1), strict=True)
        }

        def f(prm: dict[str, Any]) -> Any:
            if plain is not None:
                return plain(prm, X)
            return functional_call(model, ({**prm, **frozen}, buffers), (X,))

        return vmap(lambda tangent: jvp(f, (params,), (tangent,))[1])(tangents)

    return run


def _plain_sequential(model: Any) -> Any:
    """The forward of a plain ``nn.Sequential`` as a function ``(params, X)`` of its parameter
    map, or None.

    Plain: its layers with parameters are ``nn.Linear`` or zero-padded ``nn.Conv2d`` (exactly
    these types), the others have no parameters or buffers, no module has hooks or a
    ``forward`` set on the instance (the
    caller also asks for untied parameters, all trainable, and no buffers). The
    function applies the layers' own torch operations in order (``F.linear``, ``F.conv2d``
    with the layer's settings), so it returns what ``functional_call`` returns, bit for bit,
    without swapping the parameters into the modules at every call.
    """
    torch = _torch()
    from torch.nn import functional as F
    from torch.nn.modules import module as _module

    hooks = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
    if (
        type(model) is not torch.nn.Sequential
        or any(getattr(_module, f"_global{h}") for h in hooks)
        or any(getattr(m, h) for m in model.modules() for h in hooks)
        or any("forward" in vars(m) for m in model.modules())  # a forward set on the instance
    ):
        return None
    layers = []
    for name, layer in model.named_children():
        if type(layer) is torch.nn.Linear:
            layers.append((name, layer, None))
        elif type(layer) is torch.nn.Conv2d and layer.padding_mode == "zeros":
            conv = (layer.stride, layer.padding, layer.dilation, layer.groups)
            layers.append((name, layer, conv))
        elif next(layer.parameters(), None) is None and next(layer.buffers(), None) is None:
            layers.append((name, layer, False))
        else:
            return None

    def forward(prm: dict[str, Any], X: Any) -> Any:
        for name, layer, conv in layers:
            if conv is False:
                X = layer(X)
                continue
            w, b = prm[f"{name}.weight"], prm.get(f"{name}.bias")
            X = F.linear(X, w, b) if conv is None else F.conv2d(X, w, b, *conv)
        return X

    return forward


def kernel_matching_loss(G: Any, Z: Any, *, n_first: int | None = None) -> Any:
    """The loss of eq. (3) on one batch: ‖G Gᵀ − K̂‖² / R², K̂ = Z Zᵀ (or its biased form).

    Parameters
    ----------
    G : tensor, (R, m)
        Surrogate features, one row per (input, output) pair: Q = G Gᵀ.
    Z : tensor, (R, s)
        JVPs of the same rows over √s: K̂ = Z Zᵀ is the s-probe estimate of the NTK.
    n_first : int, optional
        The biased target of eq. (9): rows ``[:n_first]`` (training inputs) and
        ``[n_first:]`` (context inputs) are made independent, K̂ = blockdiag(K̂_tt, K̂_cc).

    Returns
    -------
    tensor, scalar
        The mean squared entry of Q − K̂, from Gram matrices of size m and s only.

    References
    ----------
    .. [1] L. A. Ortega, S. Rodríguez-Santana, D. Hernández-Lobato, "Scalable Linearized Laplace
       Approximation via Surrogate Neural Kernel", arXiv:2601.21835 (2026), eqs. (3), (8), (9).
    """
    if G.ndim != 2 or Z.ndim != 2 or G.shape[0] != Z.shape[0]:
        raise ValueError(
            f"G and Z must be (R, m) and (R, s) with the same R; got {tuple(G.shape)} and "
            f"{tuple(Z.shape)}"
        )
    R = G.shape[0]
    qq = (G.T @ G).square().sum()
    if n_first is None:
        return (qq - 2.0 * (G.T @ Z).square().sum() + (Z.T @ Z).square().sum()) / R**2
    k = integer(n_first, "n_first", low=0, high=R)
    cross = (G[:k].T @ Z[:k]).square().sum() + (G[k:].T @ Z[k:]).square().sum()
    target = (Z[:k].T @ Z[:k]).square().sum() + (Z[k:].T @ Z[k:]).square().sum()
    return (qq - 2.0 * cross + target) / R**2


def surrogate_like(model: Any, outputs: int, *, rng: np.random.Generator | int) -> Any:
    """The model's architecture with its last ``nn.Linear`` widened to ``outputs``, re-initialised.

    The paper's surrogate is "equivalent to the initial CNN but with m outputs per class"
    (§3): ``outputs = C·m``. Every submodule with ``reset_parameters`` is re-initialised
    from a forked torch RNG seeded by one draw of ``rng`` (the global torch RNG is left
    untouched).

    References
    ----------
    .. [1] L. A. Ortega, S. Rodríguez-Santana, D. Hernández-Lobato, "Scalable Linearized Laplace
       Approximation via Surrogate Neural Kernel", arXiv:2601.21835 (2026), §3.
    """
    torch = _torch()
    _check_model(model)
    outputs = positive_int(outputs, "outputs")
    rng = as_generator(rng)
    last = [name for name, mod in model.named_modules() if isinstance(mod, torch.nn.Linear)]
    if not last:
        raise ValueError("model must contain a torch.nn.Linear output layer; pass surrogate=")
    g = copy.deepcopy(model)
    parent_name, _, attr = last[-1].rpartition(".")
    parent = g.get_submodule(parent_name) if parent_name else g
    old = getattr(parent, attr)
    ref = next(old.parameters())
    new = torch.nn.Linear(
        old.in_features,
        outputs,
        bias=old.bias is not None,
        dtype=ref.dtype,
        device=ref.device,
    )
    setattr(parent, attr, new)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(rng.integers(2**63 - 1)))
        for mod in g.modules():
            if hasattr(mod, "reset_parameters"):
                mod.reset_parameters()
    for t in g.parameters():
        t.requires_grad_(True)
    return g


@dataclass(frozen=True)
class SurrogateFit:
    """A trained surrogate g_φ and its feature scale √c: features g(x) = √c · g_φ(x).

    Attributes
    ----------
    surrogate : torch.nn.Module
        Maps (n, ...) inputs to (n, C·m) or (n, C, m) outputs.
    n_outputs, m : int
        C and the number of features per output.
    scale : float
        c, the mean squared JVP of the first batch (targets were divided by it).
    losses : tuple of float
        The batch loss of eq. (3) at every step, on the scale of K/c.
    """

    surrogate: Any
    n_outputs: int
    m: int
    scale: float
    losses: tuple[float, ...]

    def features(self, X: Any) -> Any:
        """g(x) for every row of ``X``: a (n, C, m) tensor (no gradient), in chunks."""
        torch = _torch()
        ref = next(self.surrogate.parameters())
        X = torch.as_tensor(np.asarray(X) if not torch.is_tensor(X) else X)
        X = X.to(device=ref.device, dtype=ref.dtype if X.is_floating_point() else X.dtype)
        with torch.no_grad():
            out = [
                self.surrogate(X[a : a + _FEATURE_CHUNK]).reshape(-1, self.n_outputs, self.m)
                for a in range(0, X.shape[0], _FEATURE_CHUNK)
            ]
        return torch.cat(out) * self.scale**0.5


def _inputs(X: Any, ref: Any, name: str) -> Any:
    torch = _torch()
    if not torch.is_tensor(X):
        try:
            X = torch.as_tensor(np.asarray(X))
        except (TypeError, ValueError) as err:
            raise TypeError(
                f"{name} must be a tensor or an array; got {type(X).__name__}"
            ) from err
    if X.ndim < 1 or X.shape[0] == 0:
        raise ValueError(f"{name} must have at least one row; got shape {tuple(X.shape)}")
    if X.is_floating_point():
        X = X.to(dtype=ref.dtype)
        if not bool(torch.isfinite(X).all()):
            raise ValueError(f"{name} must be finite; it contains NaN or Inf")
    return X.to(device=ref.device)


class _Batches:
    """Mini-batch indices: a fresh permutation of 0..n−1 per epoch, drawn from ``rng``."""

    def __init__(self, n: int, size: int, rng: np.random.Generator) -> None:
        self.n, self.size, self.rng = n, min(size, n), rng
        self.order, self.at = rng.permutation(n), 0

    def next(self) -> np.ndarray:
        if self.at + self.size > self.n:
            self.order, self.at = self.rng.permutation(self.n), 0
        idx = self.order[self.at : self.at + self.size]
        self.at += self.size
        return idx


def train_surrogate(
    model: Any,
    X_train: Any,
    *,
    m: int,
    rng: np.random.Generator | int,
    context: Any = None,
    biased: bool = False,
    surrogate: Any = None,
    steps: int = 2000,
    batch_size: int = 64,
    context_batch_size: int | None = None,
    num_probes: int = 4,
    dist: Dist = "rademacher",
    lr: float = 1e-3,
    progress: bool = True,
) -> SurrogateFit:
    """Train g_φ by JVP matching (eq. 3), optionally with context points and a biased target.

    The context points are those of eq. (7), the biased target that of eq. (9).

    Parameters
    ----------
    model : torch.nn.Module
        The trained network f_θ*, returning (n, C) (or (n,) for one output); in eval mode.
    X_train : (N, ...) tensor or array
        Training inputs.
    m : int
        Features per output: g_φ(x) ∈ ℝ^{C×m}.
    rng : numpy.random.Generator or int
        Source of the surrogate's initialisation, the mini-batches and the probes.
    context : (N_c, ...) tensor or array, optional
        Context inputs, concatenated to every training batch (eq. 7).
    biased : bool
        Zero the train–context cross-covariances of the target (eq. 9); needs ``context``.
    surrogate : torch.nn.Module, optional
        g_φ, returning (n, C·m) or (n, C, m); default :func:`surrogate_like` of the model.
    steps : int
        Adam steps (cosine-annealed learning rate from ``lr`` to 0); 0 keeps ``surrogate``
        as given (e.g. a fixed feature map).
    batch_size, context_batch_size : int
        Training and context inputs per step (the latter defaults to ``batch_size``).
    num_probes : int
        Probes s per step; the gradient is unbiased for any s, its variance falls as 1/s.
    dist : {"rademacher", "gaussian"}
        Probe distribution.
    lr : float
        Initial Adam learning rate.
    progress : bool
        Show a tqdm bar on stderr.

    Returns
    -------
    SurrogateFit

    References
    ----------
    .. [1] L. A. Ortega, S. Rodríguez-Santana, D. Hernández-Lobato, "Scalable Linearized Laplace
       Approximation via Surrogate Neural Kernel", arXiv:2601.21835 (2026), §2.2–2.3,
       eqs. (3), (7)–(9).
    """
    torch = _torch()
    from tqdm.auto import tqdm

    from laplace_lab.numerics.jacobians import check_eval_mode

    _check_model(model)
    check_eval_mode(model)
    m = positive_int(m, "m")
    steps = integer(steps, "steps", low=0)
    batch_size = positive_int(batch_size, "batch_size")
    context_batch_size = positive_int(
        batch_size if context_batch_size is None else context_batch_size, "context_batch_size"
    )
    num_probes = positive_int(num_probes, "num_probes")
    one_of(dist, "dist", _DISTS)
    lr = positive_float(lr, "lr")
    if not isinstance(biased, bool):
        raise TypeError(f"biased must be a bool; got {type(biased).__name__}")
    if biased and context is None:
        raise ValueError("biased=True needs context points (eq. 9 zeroes train–context terms)")
    rng = as_generator(rng)
    init_rng, batch_rng, probe_rng = rng.spawn(3)
    ref = next(iter(_trainable(model).values()))
    X_train = _inputs(X_train, ref, "X_train")
    context = None if context is None else _inputs(context, ref, "context")
    with torch.no_grad():
        out = model(X_train[:2])
    C = int(np.prod(out.shape[1:])) if out.ndim > 1 else 1
    if surrogate is None:
        surrogate = surrogate_like(model, C * m, rng=init_rng)
        with torch.no_grad():
            shape = tuple(surrogate(X_train[:2]).shape)
        if shape[1:] not in ((C * m,), (C, m)):
            raise ValueError(
                f"model: its default surrogate (the model with its last nn.Linear widened to "
                f"C·m = {C * m} outputs) returns {shape} for 2 inputs, because the model "
                "reshapes what its last nn.Linear returns; pass surrogate= returning (n, C·m)"
            )
    _check_model(surrogate)
    P = sum(t.numel() for t in _trainable(model).values())
    train_batches = _Batches(X_train.shape[0], batch_size, batch_rng)
    ctx_batches = (
        None if context is None else _Batches(context.shape[0], context_batch_size, batch_rng)
    )
    jvp = _jvp_function(model)
    params = [t for t in surrogate.parameters() if t.requires_grad]
    opt = torch.optim.Adam(params, lr=lr, foreach=True)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(steps, 1), eta_min=0.0)
    scale, losses = None, []
    surrogate.train()
    for _ in tqdm(range(steps), desc="ScaLLA surrogate", disable=not progress):
        X, n_first = X_train[train_batches.next()], None
        if ctx_batches is not None:  # X_batch = [X_train^(b); X_context^(b)] (eq. 7)
            n_first = int(X.shape[0]) * C  # rows (input, output) of the training inputs
            X = torch.cat([X, context[ctx_batches.next()]])
        V = draw_probes(
            num_probes, P, rng=probe_rng, dist=dist, dtype=ref.dtype, device=ref.device
        )
        with torch.no_grad():
            Z = jvp(X, V).reshape(num_probes, -1).T  # (n·C, s)
            if scale is None:
                scale = float(Z.square().mean()) or 1.0
            Z = Z / (num_probes * scale) ** 0.5
        G = _features(surrogate, X, C, m)
        loss = kernel_matching_loss(G, Z, n_first=n_first if biased else None)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    surrogate.eval()
    if scale is None:  # no training: features are taken as given, their shape checked here
        scale = 1.0
        with torch.no_grad():
            _features(surrogate, X_train[:2], C, m)
    return SurrogateFit(surrogate, C, m, scale, tuple(losses))


def _features(surrogate: Any, X: Any, C: int, m: int) -> Any:
    """g_φ(X) as (n·C, m) rows (row n·C + c: output c of input n)."""
    out = surrogate(X)
    if tuple(out.shape[1:]) not in ((C * m,), (C, m)):
        raise ValueError(
            f"surrogate must return (n, C·m) = (n, {C * m}) or (n, {C}, {m}) outputs; got "
            f"{tuple(out.shape)}"
        )
    return out.reshape(-1, m)
