"""The GGN factor of a torch model, computed on demand: no N × p Jacobian is ever formed.

:class:`NetworkGGN` offers what sub-network selection reads from a :class:`~.ggn.GGN` —
``p``, ``prior_precision``, ``scores()``, ``diagonal()`` and the weighted Jacobian columns
``weighted_columns(idx)`` — for a model and a reference set, streaming the scores through
:func:`~.streamed_ggn.gradient_scores` and computing only the columns a method asks for
(:func:`~.jacobians.per_sample_jacobian` with ``subset=``). Greedy-Laplace on a network thus
costs O(N·m) Jacobian entries for its m candidates instead of O(N·p). ``subset_gram(idx)``
streams J_w[:, idx]ᵀJ_w[:, idx] without the columns and keeps the last one (up to
:data:`GRAM_CACHE_BYTES`), so the Ω_SS of a sub-network chosen among Greedy-Laplace's
candidates is a sub-block of the candidates' Gram, not a second pass over the data. For a
network of ``nn.Linear`` layers the per-layer inputs and output sensitivities of the first
pass are kept too (up to :data:`SIGNAL_CACHE_BYTES`), so the scores and every later Gram
share one forward and backward pass over X.

Neither the model nor X may change while a ``NetworkGGN`` of them is in use: it is the GGN
at the θ̂ and on the inputs of its first evaluation (the kept signals hold views of X).

Arrays are NumPy float64 on the host.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from laplace_lab._checks import one_of, positive_float, subset
from laplace_lab.numerics._layout import trainable_vector
from laplace_lab.numerics.ggn import GGN, prior_vector
from laplace_lab.numerics.jacobians import (
    check_eval_mode,
    layer_call_order,
    parameter_layout,
    per_sample_jacobian,
    row_chunks,
)
from laplace_lab.numerics.streamed_ggn import gram_of, scores_of

__all__ = ["GRAM_CACHE_BYTES", "SIGNAL_CACHE_BYTES", "NetworkGGN"]

#: Largest Gram (bytes) :meth:`NetworkGGN.subset_gram` keeps for later sub-blocks: 64 MiB.
GRAM_CACHE_BYTES = 1 << 26

#: Largest size (bytes) of the Linear-layer signals of X that a :class:`NetworkGGN` keeps
#: for its later passes: 64 MiB.
SIGNAL_CACHE_BYTES = 1 << 26

_LIKELIHOODS = ("regression", "binary", "multiclass")

#: The multiclass Hessian jitter ε of :meth:`~.ggn.GGN.multiclass`'s default.
_EPS = 1e-6


class NetworkGGN:
    """Ω = J_wᵀJ_w + V of ``model`` on the inputs ``X``, evaluated lazily.

    Parameters
    ----------
    model : torch.nn.Module
        The network at its MAP, in evaluation mode.
    X : (N, ...) tensor or array
        The reference inputs (training inputs for the paper's Ω).
    likelihood : {"regression", "binary", "multiclass"}
        As in :class:`~.ggn.GGN`: J_w = J/σ0, √(p(1 − p))·J, or W_nᵀJ_n.
    noise_var : float
        σ0² (regression only).
    prior_precision : float or (p,) array
        V.
    chunk_size : int, optional
        Rows per Jacobian chunk (default: a memory budget).
    method : {"auto", "vmap", "linear"}
        How the Jacobian work is done (:func:`~.jacobians.jacobian_chunks`): "linear" skips
        the per-call check of "auto" for a network known to be made of ``nn.Linear`` layers.

    Notes
    -----
    ``diagonal()`` is N·s/σ0² + V for regression and N·s + V otherwise, with s the streamed
    Gradient-Laplace scores; both equal :meth:`GGN.diagonal` of the dense factor.
    """

    def __init__(
        self,
        model: Any,
        X: Any,
        *,
        likelihood: str = "regression",
        noise_var: float = 1.0,
        prior_precision: Any = 1.0,
        chunk_size: int | None = None,
        method: str = "auto",
    ) -> None:
        import torch

        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"model must be a torch.nn.Module; got {type(model).__name__}")
        check_eval_mode(model)  # before any forward pass could update batch-norm statistics
        self.model = model
        dtype = next(model.parameters()).dtype
        X = X if torch.is_tensor(X) else torch.as_tensor(np.asarray(X))
        self.X = X.to(dtype) if X.is_floating_point() else X  # integer inputs (token ids) stay
        if self.X.ndim < 1 or self.X.shape[0] == 0:
            raise ValueError(f"X must hold at least one row; got shape {tuple(self.X.shape)}")
        self.likelihood = one_of(likelihood, "likelihood", _LIKELIHOODS)
        self.noise_var = positive_float(noise_var, "noise_var")
        self.chunk_size = chunk_size
        self.method = one_of(method, "method", ("auto", "vmap", "linear"))
        self.layout = parameter_layout(model)
        self.prior_precision = np.asarray(
            prior_vector(prior_precision, self.layout.p, np.zeros(1)), dtype=np.float64
        )
        self._gram: tuple[dict[int, int], np.ndarray] | None = None
        self._layer_order: list[int] | None = None
        self._signals: list[Any] | None = None  # the chunks of the first pass, when kept
        self._stream_only = False  # a pass found torch.func chunks or too many signal bytes

    # ----------------------------------------------------------------------------- shapes
    @property
    def p(self) -> int:
        """Number of parameters."""
        return self.layout.p

    @property
    def n_data(self) -> int:
        """N, the number of reference inputs."""
        return int(self.X.shape[0])

    @property
    def n_rows(self) -> int:
        """N′, the rows of J_w: N, or N·C for C classes."""
        if self.likelihood != "multiclass":
            return self.n_data
        return self.n_data * int(self._logits.shape[1])

    @property
    def xp(self) -> Any:
        """The array namespace of every returned array (NumPy)."""
        import array_api_compat.numpy

        return array_api_compat.numpy

    def theta(self) -> np.ndarray:
        """θ̂: the trainable parameters flattened in ``parameters()`` order (length p)."""
        return trainable_vector(self.model)

    def layer_sizes(self) -> list[int]:
        """Parameter count per layer, first layer first (refused when the model calls its
        layers in another order than it registers them: :meth:`require_layer_order`)."""
        self.require_layer_order()
        return self.layout.layer_sizes()

    def require_layer_order(self) -> None:
        """Raise unless the forward pass calls every parameterised layer once, in registration
        order: the order of the flat parameters that NeuralLinear and Last-k read as first
        layer first."""
        if self._layer_order is None:
            self._layer_order = layer_call_order(self.model, self.X)
        order = self._layer_order
        if order != list(range(self.layout.n_layers)):
            names = {b.layer: b.module for b in self.layout.blocks}
            raise ValueError(
                "model must call each of its parameterised layers once, in the order it "
                "registers them (the flat parameters are read as first layer first); "
                "registered: "
                + ", ".join(repr(names[i]) for i in range(len(names)))
                + "; called: "
                + (", ".join(repr(names[i]) for i in order) or "none")
            )

    # ----------------------------------------------------------------------------- operators
    def _passes(self) -> Iterable[Any]:
        """The chunks of a pass over X (:func:`~.jacobians.row_chunks`): the kept ones, or a
        fresh pass that keeps its chunks when they are Linear-layer signals of at most
        :data:`SIGNAL_CACHE_BYTES` in all."""
        if self._signals is not None:
            return self._signals
        fresh = row_chunks(self.model, self.X, chunk_size=self.chunk_size, method=self.method)
        if self._stream_only:
            return fresh
        return self._keep(fresh)

    def _keep(self, fresh: Iterator[Any]) -> Iterator[Any]:
        kept, nbytes = [], 0
        for chunk in fresh:
            sig = chunk[2]  # None for a torch.func chunk: nothing worth keeping
            if not self._stream_only:
                nbytes += sig.nbytes if sig is not None else 0
                if sig is None or nbytes > SIGNAL_CACHE_BYTES:
                    self._stream_only, kept = True, []
                else:
                    kept.append(chunk)
            yield chunk
        if not self._stream_only:
            self._signals = kept

    @functools.cached_property
    def _scores(self) -> np.ndarray:
        s = scores_of(self._passes(), self.likelihood, _EPS)
        return s.detach().double().cpu().numpy()

    @functools.cached_property
    def _logits(self) -> np.ndarray:
        import torch

        with torch.no_grad():
            f = self.model(self.X)
        f = f.double().cpu().numpy()
        return f.reshape(-1) if self.likelihood != "multiclass" else f

    def scores(self) -> np.ndarray:
        """Gradient-Laplace scores s_i = (1/N) Σ_n w_n g_i(x_n)² (streamed, cached)."""
        return self._scores.copy()

    def diagonal(self) -> np.ndarray:
        """diag(Ω) from the scores (class notes)."""
        scale = self.n_data / (self.noise_var if self.likelihood == "regression" else 1.0)
        return scale * self._scores + self.prior_precision

    def columns_ggn(self, idx: Any) -> GGN:
        """The GGN of the columns ``idx`` only: J_w[:, idx] and V[idx] (a k-parameter GGN)."""
        idx = subset(idx, self.p, "idx", nonempty=True)
        J = per_sample_jacobian(
            self.model, self.X, subset=idx, chunk_size=self.chunk_size, method=self.method
        )
        J = J.detach().double().cpu().numpy()
        V = self.prior_precision[idx]
        if self.likelihood == "regression":
            J2 = J.reshape(J.shape[0], -1)
            return GGN.regression(J2, noise_var=self.noise_var, prior_precision=V)
        if self.likelihood == "binary":
            return GGN.binary(J.reshape(J.shape[0], -1), self._logits, prior_precision=V)
        return GGN.multiclass(J, self._logits, prior_precision=V)

    def weighted_columns(self, idx: Any) -> np.ndarray:
        """J_w[:, idx] (N′ × |idx|)."""
        return self.columns_ggn(idx).Jw

    def subset_gram(self, idx: Any) -> np.ndarray:
        """J_w[:, idx]ᵀ J_w[:, idx] (|idx| × |idx|, float64; a new array).

        Streamed as :func:`~.streamed_ggn.subset_gram` (the columns are never stored); when every
        index of ``idx`` was in the last Gram computed (kept up to :data:`GRAM_CACHE_BYTES`),
        the result is its sub-block and costs no pass over the data.
        """
        idx = subset(idx, self.p, "idx", nonempty=True)
        if self._gram is not None and all(int(i) in self._gram[0] for i in idx):
            pos = np.fromiter((self._gram[0][int(i)] for i in idx), np.int64, idx.size)
            return self._gram[1][np.ix_(pos, pos)]
        G = gram_of(self._passes(), idx, self.likelihood, _EPS)
        if self.likelihood == "regression":
            G /= self.noise_var
        if G.nbytes <= GRAM_CACHE_BYTES:
            self._gram = ({int(i): n for n, i in enumerate(idx)}, G.copy())
        return G
