"""The flat parameter vector of a torch model, as the contract indexes it.

The contract's prior precisions, subsets and posterior samples are in the order of
``torch.nn.utils.parameters_to_vector(model.parameters())``. Libraries that ravel a
dictionary of parameters (optree, JAX) sort its keys (``"0.bias"`` before ``"0.weight"``),
so the adapters of such libraries hand them this flat vector, or a part of it, instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from laplace_lab._checks import prior_precision_vector, subset

__all__ = [
    "flat_parameters",
    "last_layer_indices",
    "parameter_offsets",
    "prior_vector",
    "subset_indices",
]


def flat_parameters(model: Any) -> Any:
    """θ̂ as one detached 1-D tensor in ``parameters()`` order (the model's dtype)."""
    import torch

    return torch.nn.utils.parameters_to_vector(model.parameters()).detach().clone()


def parameter_offsets(model: Any) -> dict[int, int]:
    """The start of every parameter tensor in the flat vector, keyed by ``id(tensor)``."""
    start, offsets = 0, {}
    for t in model.parameters():
        offsets[id(t)] = start
        start += int(t.numel())
    return offsets


def _size(model: Any) -> int:
    return sum(int(t.numel()) for t in model.parameters())


def prior_vector(model: Any, prior_precision: Any) -> np.ndarray:
    """V as a float64 vector of length p (a float means αI)."""
    return prior_precision_vector(prior_precision, _size(model))


def subset_indices(model: Any, S: Any) -> np.ndarray:
    """The subset as int64 indices (every parameter, in order, when ``S`` is None)."""
    p = _size(model)
    return np.arange(p, dtype=np.int64) if S is None else subset(S, p, "subset", nonempty=True)


def last_layer_indices(model: Any) -> np.ndarray:
    """The [W, b] indices of the last ``torch.nn.Linear`` module in the flat vector.

    The last Linear module in ``model.modules()`` order (for ``torch.nn.Sequential`` models,
    the last one the forward pass calls); its weight row-major, then its bias.
    """
    import torch

    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    if not linears or linears[-1].bias is None:
        raise ValueError("last-layer Laplace needs a last torch.nn.Linear layer with a bias")
    offsets = parameter_offsets(model)
    layer = linears[-1]
    return np.concatenate(
        [offsets[id(t)] + np.arange(int(t.numel())) for t in (layer.weight, layer.bias)]
    )
