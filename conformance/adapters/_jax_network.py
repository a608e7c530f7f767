"""A torch MLP or CNN as a JAX function of its flat parameters, and JAX set up to run it.

The conformance contract hands a ``torch.nn.Module``; a JAX library takes a function of a
parameter pytree. :class:`Network` converts ``torch.nn.Linear`` and ``torch.nn.Sequential``
of Linear, Tanh, ReLU, Sigmoid and Identity modules, and of Unflatten, Conv2d (groups 1,
integer padding, zero padding mode) and Flatten (the cases' models; anything else
raises) into f(x, θ) for one input x and the flat θ in ``parameters()`` order, the order of
the contract's priors, subsets and samples (JAX ravels a dict of parameters with its keys
sorted). :func:`check_outputs` compares the function with the model on the training inputs.

JAX is imported on first use, never by ``import laplace_lab``, and set up once
(:func:`jax_module`): the CPU platform (set before JAX's first computation; a process that
already ran JAX keeps its platform) and, unless one is set, JAX's compilation cache in a
temporary folder removed at exit, so that programs that differ only in their data (a new
problem of the same shapes) are compiled once. :func:`in_model_precision` runs a call with
``jax_enable_x64`` on for a float64 model and off for a float32 one (JAX computes in
float32 without it, whatever its inputs), scoped to the call (``jax.enable_x64``).
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from laplace_lab.conformance.adapters._parameters import parameter_offsets

__all__ = [
    "ACTIVATIONS",
    "COMPILER_OPTIONS",
    "Network",
    "as_jax",
    "check_outputs",
    "in_model_precision",
    "jax_module",
    "jit",
    "model_fn",
    "network_outputs",
]

#: The activation modules the conversion knows, by class name.
ACTIVATIONS = ("Tanh", "ReLU", "Sigmoid", "Identity")
#: The reshaping and convolution modules the conversion knows, by class name.
SHAPING = ("Unflatten", "Flatten", "Conv2d")
#: XLA's options for the adapters' programs: small programs whose compilation, not their
#: run, takes the time (floating-point semantics are unchanged).
COMPILER_OPTIONS = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}


@functools.cache
def jax_module() -> Any:
    """``jax``, set up as the module docstring says (imported on the first call only)."""
    import jax

    try:
        jax.config.update("jax_platforms", "cpu")
    except RuntimeError:  # JAX already computed in this process: its platform stays
        pass
    if jax.config.jax_compilation_cache_dir is None:
        cache = tempfile.mkdtemp(prefix="laplace-lab-jax-")
        atexit.register(shutil.rmtree, cache, ignore_errors=True)
        jax.config.update("jax_compilation_cache_dir", cache)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return jax


def in_model_precision(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn(model, ...)`` run with ``jax_enable_x64`` on exactly when the model is float64."""

    @functools.wraps(fn)
    def run(model: Any, *args: Any, **kwargs: Any) -> Any:
        import torch

        float64 = next(model.parameters()).dtype == torch.float64
        with jax_module().enable_x64(float64):
            return fn(model, *args, **kwargs)

    return run


@dataclass(frozen=True)
class Network:
    """A torch model as f(x, θ) for one input x (d,) and the flat θ in ``parameters()``
    order; hashable, so that it can key compiled programs.

    ``layers`` holds ``("linear", w0, out, inp, b0)`` (offsets into θ, b0 = −1 without a
    bias), ``("conv", w0, weight shape, b0, stride, padding)``, ``("reshape", shape)`` (of
    one input, without the batch axis) and activation names; ``two_logits`` returns [0, f]
    for a one-logit f.
    """

    layers: tuple[tuple[Any, ...], ...]
    two_logits: bool = False

    @classmethod
    def of(cls, model: Any) -> Network:
        """The network of a ``torch.nn.Linear`` or ``torch.nn.Sequential`` model."""
        offsets = parameter_offsets(model)
        layers = []
        for module in _modules(model):
            name = type(module).__name__
            if name == "Linear":
                out, inp = (int(n) for n in module.weight.shape)
                b0 = -1 if module.bias is None else offsets[id(module.bias)]
                layers.append(("linear", offsets[id(module.weight)], out, inp, b0))
            elif name in SHAPING:
                layers.append(_shaping(module, offsets))
            elif name != "Identity":
                layers.append((name,))
        return cls(tuple(layers))

    def __call__(self, x: Any, theta: Any) -> Any:
        jax = jax_module()
        jnp = jax.numpy
        activation = {"Tanh": jnp.tanh, "ReLU": jax.nn.relu, "Sigmoid": jax.nn.sigmoid}
        for layer in self.layers:
            if layer[0] == "reshape":
                x = x.reshape(layer[1])
                continue
            if layer[0] == "conv":
                _, w0, shape, b0, stride, padding = layer
                w = theta[w0 : w0 + int(np.prod(shape))].reshape(shape)
                x = jax.lax.conv_general_dilated(x[None], w, stride, [(p, p) for p in padding])[
                    0
                ]  # NCHW input, OIHW weight: torch's layout
                if b0 >= 0:
                    x = x + theta[b0 : b0 + shape[0]][:, None, None]
                continue
            if layer[0] != "linear":
                x = activation[layer[0]](x)
                continue
            _, w0, out, inp, b0 = layer
            x = theta[w0 : w0 + out * inp].reshape(out, inp) @ x
            if b0 >= 0:
                x = x + theta[b0 : b0 + out]
        return jnp.concatenate([jnp.zeros_like(x), x]) if self.two_logits else x


def _modules(model: Any) -> list[Any]:
    """The modules the forward pass applies, in order (a Linear or nested Sequentials)."""
    import torch

    if isinstance(model, torch.nn.Sequential):
        return [m for child in model for m in _modules(child)]
    if isinstance(model, torch.nn.Linear) or type(model).__name__ in ACTIVATIONS + SHAPING:
        return [model]
    raise ValueError(
        "the JAX conversion takes torch.nn.Linear and torch.nn.Sequential models of "
        f"Linear, {', '.join(ACTIVATIONS + SHAPING)} modules; got {type(model).__name__}"
    )


def _shaping(module: Any, offsets: dict[int, int]) -> tuple[Any, ...]:
    """The layer of an Unflatten (of dimension 1), Flatten (from dimension 1 to the last)
    or Conv2d module (groups 1, dilation 1, integer zero padding), for one input."""
    name = type(module).__name__
    if name == "Unflatten" and module.dim == 1:
        return ("reshape", tuple(int(n) for n in module.unflattened_size))
    if name == "Flatten" and module.start_dim == 1 and module.end_dim == -1:
        return ("reshape", (-1,))
    if (
        name == "Conv2d"
        and module.groups == 1
        and tuple(module.dilation) == (1, 1)
        and not isinstance(module.padding, str)
        and module.padding_mode == "zeros"
    ):
        b0 = -1 if module.bias is None else offsets[id(module.bias)]
        shape = tuple(int(n) for n in module.weight.shape)
        stride = tuple(int(n) for n in module.stride)
        padding = tuple(int(n) for n in module.padding)
        return ("conv", offsets[id(module.weight)], shape, b0, stride, padding)
    raise ValueError(f"the JAX conversion does not take this {name}: {module}")


def model_fn(network: Network, theta_hat: Any, index: Any) -> Callable[..., Any]:
    """``model_fn(input, params)``: the network at θ̂ with θ_S = ``params`` on S = ``index``."""

    def forward(input: Any, params: Any) -> Any:  # keywords as laplax calls them
        return network(input, theta_hat.at[index].set(params))

    return forward


def as_jax(t: Any) -> Any:
    """A torch tensor as a JAX array of the same dtype (int64 labels stay integers)."""
    return jax_module().numpy.asarray(t.detach().cpu().numpy())


def jit(program: Callable[..., Any]) -> Any:
    """``jax.jit(program)`` with :data:`COMPILER_OPTIONS`."""
    return jax_module().jit(program, compiler_options=COMPILER_OPTIONS)


def network_outputs(network: Network, theta_hat: Any, index: Any, X: Any) -> Any:
    """f(x_n, θ̂) for the rows of ``X`` (to trace inside a program and check after it)."""
    forward = model_fn(network, theta_hat, index)
    return jax_module().vmap(forward, in_axes=(0, None))(X, theta_hat[index])


def check_outputs(model: Any, X: Any, outputs: Any) -> None:
    """A ValueError unless ``outputs`` are the model's on ``X`` (to 1000 ulps)."""
    theirs = model(X).detach().cpu().numpy()
    ours = np.asarray(outputs)
    eps = float(np.finfo(theirs.dtype).eps)
    if ours.shape != theirs.shape or not np.allclose(ours, theirs, rtol=1e3 * eps, atol=1e3 * eps):
        raise ValueError("the model's forward pass is not the composition of its modules")
