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

:meth:`NetworkGGN.matvec` is Ω v (or Ω V for a block) streamed over the same chunks —
J_wᵀ(J_w v) accumulated chunk by chunk from the Linear-layer signals, or from Jacobian–vector
products for other networks — so ``as_linear_operator()`` hands Ω to SciPy's solvers and
:meth:`~.lowrank.LowRankLaplace.from_ggn` runs its Lanczos on a network without J_w;
:meth:`NetworkGGN.dense` is Ω itself for small p.

Neither the model nor X may change while a ``NetworkGGN`` of them is in use: it is the GGN
at the θ̂ and on the inputs of its first evaluation (the kept signals hold views of X).

Arrays are NumPy float64 on the host.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from laplace_lab._checks import (
    nonnegative_float,
    one_of,
    positive_float,
    positive_int,
    real_array,
    subset,
)
from laplace_lab.numerics._layout import _trainable, trainable_vector
from laplace_lab.numerics._linear_jacobians import linear_plan
from laplace_lab.numerics.ggn import DENSE_MAX_P, GGN, logistic_weight_root, prior_vector
from laplace_lab.numerics.jacobians import (
    JACOBIAN_BUDGET_BYTES,
    check_eval_mode,
    layer_call_order,
    parameter_layout,
    per_sample_jacobian,
    row_chunks,
)
from laplace_lab.numerics.streamed_ggn import gram_of, scores_of
from laplace_lab.numerics.surrogate_kernel import model_jvp

__all__ = ["GRAM_CACHE_BYTES", "SIGNAL_CACHE_BYTES", "NetworkGGN"]

#: Largest Gram (bytes) :meth:`NetworkGGN.subset_gram` keeps for later sub-blocks: 64 MiB.
GRAM_CACHE_BYTES = 1 << 26

#: Largest size (bytes) of the Linear-layer signals of X that a :class:`NetworkGGN` keeps
#: for its later passes: 64 MiB.
SIGNAL_CACHE_BYTES = 1 << 26

_LIKELIHOODS = ("regression", "binary", "multiclass")

#: Columns of a block pushed through one vmapped JVP / VJP on the torch.func path of
#: :meth:`NetworkGGN.matvec` (bounds its memory at this many tangent copies of a chunk).
_TANGENTS = 16


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
    jitter : float
        ε ≥ 0 added to every multiclass Hessian H_n (0: the exact GGN, as
        :meth:`~.ggn.GGN.multiclass`).

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
        jitter: float = 0.0,
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
        self.jitter = nonnegative_float(jitter, "jitter")
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
        s = scores_of(self._passes(), self.likelihood, self.jitter)
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
        return GGN.multiclass(J, self._logits, prior_precision=V, eps=self.jitter)

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
        G = gram_of(self._passes(), idx, self.likelihood, self.jitter)
        if self.likelihood == "regression":
            G /= self.noise_var
        if G.nbytes <= GRAM_CACHE_BYTES:
            self._gram = ({int(i): n for n, i in enumerate(idx)}, G.copy())
        return G

    # ----------------------------------------------------------------------- matrix-free Ω
    def matvec(self, v: Any, *, include_prior: bool = True) -> np.ndarray:
        """Ω v = J_wᵀ(J_w v) + V v for v of shape (p,) or a block (p, r), streamed over X.

        Ω is the GGN precision of eqs. (2) and (4) and App. C.5 of [1]_ (the generalised
        Gauss–Newton matrix of [2]_ plus the prior): J_wᵀJ_w = Σ_n J_nᵀ H_n J_n with
        H_n = 1/σ0² (regression), p_n(1 − p_n) (binary) or diag(π_n) − π_nπ_nᵀ + εI
        (multiclass; ε = ``jitter``, 0 by default: the exact GGN, as in :meth:`subset_gram`,
        :meth:`diagonal` and :meth:`dense`). J_w is never
        stored: each chunk of rows adds J_nᵀ H_n (J_n v) to a float64 accumulator.

        Parameters
        ----------
        v : array_like, shape (p,) or (p, r)
            Real and finite; the columns of a block are multiplied together.
        include_prior : bool
            Add V v (Ω v, the default); False gives the likelihood part J_wᵀJ_w v alone.

        Returns
        -------
        numpy.ndarray
            float64, v's shape.

        Notes
        -----
        Each call is one pass over the row chunks of X, whatever the number of columns r
        (so a block costs less than r calls). The cost, for N inputs and C outputs:

        - Networks of ``nn.Linear`` layers (method "auto" or "linear"): J_n v and J_nᵀu come
          from the layer inputs a_l and output sensitivities δ_l of a chunk
          (a_l ↦ (V_l a_l)·δ_l, then (δ_lᵀu)a_lᵀ), about 4·N·r·(p + C·Σ_l out_l) flops in
          float64. The first evaluation costs one forward and C backward passes per chunk
          and keeps the signals (up to :data:`SIGNAL_CACHE_BYTES`); later products make no
          pass over the model at all (beyond that size every product recomputes the
          signals). Memory: the signals of one chunk, O(chunk·Σ_l(in_l + (C + r)·out_l)),
          plus the (p, r) result — never a (chunk, C, p) Jacobian.
        - Other networks (torch.func): per chunk one forward pass kept for ``vjp`` and, per
          column, one forward-mode JVP (``torch.func.jvp``) and one backward pass (the
          pullback, vmapped over up to 16 columns): about 3r forward-pass equivalents per
          chunk instead of the C backward passes and the (chunk, C, p) Jacobian of a
          materialised chunk. Memory: the activations of a chunk times up to 16 tangents.
          The products run in the model's dtype and are accumulated in float64.
        - A Linear-layer network that "auto" finds not to apply each layer once per sample
          falls back to torch.func Jacobian chunks of ``chunk_size`` rows (C backward passes
          and a (chunk, C, p) chunk each).

        References
        ----------
        .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace
           Approximations: New Results and Methods", arXiv:2605.09075 (2026), §2.1 eqs. (2)
           and (4), App. C.3 and C.5.
        .. [2] J. Martens, "New insights and perspectives on the natural gradient method",
           JMLR 21(146), 2020.
        """
        x = self._vector(v)
        if not isinstance(include_prior, bool):
            raise TypeError(f"include_prior must be a bool; got include_prior={include_prior!r}")
        block = x.reshape(self.p, -1)
        out = self._likelihood_product(block)
        if include_prior:
            out += self.prior_precision[:, None] * block
        return out.reshape(x.shape)

    def as_linear_operator(self, *, include_prior: bool = True) -> Any:
        """Ω as a ``scipy.sparse.linalg.LinearOperator`` (p × p, float64, symmetric).

        Its ``matvec`` and ``matmat`` are :meth:`matvec` (one streamed pass over the data per
        call, whatever the number of columns); ``rmatvec`` and ``rmatmat`` are the same
        products, since Ω = Ωᵀ. So ``scipy.sparse.linalg.eigsh(ggn.as_linear_operator(),
        k=5)`` gives the top eigenpairs of Ω and ``cg`` solves Ω x = b without Ω.

        Parameters
        ----------
        include_prior : bool
            Ω (default) or its likelihood part J_wᵀJ_w alone.

        Returns
        -------
        scipy.sparse.linalg.LinearOperator
        """
        from scipy.sparse.linalg import LinearOperator

        if not isinstance(include_prior, bool):
            raise TypeError(f"include_prior must be a bool; got include_prior={include_prior!r}")

        def product(v: Any) -> np.ndarray:
            return self.matvec(v, include_prior=include_prior)

        return LinearOperator(
            (self.p, self.p),
            matvec=product,
            rmatvec=product,
            matmat=product,
            rmatmat=product,
            dtype=np.float64,
        )

    def dense(self) -> np.ndarray:
        """Ω as a p × p float64 array (small p only: p ≤ :data:`~.ggn.DENSE_MAX_P`).

        One streamed pass: the Gram of every column (:meth:`subset_gram` with all p indices,
        accumulated in float64 by symmetric rank-b updates) plus diag(V); exactly symmetric.
        """
        if self.p > DENSE_MAX_P:
            raise ValueError(
                f"dense() forms a p×p matrix; p={self.p} exceeds DENSE_MAX_P={DENSE_MAX_P}; "
                "use matvec or as_linear_operator"
            )
        G = self.subset_gram(np.arange(self.p))
        G[np.diag_indices_from(G)] += self.prior_precision
        return G

    def _vector(self, v: Any) -> np.ndarray:
        """``v`` as float64 of shape (p,) or (p, r ≥ 1), finite; ValueErrors naming v."""
        x = real_array(v, "v")
        if x.ndim not in (1, 2) or x.shape[0] != self.p or (x.ndim == 2 and x.shape[1] == 0):
            raise ValueError(
                f"v must have shape (p,) or (p, r) with p={self.p} and r ≥ 1; got shape {x.shape}"
            )
        x = x.astype(np.float64, copy=False)
        if not np.all(np.isfinite(x)):
            raise ValueError("v must be finite; it contains NaN or Inf")
        return x

    def _check_width(self, f: Any) -> None:
        if (f.shape[1] > 1) != (self.likelihood == "multiclass"):
            raise ValueError(
                f"likelihood={self.likelihood!r} does not match the model's output of shape "
                f"{tuple(f.shape)}"
            )

    def _hessian_times(self, f: Any, u: Any) -> Any:
        """H_n u_n for logits f (b, C) and u (b, C, r), in float64 (σ0² applied later)."""
        f = f.double()
        if self.likelihood == "regression":
            return u
        if self.likelihood == "binary":
            return u * logistic_weight_root(f)[:, :, None] ** 2
        pi = f.softmax(dim=1)[:, :, None]
        return pi * u - pi * (pi * u).sum(1, keepdim=True) + self.jitter * u

    def _likelihood_product(self, block: np.ndarray) -> np.ndarray:
        """J_wᵀJ_w @ block (p, r), float64 (:meth:`matvec`'s Notes)."""
        import torch

        if self.method == "vmap" or linear_plan(self.model, self.layout) is None:
            acc = self._functional_product(block)
        else:
            device = next(self.model.parameters()).device
            Vt = torch.as_tensor(block, device=device)
            acc = torch.zeros_like(Vt)
            for _, f, sig, J in self._passes():
                self._check_width(f)
                if sig is not None:
                    self._add_signal_product(sig, f, Vt, acc)
                    continue
                Jd = J.double()  # (b, C, p): a torch.func chunk ("auto" fell back)
                u = self._hessian_times(f, Jd @ Vt)
                acc += Jd.reshape(-1, self.p).T @ u.reshape(-1, Vt.shape[1])
        out = acc.cpu().numpy()
        if self.likelihood == "regression":
            out /= self.noise_var
        return out

    def _add_signal_product(self, sig: Any, f: Any, Vt: Any, acc: Any) -> None:
        """acc += Σ_n J_nᵀ H_n J_n Vt over one chunk, from its Linear-layer signals."""
        import torch

        plan, r = sig.plan, Vt.shape[1]
        layers = list(zip(plan.modules, plan.weight_start, plan.bias_start, strict=True))
        signals = [(a.double(), d.double()) for a, d in zip(sig.a, sig.delta, strict=True)]
        u = None  # J_n Vt, (b, C, r)
        for (m, ws, bs), (a, d) in zip(layers, signals, strict=True):
            n_o, n_i = m.weight.shape
            z = torch.einsum("bi,oir->bor", a, Vt[ws : ws + n_o * n_i].reshape(n_o, n_i, r))
            if bs is not None:
                z = z + Vt[bs : bs + n_o]
            part = torch.einsum("bco,bor->bcr", d, z)
            u = part if u is None else u + part
        u = self._hessian_times(f, u)
        for (m, ws, bs), (a, d) in zip(layers, signals, strict=True):
            n_o, n_i = m.weight.shape
            e = torch.einsum("bcr,bco->bor", u, d)  # δ_lᵀ u per sample
            acc[ws : ws + n_o * n_i] += torch.einsum("bor,bi->oir", e, a).reshape(-1, r)
            if bs is not None:
                acc[bs : bs + n_o] += e.sum(0)

    def _functional_product(self, block: np.ndarray) -> Any:
        """J_wᵀJ_w @ block by torch.func: per chunk one VJP graph, a JVP and a pullback per
        column (:func:`~.surrogate_kernel.model_jvp` for the JVPs)."""
        import torch
        from torch.func import functional_call, vjp, vmap

        params = {n: t.detach() for n, t in _trainable(self.model).items()}
        frozen = {n: t.detach() for n, t in self.model.named_parameters() if not t.requires_grad}
        buffers = dict(self.model.named_buffers())
        ref = next(iter(params.values()))
        X = self.X.to(ref.device)
        if X.is_floating_point() and not bool(torch.isfinite(X).all()):
            raise ValueError("X must be finite; it contains NaN or Inf")
        n, r = self.n_data, block.shape[1]
        width = 1 if self.likelihood != "multiclass" else int(self._logits.shape[1])
        if self.chunk_size is None:
            rows = max(1, JACOBIAN_BUDGET_BYTES // (width * self.p * ref.element_size()))
        else:
            rows = positive_int(self.chunk_size, "chunk_size")
        rows = min(rows, n)
        T = torch.as_tensor(block.T, dtype=ref.dtype, device=ref.device)  # (r, p)
        acc = torch.zeros((r, self.p), dtype=torch.float64, device=ref.device)
        for start in range(0, n, rows):
            xb = X[start : start + rows]
            b = int(xb.shape[0])

            def f(prm: dict[str, Any], xb: Any = xb, b: int = b) -> Any:
                out = functional_call(self.model, ({**prm, **frozen}, buffers), (xb,))
                return out.reshape(b, -1)

            fb, pullback = vjp(f, params)
            self._check_width(fb)
            Jv = torch.cat(
                [
                    model_jvp(self.model, xb, T[a : a + _TANGENTS]).reshape(-1, b, fb.shape[1])
                    for a in range(0, r, _TANGENTS)
                ]
            )  # (r, b, C)
            u = self._hessian_times(fb.detach(), Jv.double().permute(1, 2, 0))  # (b, C, r)
            (grads,) = vmap(pullback, chunk_size=_TANGENTS)(u.permute(2, 0, 1).to(ref.dtype))
            acc += torch.cat([grads[name].reshape(r, -1) for name in params], dim=1).double()
        return acc.T
