"""The flat parameter layout of a torch model: name, slice, shape and layer of each tensor.

θ is flattened in ``model.named_parameters()`` order, first layer first (the project-wide
convention: docs/mathematics.md, "Notation and conventions"). NeuralLinear and Last-k
(Raha, Khare & Patra, arXiv:2605.09075, App. B) and KFAC need to know which flat indices
belong to which layer. Re-exported by :mod:`laplace_lab.numerics.jacobians`; torch is imported
lazily.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ParameterBlock", "ParameterLayout", "parameter_layout", "trainable_vector"]


def _torch() -> Any:
    try:
        import torch
    except ImportError as err:  # pragma: no cover - torch is a test dependency
        raise ImportError(
            "laplace_lab.numerics.jacobians needs torch (pip install laplace-lab[torch])"
        ) from err
    return torch


@dataclass(frozen=True)
class ParameterBlock:
    """One parameter tensor in the flat vector θ: ``theta[slice]`` reshaped to ``shape``."""

    name: str
    slice: slice
    shape: tuple[int, ...]
    layer: int
    module: str

    @property
    def size(self) -> int:
        """Number of scalar parameters in the block."""
        return self.slice.stop - self.slice.start


@dataclass(frozen=True)
class ParameterLayout:
    """The flat parameter layout of a model (``parameters()`` order, first layer first).

    A *layer* is a module owning parameters directly (Linear, Conv2d, BatchNorm2d, ...);
    layers are numbered in order of first appearance in ``named_parameters()``.
    """

    blocks: tuple[ParameterBlock, ...]

    @property
    def p(self) -> int:
        """Total number of trainable parameters."""
        return self.blocks[-1].slice.stop if self.blocks else 0

    @property
    def n_layers(self) -> int:
        """Number of parameterised layers."""
        return self.blocks[-1].layer + 1 if self.blocks else 0

    def layer_sizes(self) -> list[int]:
        """Parameter count per layer, first layer first (the ``layout`` of ``neural_linear``)."""
        sizes = [0] * self.n_layers
        for b in self.blocks:
            sizes[b.layer] += b.size
        return sizes

    def layer_indices(self, layer: int) -> np.ndarray:
        """Flat indices of every parameter of ``layer`` (negative counts from the end)."""
        n = self.n_layers
        if (
            isinstance(layer, bool)
            or not isinstance(layer, int | np.integer)
            or not -n <= layer < n
        ):
            raise ValueError(f"layer must be an integer in [-{n}, {n}); got layer={layer!r}")
        layer = int(layer) % n
        parts = [np.arange(b.slice.start, b.slice.stop) for b in self.blocks if b.layer == layer]
        return np.concatenate(parts).astype(np.int64)

    def block(self, name: str) -> ParameterBlock:
        """The block of the parameter called ``name``."""
        for b in self.blocks:
            if b.name == name:
                return b
        raise ValueError(f"name must be a parameter of the model; got {name!r}")


def _check_model(model: Any) -> Any:
    torch = _torch()
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module; got {type(model).__name__}")
    return model


def _trainable(model: Any) -> dict[str, Any]:
    params = {n: t for n, t in model.named_parameters() if t.requires_grad}
    if not params:
        raise ValueError("model must have at least one trainable parameter")
    return params


def trainable_vector(model: Any) -> np.ndarray:
    """θ̂: the trainable parameters flattened in the layout's order, as float64 (host)."""
    flat = _torch().nn.utils.parameters_to_vector(list(_trainable(model).values()))
    return flat.detach().double().cpu().numpy()


def parameter_layout(model: Any) -> ParameterLayout:
    """Name, flat slice, shape and layer index of every trainable parameter of ``model``.

    Parameters
    ----------
    model : torch.nn.Module

    Returns
    -------
    ParameterLayout
        ``layout.layer_sizes()`` is the per-layer count list that NeuralLinear takes
        (App. B of Raha, Khare & Patra, arXiv:2605.09075); Last-k uses ``layout.p``.
    """
    _check_model(model)
    blocks, start, layers = [], 0, {}
    for name, t in _trainable(model).items():
        module = name.rpartition(".")[0]
        layer = layers.setdefault(module, len(layers))
        n = int(t.numel())
        blocks.append(ParameterBlock(name, slice(start, start + n), tuple(t.shape), layer, module))
        start += n
    return ParameterLayout(tuple(blocks))
