"""A target that is right in every capability but forms its curvature in float32.

Each capability runs laplace-lab's own adapter (:mod:`laplace_lab.conformance.adapters.numerics`)
on a float32 copy of the model and of the floating inputs, and casts the answer back to
float64: Jacobians, the GGN and its factors, the Kronecker factors and every solve are
computed in float32 whatever the model's dtype. On a float32 model this is the adapter
itself; on a float64 model it is the classic dtype bug of a Laplace library (a float32
Hessian in a float64 model), which the dtype rule of
:mod:`laplace_lab.conformance.tolerance` must refuse.

Posterior samples keep the model's own θ̂: they are θ̂ + (θ − θ̂₃₂), θ the adapter's draws
around the float32 copy's θ̂₃₂, so only the spread comes from the float32 curvature and the
parameters outside a subset stay at θ̂ exactly.

Importable as ``tests.conformance.float32_targets:predictive_variance``, so that the
reproducers the suite writes for it run as printed.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np

from laplace_lab.conformance.adapters import numerics as ours
from laplace_lab.conformance.contract import CAPABILITIES

__all__ = ["predictive_variance"]


def _single(value: Any) -> Any:
    """A floating tensor in float32; anything else (integer labels, arrays) as it is."""
    if hasattr(value, "is_floating_point") and value.is_floating_point():
        return value.float()
    return value


def _float64(value: Any) -> Any:
    """A float32 answer back in float64: arrays, tensors and floats; integers unchanged."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    if isinstance(value, tuple):
        return tuple(_float64(v) for v in value)
    if isinstance(value, float | np.floating):
        return float(value)
    arr = np.asarray(value)
    return arr.astype(np.float64) if np.issubdtype(arr.dtype, np.floating) else arr


def _in_float32(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn(model, X_train, y_train, [X_test,] **kw)`` run on float32 copies, in float64 out."""

    def run(model: Any, *tensors: Any, **kwargs: Any) -> Any:
        net = copy.deepcopy(model).float()
        return _float64(fn(net, *(_single(t) for t in tensors), **kwargs))

    run.__name__ = run.__qualname__ = fn.__name__
    run.__doc__ = f"{fn.__name__} of laplace-lab's adapter, computed in float32."
    return run


def _theta(model: Any) -> np.ndarray:
    import torch

    return torch.nn.utils.parameters_to_vector(model.parameters()).detach().double().numpy()


def posterior_samples(model: Any, X_train: Any, y_train: Any, **kwargs: Any) -> np.ndarray:
    """θ̂ + (θ − θ̂₃₂): the adapter's draws from the float32 curvature, centred on θ̂."""
    draws = _in_float32(ours.posterior_samples)(model, X_train, y_train, **kwargs)
    theta32 = _theta(copy.deepcopy(model).float())
    return _theta(model) + (draws - theta32)


predictive_variance = _in_float32(ours.predictive_variance)
predictive_variance.subset_masks = {
    name: _in_float32(select) for name, select in ours.predictive_variance.subset_masks.items()
}
for _capability in CAPABILITIES:
    if _capability not in ("subset_masks", "posterior_samples"):
        setattr(predictive_variance, _capability, _in_float32(getattr(ours, _capability)))
predictive_variance.posterior_samples = posterior_samples
