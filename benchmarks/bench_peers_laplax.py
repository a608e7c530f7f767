"""laplax 0.0.2 (JAX) on a JAX copy of a torch MLP: GGN-vector products and Lanczos eigenvalues.

The copy: the torch ``nn.Sequential`` of Linear, ReLU and Tanh layers evaluated on one flat
parameter vector in torch's order (per Linear layer W row-major, then b), so that vectors
and eigenvalues compare with ours entry by entry. The GGN-vector product is
``laplax.curv.ggn.create_ggn_mv(model_fn, θ, data, loss_fn="mse")`` (the summed MSE's
GGN, 2 Jᵀ J, scaled here by c = 1/(2σ0²) to Jᵀ J/σ0²); its jit compilation is done ahead
of time (``jax.jit(mv).lower(v).compile()``) and timed apart from the products. The
eigenvalues come from ``laplax.curv.lanczos.lanczos_lowrank`` with a fixed number of
Lanczos steps (it has no convergence test), accumulated in float64.

JAX's float64 (``jax_enable_x64``) is switched on for the process when these are built:
the float64 rows need it, and the float32 rows pass float32 arrays explicitly.

References
----------
.. [1] T. Weber, B. Mucsányi, et al., laplax: Laplace approximations in JAX,
   https://github.com/laplax-org/laplax (0.0.2).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np


def _jax_mlp(model: Any) -> tuple[Callable[..., Any], Any]:
    """(model_fn(input, params) of one sample, the flat parameters θ as a JAX array)."""
    import jax
    import jax.numpy as jnp
    import torch

    steps: list[tuple[str, tuple[int, int]]] = []
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            steps.append(("linear", (layer.out_features, layer.in_features)))
        elif isinstance(layer, (torch.nn.ReLU, torch.nn.Tanh)):
            steps.append((type(layer).__name__.lower(), (0, 0)))
        else:
            raise TypeError(f"model must hold Linear, ReLU and Tanh layers; got {layer}")
    theta = torch.cat([t.detach().reshape(-1) for t in model.parameters()])
    dtype = jnp.float64 if theta.dtype == torch.float64 else jnp.float32
    activations = {"relu": jax.nn.relu, "tanh": jnp.tanh}

    def model_fn(input: Any, params: Any) -> Any:  # laplax calls it with these keywords
        h, i = input, 0
        for kind, (n_out, n_in) in steps:
            if kind != "linear":
                h = activations[kind](h)
                continue
            W = params[i : i + n_out * n_in].reshape(n_out, n_in)
            h = W @ h + params[i + n_out * n_in : i + n_out * (n_in + 1)]
            i += n_out * (n_in + 1)
        return h

    return model_fn, jnp.asarray(theta.numpy(), dtype=dtype)


def ggn_mv(model: Any, X: Any, y: Any, noise_var: float) -> tuple[Callable[[Any], Any], Any]:
    """(v ↦ Jᵀ J v/σ0² through laplax, not compiled yet; θ)."""
    import jax
    import jax.numpy as jnp
    from laplax.curv.ggn import create_ggn_mv

    jax.config.update("jax_enable_x64", True)
    model_fn, theta = _jax_mlp(model)
    data = {
        "input": jnp.asarray(X.numpy(), dtype=theta.dtype),
        "target": jnp.asarray(y.numpy(), dtype=theta.dtype).reshape(-1, 1),
    }
    mv = create_ggn_mv(model_fn, theta, data, loss_fn="mse")
    c = 0.5 / noise_var
    return (lambda v: c * mv(v)), theta


def compiled_ggn_mv(
    model: Any, X: Any, y: Any, noise_var: float
) -> tuple[Callable[[np.ndarray], np.ndarray], float]:
    """(v ↦ Jᵀ J v/σ0² as a NumPy array, the CPU seconds its jit compilation took)."""
    import jax

    mv, theta = ggn_mv(model, X, y, noise_var)
    start = time.process_time()
    compiled = jax.jit(mv).lower(theta).compile()
    seconds = time.process_time() - start

    def product(v: np.ndarray) -> np.ndarray:
        return np.asarray(compiled(jax.numpy.asarray(v, dtype=theta.dtype)))

    return product, seconds


def top_eigenvalues(model: Any, X: Any, y: Any, noise_var: float, k: int, steps: int) -> Any:
    """The k largest Ritz values of ``steps`` Lanczos steps on Jᵀ J/σ0² (laplax; its
    matrix-vector product is jit-compiled within the call)."""
    import jax
    import jax.numpy as jnp
    from laplax.curv.lanczos import lanczos_lowrank

    mv, theta = ggn_mv(model, X, y, noise_var)
    low_rank = lanczos_lowrank(
        mv,
        layout=int(theta.shape[0]),
        key=jax.random.key(0),
        rank=steps,
        mv_dtype=theta.dtype,
        calc_dtype=jnp.float64,
    )
    jax.config.update("jax_enable_x64", True)  # lanczos_lowrank restores the flag it found
    return np.sort(np.asarray(low_rank.S))[::-1][:k]
