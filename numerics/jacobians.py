"""Per-sample Jacobians and the parameter layout of torch models.

Real network Jacobians come from torch.func: g(x) = ∇_θ f_θ(x) at θ̂ for every row of X, by
``vmap`` over ``jacrev`` of a single-input ``functional_call``, in chunks of rows under a
memory budget. Columns are flattened in ``model.named_parameters()`` order, first layer
first — the project-wide convention for θ (docs/mathematics.md, "Notation and
conventions").

- :func:`per_sample_jacobian` returns J (N, p) for one output or (N, C, p) for C outputs; with
  ``subset`` it returns only the columns S, slicing each chunk as it is computed, so the peak
  memory is O(N·k + chunk·C·p) — never the full N×p Jacobian (laplace-torch computes the
  full Jacobian and slices it afterwards, its issues #217 and #232).
- :func:`jacobian_chunks` yields J a chunk of rows at a time; the streamed reductions of
  :mod:`laplace_lab.numerics.streamed_ggn` (Gradient-Laplace scores, sub-network Grams)
  read the same chunks.
- :func:`parameter_layout` names the slice and layer of every parameter tensor (NeuralLinear,
  Last-k, KFAC need it).

torch is imported lazily so that :mod:`numerics` works without it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from laplace_lab._checks import positive_int
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

__all__ = [
    "JACOBIAN_BUDGET_BYTES",
    "ParameterBlock",
    "ParameterLayout",
    "jacobian_chunks",
    "layer_call_order",
    "parameter_layout",
    "per_sample_jacobian",
    "to_cupy",
]

#: Default memory budget of one chunk of per-sample Jacobians (bytes): 256 MiB.
JACOBIAN_BUDGET_BYTES = 1 << 28


# ------------------------------------------------------------------------------ Jacobians
def check_eval_mode(model: Any) -> None:
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
    check_eval_mode(model)  # before a forward pass could update batch-norm statistics
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


def row_chunks(
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
    check_eval_mode(model)
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
    for start, fb, sig, J in row_chunks(model, X, chunk_size=chunk_size, method=method):
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

    Examples
    --------
    For a linear layer f(x) = w₁x₁ + w₂x₂ + b the row of x is (x₁, x₂, 1), whatever the
    weights:

    >>> import numpy as np
    >>> import torch
    >>> from laplace_lab.numerics import per_sample_jacobian
    >>> model = torch.nn.Linear(2, 1).double()
    >>> J = per_sample_jacobian(model, np.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> tuple(J.shape)
    (2, 3)
    >>> np.round(J.numpy(), 4)
    array([[1., 2., 1.],
           [3., 4., 1.]])
    """
    torch = _torch()
    _check_model(model)
    p = parameter_layout(model).p
    idx = None if subset is None else check_subset(subset, p, "subset", nonempty=True)
    X = _as_input(model, X)
    cols = p if idx is None else idx.size
    given, buf = out, None
    tidx = None
    for start, fb, sig, J in row_chunks(model, X, chunk_size=chunk_size, method=method):
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


def to_cupy(tensor: Any) -> Any:
    """Hand a torch CUDA tensor to CuPy without a copy (DLPack shares the device buffer)."""
    torch = _torch()
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"tensor must be a torch.Tensor; got {type(tensor).__name__}")
    if tensor.device.type != "cuda":
        raise ValueError(f"tensor must live on a CUDA device for CuPy; got {tensor.device}")
    import cupy

    return cupy.from_dlpack(tensor.detach())
