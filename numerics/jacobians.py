"""Per-sample Jacobians, Gradient-Laplace scores and the parameter layout of torch models.

Real network Jacobians come from torch.func: g(x) = ∇_θ f_θ(x) at θ̂ for every row of X, by
``vmap`` over ``jacrev`` of a single-input ``functional_call``, in chunks of rows under a
memory budget. Columns are flattened in ``model.named_parameters()`` order, first layer
first — the project-wide convention for θ (docs/mathematics.md, "Notation and
conventions").

- :func:`per_sample_jacobian` returns J (N, p) for one output or (N, C, p) for C outputs; with
  ``subset`` it returns only the columns S, slicing each chunk as it is computed, so the peak
  memory is O(N·k + chunk·C·p) — never the full N×p Jacobian (laplace-torch computes the
  full Jacobian and slices it afterwards, its issues #217 and #232).
- :func:`subset_gram` streams the Gram Σ_n J_n[:, S]ᵀ H_n J_n[:, S] of a column subset in
  float64 (the data term of Ω_SS) without storing J[:, S].
- :func:`gradient_scores` streams s_i = (1/N) Σ_n w_n g_i(x_n)² (the Gradient-Laplace scores)
  without storing J.
- :func:`parameter_layout` names the slice and layer of every parameter tensor (NeuralLinear,
  Last-k, KFAC need it).

torch is imported lazily so that :mod:`numerics` works without it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from laplace_lab._checks import nonnegative_float, one_of, positive_int
from laplace_lab._checks import subset as check_subset
from laplace_lab.numerics._large_outputs import empty as _empty
from laplace_lab.numerics._layout import (
    ParameterBlock,
    ParameterLayout,
    _check_model,
    _torch,
    _trainable,
    parameter_layout,
)
from laplace_lab.numerics.ggn import logistic_weight_root

__all__ = [
    "JACOBIAN_BUDGET_BYTES",
    "ParameterBlock",
    "ParameterLayout",
    "gradient_scores",
    "jacobian_chunks",
    "layer_call_order",
    "parameter_layout",
    "per_sample_jacobian",
    "subset_gram",
    "to_cupy",
]

#: Default memory budget of one chunk of per-sample Jacobians (bytes): 256 MiB.
JACOBIAN_BUDGET_BYTES = 1 << 28

_LIKELIHOODS = ("regression", "binary", "multiclass")


# ------------------------------------------------------------------------------ Jacobians
def _check_eval_mode(model: Any) -> None:
    """Batch-norm and dropout layers must be in eval mode: in training mode a per-sample
    Jacobian would depend on the rest of the batch (batch norm) or on random masks
    (dropout), and torch.func refuses both with errors that do not name the layer."""
    torch = _torch()
    kinds = (
        (torch.nn.modules.batchnorm._BatchNorm, "batch-norm"),
        (torch.nn.modules.dropout._DropoutNd, "dropout"),
    )
    for name, m in model.named_modules():
        for cls, kind in kinds:
            if isinstance(m, cls) and m.training:
                raise ValueError(
                    f"model must be in eval mode for per-sample Jacobians: {kind} layer "
                    f"{name!r} is in training mode (call model.eval())"
                )
        if isinstance(m, kinds[0][0]) and m.running_mean is None:
            raise ValueError(
                f"model must normalise each sample alone for per-sample Jacobians: batch-norm "
                f"layer {name!r} has no running statistics (track_running_stats=False), so it "
                "normalises with the statistics of the batch even in eval mode"
            )


def _as_input(model: Any, X: Any) -> Any:
    torch = _torch()
    ref = next(iter(_trainable(model).values()))
    if not isinstance(X, torch.Tensor):
        try:
            X = torch.as_tensor(np.asarray(X))
        except (TypeError, ValueError) as err:
            raise TypeError(f"X must be a tensor or an array; got {type(X).__name__}") from err
    if X.ndim < 2 or X.shape[0] == 0:
        hint = " (N samples of one feature: X.reshape(-1, 1))" if X.ndim == 1 else ""
        raise ValueError(
            f"X must have shape (N, ...) with one row per sample; got shape {tuple(X.shape)}{hint}"
        )
    if X.is_floating_point():
        X = X.to(dtype=ref.dtype)
    if X.is_floating_point() and not bool(torch.isfinite(X).all()):
        raise ValueError("X must be finite; it contains NaN or Inf")
    return X.to(device=ref.device)


def _chunk(chunk_size: Any, row_bytes: int, n: int) -> int:
    if chunk_size is None:
        return max(1, min(n, JACOBIAN_BUDGET_BYTES // max(row_bytes, 1)))
    return min(positive_int(chunk_size, "chunk_size"), n)


def _output_shape(model: Any, X: Any) -> tuple[int, ...]:
    """The per-sample output shape, from a batch of two rows (one when N = 1): a batch of one
    cannot tell an (N, C) output from one whose batch axis a ``squeeze()`` removed."""
    torch = _torch()
    b = min(2, int(X.shape[0]))
    with torch.no_grad():
        try:
            out = model(X[:b])
        except RuntimeError as err:
            raise ValueError(
                f"X does not fit the model: model(X[:{b}]) with X of shape {tuple(X.shape)} "
                f"failed: {err}"
            ) from err
    if b == 1 and (out.ndim == 0 or out.shape[0] != 1):
        shape = tuple(out.shape)  # one row whose batch axis a squeeze() removed
    elif out.ndim == 0 or out.shape[0] != b:
        raise ValueError(
            f"model must return one output row per input row: model(X[:{b}]) returned shape "
            f"{tuple(out.shape)}"
        )
    else:
        shape = tuple(out.shape[1:])
    if len(shape) > 1:
        raise ValueError(
            f"model must return (N,), (N, 1) or (N, C) outputs; got {tuple(out.shape)}"
        )
    return shape


def layer_call_order(model: Any, X: Any) -> list[int]:
    """The parameterised layers of ``model`` (numbered as in :func:`parameter_layout`), one
    entry per call, in the order its forward pass starts them on the first row of ``X``.

    The flat layout numbers layers in registration order; "the last layer" (NeuralLinear,
    Last-k, ``subset="last_layer"``) is the last one called, which differs when a model
    registers its layers in another order than it applies them. A module that owns
    parameters and also has parameterised children counts as started when its own forward
    starts.
    """
    torch = _torch()
    _check_model(model)
    _check_eval_mode(model)  # before a forward pass could update batch-norm statistics
    X = _as_input(model, X)
    layout = parameter_layout(model)
    modules = dict(model.named_modules())
    layers = {b.module: b.layer for b in layout.blocks}
    order: list[int] = []

    def hook(layer: int) -> Any:
        return lambda *_: order.append(layer)

    handles = [modules[name].register_forward_pre_hook(hook(i)) for name, i in layers.items()]
    try:
        with torch.no_grad():
            model(X[:1])
    finally:
        for h in handles:
            h.remove()
    return order


_METHODS = ("auto", "vmap", "linear")


def _method(method: Any) -> str:
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}; got {method!r}")
    return method


def _vmap_chunks(model: Any, X: Any, B: int, n_out: int) -> Iterator[tuple[int, Any, Any]]:
    """(start, J (b, C, p), f (b, C)) by torch.func: vmap over jacrev of one-sample calls."""
    torch = _torch()
    from torch.func import functional_call, jacrev, vmap

    params = {n: t.detach() for n, t in _trainable(model).items()}
    frozen = {n: t.detach() for n, t in model.named_parameters() if not t.requires_grad}
    buffers = dict(model.named_buffers())
    names = list(params)

    def f(prm: dict[str, Any], x: Any) -> tuple[Any, Any]:
        out = functional_call(model, ({**prm, **frozen}, buffers), (x.unsqueeze(0),))
        return out.reshape(-1), out.reshape(-1)

    jac = vmap(jacrev(f, has_aux=True), in_dims=(None, 0))
    for start in range(0, X.shape[0], B):
        xb = X[start : start + B]
        with _random_draws_refused():
            grads, fb = jac(params, xb)
        J = torch.cat([grads[n].reshape(xb.shape[0], n_out, -1) for n in names], dim=-1)
        yield start, J, fb.detach()


@contextmanager
def _random_draws_refused() -> Iterator[None]:
    """Turn torch.func's refusal of a random operation under ``vmap`` into a ValueError."""
    try:
        yield
    except RuntimeError as err:
        if "random" not in str(err):
            raise
        raise ValueError(
            "model draws random numbers in its forward pass; per-sample Jacobians need "
            "a deterministic model (call model.eval())"
        ) from err


def _autograd_row(model: Any, x: Any, n_out: int) -> Any:
    """J (1, C, p) of the one-row batch ``x`` by reverse-mode autograd, one backward pass per
    output: the reference of the ``"auto"`` check. A forward pass under ``vmap`` first
    refuses a model that draws random numbers (a dropout outside an ``nn.Dropout`` module,
    which two autograd passes could not tell from a deterministic one when their masks agree
    on the row). Unlike ``jacrev`` neither loads ``torch._dynamo`` (about a second and
    0.1 GB of resident memory)."""
    from torch.func import vmap

    torch = _torch()
    with torch.no_grad(), _random_draws_refused():
        vmap(lambda row: model(row.unsqueeze(0)))(x)
    params = list(_trainable(model).values())
    with torch.enable_grad():
        out = model(x).reshape(-1)
        rows = []
        for c in range(n_out):
            grads = torch.autograd.grad(out[c], params, retain_graph=True, allow_unused=True)
            rows.append(
                torch.cat(
                    [
                        torch.zeros_like(t).reshape(-1) if g is None else g.reshape(-1)
                        for g, t in zip(grads, params, strict=True)
                    ]
                )
            )
    return torch.stack(rows)[None]


def _chunks(
    model: Any, X: Any, *, chunk_size: int | None, method: str
) -> Iterator[tuple[int, Any, Any, Any]]:
    """(start, f (b, C), signals or None, J (b, C, p) or None) over row chunks of X.

    ``method="linear"`` (or ``"auto"`` when every trainable parameter sits in an
    ``nn.Linear``) yields the layer signals of :mod:`laplace_lab.numerics._linear_jacobians` (one
    forward, C backward passes per chunk); ``"auto"`` first checks row 0 against autograd and
    falls back to ``vmap(jacrev)`` on any mismatch. Otherwise J comes from torch.func.
    """
    from laplace_lab.numerics._linear_jacobians import LinearSignals, linear_plan, linear_signals

    _check_model(model)
    _check_eval_mode(model)
    method = _method(method)
    X = _as_input(model, X)
    out_shape = _output_shape(model, X)
    n_out = int(np.prod(out_shape)) if out_shape else 1
    layout = parameter_layout(model)
    item = next(iter(_trainable(model).values())).element_size()
    B = _chunk(chunk_size, n_out * layout.p * item, X.shape[0])
    plan = None if method == "vmap" else linear_plan(model, layout)
    if method == "linear" and plan is None:
        raise ValueError(
            "method='linear' needs every trainable parameter to be the weight or bias of one "
            "torch.nn.Linear (not shared with another module) whose weight is trainable"
        )
    if plan is not None:
        first = linear_signals(model, plan, X[:B])
        ok = first is not None
        if ok and method == "auto":  # one-row check against autograd
            ref = _autograd_row(model, X[:1], n_out)
            one = LinearSignals(
                plan, tuple(a[:1] for a in first[1].a), tuple(d[:1] for d in first[1].delta)
            ).full()
            scale = float(ref.abs().max()) or 1.0
            tol = 1e-4 if ref.dtype == _torch().float32 else 1e-9
            ok = float((one - ref).abs().max()) <= tol * scale
        if not ok and method == "linear":
            raise ValueError("method='linear': a Linear layer is not applied once per sample")
        if ok:
            for start in range(0, X.shape[0], B):
                xb = X[start : start + B]
                res = first if start == 0 else linear_signals(model, plan, xb)
                if res is None:  # cannot happen for a model that passed on the first chunk
                    raise RuntimeError("a Linear layer stopped being applied once per sample")
                yield start, res[0], res[1], None
            return
    for start, J, fb in _vmap_chunks(model, X, B, n_out):
        yield start, fb, None, J


def jacobian_chunks(
    model: Any, X: Any, *, chunk_size: int | None = None, method: str = "auto"
) -> Iterator[tuple[int, Any, Any]]:
    """Yield ``(start, J_chunk, f_chunk)`` over row chunks of X: the per-sample Jacobian.

    ``J_chunk`` is (B, p) for a scalar output (model returning (N,) or (N, 1)) and
    (B, C, p) for C outputs; ``f_chunk`` is the model output (B,) or (B, C). Only one chunk
    is alive at a time (the caller decides what to keep). ``chunk_size`` defaults to the
    largest number of rows whose Jacobian fits in :data:`JACOBIAN_BUDGET_BYTES`.
    ``method``: "vmap" (torch.func, any model), "linear" (outer products δ aᵀ, see
    :mod:`laplace_lab.numerics._linear_jacobians`; Linear-layer networks only) or "auto"
    (linear when applicable and verified on row 0).
    """
    for start, fb, sig, J in _chunks(model, X, chunk_size=chunk_size, method=method):
        J = sig.full() if J is None else J
        if J.shape[1] == 1:
            yield start, J[:, 0], fb[:, 0]
        else:
            yield start, J, fb


def per_sample_jacobian(
    model: Any,
    X: Any,
    *,
    subset: Any = None,
    chunk_size: int | None = None,
    method: str = "auto",
    out: Any = None,
) -> Any:
    """Per-sample Jacobian J[n] = ∇_θ f_θ(x_n) at the model's current θ (the rows g(x_n)ᵀ).

    Parameters
    ----------
    model : torch.nn.Module
        Returns (N,), (N, 1) or (N, C) outputs; batch-norm layers must be in eval mode.
    X : (N, ...) tensor or array
        Inputs (cast to the parameters' floating dtype and device).
    subset : sequence of int, optional
        Distinct flat parameter indices S; only these columns are returned, in this order.
        torch.func path: each chunk is sliced as it is computed, memory O(N·k + chunk·C·p);
        Linear path: columns δ_i a_j are formed directly, memory O(N·k + chunk·widths).
    chunk_size : int, optional
        Rows per chunk; default from :data:`JACOBIAN_BUDGET_BYTES`.
    method : {"auto", "vmap", "linear"}
        See :func:`jacobian_chunks`.
    out : torch.Tensor, optional
        A buffer of the returned shape, dtype and device to write J into (reused across
        calls, e.g. when streaming test batches, it saves the first-touch cost of a fresh
        N × p output). Without it, a large CPU output is allocated on transparent huge pages
        (:mod:`laplace_lab.numerics._large_outputs`).

    Returns
    -------
    torch.Tensor
        (N, p) or (N, k) for one output; (N, C, p) or (N, C, k) for C outputs; on the
        model's device, in the parameters' dtype. ``out`` itself when given.
    """
    torch = _torch()
    _check_model(model)
    p = parameter_layout(model).p
    idx = None if subset is None else check_subset(subset, p, "subset", nonempty=True)
    X = _as_input(model, X)
    cols = p if idx is None else idx.size
    given, buf = out, None
    tidx = None
    for start, fb, sig, J in _chunks(model, X, chunk_size=chunk_size, method=method):
        if buf is None:
            ref = fb if J is None else J
            shape = (X.shape[0], fb.shape[1], cols)
            buf = (
                _empty(shape, dtype=ref.dtype, device=ref.device)
                if given is None
                else _output_view(given, shape, ref)
            )
        dest = buf[start : start + fb.shape[0]]
        if sig is not None and idx is None:
            sig.full(out=dest)  # written in place: no chunk copy
            continue
        if sig is not None:
            J = sig.columns(idx)
        elif idx is not None:
            if tidx is None:
                tidx = torch.as_tensor(idx, device=J.device)
            J = J.index_select(-1, tidx)
        if tuple(J.shape) != tuple(dest.shape):  # copy_ would broadcast silently
            raise RuntimeError(f"Jacobian chunk of shape {tuple(J.shape)} for {tuple(dest.shape)}")
        dest.copy_(J)
        del J
    return given if given is not None else (buf[:, 0] if buf.shape[1] == 1 else buf)


#: Rows of J[:, S] converted to float64 at a time by :func:`subset_gram` (cache-sized blocks).
_GRAM_ROWS = 1024


def subset_gram(
    model: Any,
    X: Any,
    subset: Any,
    *,
    likelihood: str = "regression",
    chunk_size: int | None = None,
    eps: float = 1e-6,
    method: str = "auto",
) -> np.ndarray:
    """G = Σ_n J_n[:, S]ᵀ H_n J_n[:, S] (k × k, float64 on the host), streamed over rows.

    The data term of the sub-network precision Ω_SS = G + V_S (for regression Ω_SS uses
    G/σ0²) with H_n = 1 (regression), p_n(1 − p_n) (binary) or diag(π_n) − π_nπ_nᵀ + εI
    (multiclass), the weights of :func:`gradient_scores`. J[:, S] is never stored: each
    chunk of rows gives its columns in the model's precision (the values
    :func:`per_sample_jacobian` returns), which are weighted, converted to float64 in blocks
    of rows and accumulated by a symmetric rank-b update (BLAS ``dsyrk``: half the flops
    of a general product) — memory O(chunk·k + k²). On the outer-product path each block
    of rows is built directly with S's columns grouped by layer (no chunk of columns in S's
    order), and the Gram is permuted back at the end. On a CUDA model the blocks are
    accumulated on the device by ``mm``.

    Parameters
    ----------
    model : torch.nn.Module
    X : (N, ...) tensor or array
    subset : sequence of int
        Distinct flat parameter indices S, in the order of G's rows.
    likelihood : {"regression", "binary", "multiclass"}
    chunk_size : int, optional
        Rows per Jacobian chunk (:func:`per_sample_jacobian`).
    eps : float
        Multiclass Hessian jitter ε ≥ 0.
    method : {"auto", "vmap", "linear"}
        See :func:`jacobian_chunks`.

    Returns
    -------
    numpy.ndarray
        (k, k) symmetric float64.

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), §2.1 eq. (2) and App. D.2 (Ω_SS).
    """
    _check_model(model)
    one_of(likelihood, "likelihood", _LIKELIHOODS)
    eps = nonnegative_float(eps, "eps")
    idx = check_subset(subset, parameter_layout(model).p, "subset", nonempty=True)
    chunks = _chunks(model, X, chunk_size=chunk_size, method=method)
    return _gram_of(chunks, idx, likelihood, eps)


def _check_outputs(fb: Any, likelihood: str) -> None:
    if (fb.shape[1] > 1) != (likelihood == "multiclass"):
        raise ValueError(
            f"likelihood={likelihood!r} does not match the model's output of shape "
            f"{tuple(fb.shape)}"
        )


def _gram_of(chunks: Iterable[Any], idx: np.ndarray, likelihood: str, eps: float) -> np.ndarray:
    """:func:`subset_gram` over the chunks of :func:`_chunks` (validated arguments)."""
    from laplace_lab.numerics._linear_jacobians import column_plan

    torch = _torch()
    gram, order = _GramSum(idx.size), None
    for _, fb, sig, J in chunks:
        _check_outputs(fb, likelihood)
        W = None if likelihood == "regression" else _weights(fb, likelihood, float(eps))
        if sig is None:
            cols = J.index_select(-1, torch.as_tensor(idx, device=J.device))
            gram.add(cols if W is None else W.transpose(1, 2) @ cols)
            continue
        # The columns of S grouped by layer, built and converted a block of rows at a time
        # (the Gram of the permuted columns is the permuted Gram: undone at the end).
        if order is None:
            cp = column_plan(sig.plan, idx, fb.device)
            order, buf = cp.order, None
        for a in range(0, fb.shape[0], _GRAM_ROWS):
            b = min(a + _GRAM_ROWS, fb.shape[0])
            reuse = buf is not None and buf.shape[0] == b - a
            buf = sig.grouped_columns(cp, a, b, out=buf if reuse else None)
            gram.add(buf if W is None else W[a:b].transpose(1, 2) @ buf)
    G = gram.result()
    if order is None:
        return G
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    return G[np.ix_(inverse, inverse)]


class _GramSum:
    """Σ blockᵀblock over blocks of Jacobian rows (any leading shape, k columns), float64.

    On the host each block of at most :data:`_GRAM_ROWS` rows is converted to float64 and
    added by a symmetric rank-b update (BLAS ``dsyrk``: half the flops of a product) to the
    upper triangle; on a CUDA device the blocks are accumulated by ``mm``.
    """

    def __init__(self, k: int) -> None:
        self.k = k
        self.host: np.ndarray | None = None
        self.device: Any = None

    def add(self, cols: Any) -> None:
        import scipy.linalg.blas

        cols = cols.reshape(-1, self.k)
        if cols.device.type != "cpu":
            block = cols.double()
            if self.device is None:
                self.device = block.T @ block
            else:
                self.device.addmm_(block.T, block)
            return
        if self.host is None:
            self.host = np.zeros((self.k, self.k), dtype=np.float64, order="F")
        for a in range(0, cols.shape[0], _GRAM_ROWS):
            block = cols[a : a + _GRAM_ROWS].double().numpy()
            # Fortran view of blockᵀ (k × b): syrk(trans=0) adds blockᵀblock to the upper half
            self.host = scipy.linalg.blas.dsyrk(1.0, block.T, beta=1.0, c=self.host, overwrite_c=1)

    def result(self) -> np.ndarray:
        if self.device is not None:
            return self.device.cpu().numpy()
        upper = np.triu(self.host)
        return upper + np.triu(upper, 1).T


def _output_view(out: Any, shape: tuple[int, int, int], ref: Any) -> Any:
    """``out`` checked against the Jacobian's shape, dtype and device; viewed as (N, C, cols)."""
    torch = _torch()
    want = shape[::2] if shape[1] == 1 else shape
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"out must be a torch.Tensor; got {type(out).__name__}")
    if tuple(out.shape) != want or out.dtype != ref.dtype or out.device != ref.device:
        raise ValueError(
            f"out must have shape {want}, dtype {ref.dtype} and device {ref.device}; got "
            f"shape {tuple(out.shape)}, dtype {out.dtype}, device {out.device}"
        )
    if not out.is_contiguous():
        raise ValueError("out must be contiguous")
    return out.view(shape)


def _weights(f: Any, likelihood: str, eps: float) -> Any:
    """Square-root weights W_n with H_n = W_n W_nᵀ, (B, C, K): K = 1 for one output, C for C."""
    torch = _torch()
    if likelihood == "regression":
        return torch.ones_like(f)[:, :, None]
    if likelihood == "binary":
        return logistic_weight_root(f)[:, :, None]
    pi = torch.softmax(f, dim=-1)
    H = torch.diag_embed(pi) - pi[:, :, None] * pi[:, None, :]
    H = H + eps * torch.eye(pi.shape[-1], dtype=pi.dtype, device=pi.device)
    lam, U = torch.linalg.eigh(H)
    return U * torch.sqrt(torch.clamp(lam, min=0.0))[:, None, :]


def gradient_scores(
    model: Any,
    X: Any,
    *,
    likelihood: str,
    chunk_size: int | None = None,
    eps: float = 1e-6,
    method: str = "auto",
) -> Any:
    """Gradient-Laplace scores s_i = (1/N) Σ_n w_n g_i(x_n)², streamed without storing J.

    Alg. 1 and App. C.3 of [1]_, with weights w = 1 (regression), w = p_n(1 − p_n) with
    p_n = σ(f(x_n)) (binary), and for C classes the squared column
    norms of the weighted Jacobian, (1/N) Σ_n ‖W_nᵀ J_n[:, i]‖² with
    W_n W_nᵀ = diag(π_n) − π_n π_nᵀ + εI (the rows of ``GGN.multiclass``'s J_w).
    So ``gradient_scores`` equals ``GGN.scores()`` of the matching GGN.

    Parameters
    ----------
    model : torch.nn.Module
    X : (N, ...) tensor or array
        The reference set R (training inputs for the paper's scores).
    likelihood : {"regression", "binary", "multiclass"}
    chunk_size : int, optional
    eps : float
        Multiclass Hessian jitter ε ≥ 0 (default 1e-6, as ``GGN.multiclass``).
    method : {"auto", "vmap", "linear"}
        "linear" streams (δ̃∘δ̃)ᵀ(a∘a) per Linear layer — no Jacobian at all (BackPACK's sum
        of squared gradients; docs/mathematics.md, "Scores and subset columns without
        per-sample Jacobians"); see :func:`jacobian_chunks`.

    Returns
    -------
    torch.Tensor
        (p,) scores on the model's device.

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
       Results and Methods", arXiv:2605.09075 (2026), §3, Alg. 1, and App. C.3.
    """
    one_of(likelihood, "likelihood", _LIKELIHOODS)
    eps = nonnegative_float(eps, "eps")
    chunks = _chunks(model, X, chunk_size=chunk_size, method=method)
    return _scores_of(chunks, likelihood, eps)


def _scores_of(chunks: Iterable[Any], likelihood: str, eps: float) -> Any:
    """:func:`gradient_scores` over the chunks of :func:`_chunks` (validated arguments)."""
    total, n = None, 0
    for _, f, sig, J in chunks:
        _check_outputs(f, likelihood)
        W = _weights(f, likelihood, float(eps))  # (b, C, K)
        if sig is not None:
            part = sig.weighted_square_sums(W)
        else:
            part = (W.transpose(1, 2) @ J).pow(2).sum((0, 1))
        total = part if total is None else total + part
        n += f.shape[0]
    return total / n


def to_cupy(tensor: Any) -> Any:
    """Hand a torch CUDA tensor to CuPy without a copy (DLPack shares the device buffer)."""
    torch = _torch()
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"tensor must be a torch.Tensor; got {type(tensor).__name__}")
    if tensor.device.type != "cuda":
        raise ValueError(f"tensor must live on a CUDA device for CuPy; got {tensor.device}")
    import cupy

    return cupy.from_dlpack(tensor.detach())
