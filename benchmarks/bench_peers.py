"""The GGN of a network against the field's curvature libraries, side by side in one process.

Rows (each in float64 and float32, regression with σ0² = 0.25):

- the full GGN Jᵀ J / σ0² of a tanh MLP 10→50→50→1 (p = 3,151) on N = 1,000 rows: ours
  (:class:`~laplace_lab.numerics.network_ggn.NetworkGGN`, ``dense``) against curvlinops 3.0.1
  (``GGNLinearOperator @ I``) and posteriors 0.1.3 (``laplace.dense_ggn``);
- the diagonal of the GGN of the 3×200 MLP (p = 82,401) on N = 1,000 rows: ours
  (``NetworkGGN.diagonal``) against posteriors (``laplace.diag_ggn``); curvlinops 3.0.1 has
  Hutchinson estimates of a diagonal, not the exact one, so it has no row here;
- 10 GGN-vector products of the 3×200 MLP on N = 1,000 rows, after one warm-up product
  (ours keeps the layers' signals of its first pass; curvlinops' operator is built once):
  ours (``NetworkGGN.matvec``) against curvlinops (``GGNLinearOperator @ v``) and laplax
  0.0.2 (``create_ggn_mv`` on a JAX copy of the network, jit-compiled ahead of time: the
  compile time is in the note, not in the timed calls).

More rows, on the same networks and data, live in ``bench_peers_*`` modules and run with
these: :mod:`.bench_peers_kfac` (KFAC factors and an inverse product),
:mod:`.bench_peers_lla` (the full-LLA predictive variances), :mod:`.bench_peers_eig` (the
top-20 GGN eigenvalues, with laplax through :mod:`.bench_peers_laplax`). Their peak memory
per side is ``laplace-lab bench --only peers-memory`` (:mod:`.bench_peers_memory`).

Each peer is called through its documented API here, in the bench layer (the conformance
adapters are not imported: the layers of docs/architecture.md keep benchmarks apart from
conformance). Every peer's answer must agree with ours (relative 1e-8 in float64, 1e-3 in
float32), else the row is marked wrong. The ratio is the fastest peer's time over ours; the
note lists every peer's time. Times are CPU seconds of the process (every thread's), the
best of 3 calls after a warm-up call, with torch and the BLAS on one thread
(:func:`one_thread`; XLA's Eigen kernels too, while XLA's own few threads remain and are
counted): a ratio of CPU work, which other processes on a shared machine barely move (wall
times there varied 14× between runs of the same call). Peers
missing from the environment are left out of the row; a row without any peer is skipped.

References
----------
.. [1] F. Dangel, R. Eschenhagen, et al., curvlinops: linear operators for curvature matrices
   in PyTorch, https://github.com/f-dangel/curvlinops (3.0.1).
.. [2] S. Duffield et al., "Scalable Bayesian Learning with posteriors", arXiv:2406.00104
   (posteriors 0.1.3).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any

import numpy as np

from laplace_lab.benchmarks._harness import Row, timed

#: The clock of every peer row: the process's CPU time (module docstring).
CLOCK = time.process_time
#: XLA's Eigen kernels on one thread (read when JAX starts its backend; XLA keeps a few
#: threads of its own, which the CPU clock counts).
XLA_ONE_THREAD = "--xla_cpu_multi_thread_eigen=false"


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """torch and the BLAS on one thread inside the block, and XLA's Eigen kernels when JAX
    has not been imported here yet (its flags are read once per process; XLA's own few
    threads remain, counted by :data:`CLOCK`)."""
    import torch
    from threadpoolctl import threadpool_limits

    if "jax" not in sys.modules:
        flags = os.environ.get("XLA_FLAGS", "")
        if XLA_ONE_THREAD not in flags:
            os.environ["XLA_FLAGS"] = f"{flags} {XLA_ONE_THREAD}".strip()
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(limits=1, user_api="blas"):
            yield
    finally:
        torch.set_num_threads(previous)


NOISE_VAR = 0.25
N_ROWS = 1000
PRODUCTS = 10
#: Timed calls per side (after one warm-up call); the best is reported.
REPEAT = 3
_TOLERANCE = {"float64": 1e-8, "float32": 1e-3}
#: The networks of :func:`_problem` by kind, as the rows name them.
LABEL = {"small": "MLP 10-50-50-1", "large": "3x200 MLP", "tiny": "MLP 3-6-6-1"}


def _have(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _problem(kind: str, dtype: Any) -> tuple[Any, Any, Any]:
    """(model in eval mode, X, y) in ``dtype``, from fixed seeds."""
    import torch

    from laplace_lab.networks.models import mlp, mlp_3x200

    torch.manual_seed(0)
    if kind == "small":
        model, d_in = mlp(10, [50, 50], activation="tanh"), 10
    elif kind == "tiny":  # for the tests
        model, d_in = mlp(3, [6, 6], activation="tanh"), 3
    else:
        model, d_in = mlp_3x200(8), 8
    model = model.to(dtype).eval()
    rng = np.random.default_rng(0)
    X = torch.as_tensor(rng.standard_normal((N_ROWS, d_in)), dtype=dtype)
    y = torch.as_tensor(rng.standard_normal(N_ROWS), dtype=dtype)
    return model, X, y


def _ours(model: Any, X: Any) -> Any:
    from laplace_lab.numerics.network_ggn import NetworkGGN

    return NetworkGGN(model, X, noise_var=NOISE_VAR, prior_precision=1.0)


def _curvlinops_operator(model: Any, X: Any, y: Any) -> tuple[Any, float]:
    """(curvlinops' GGN operator of the summed MSE loss, the factor c that makes it Jᵀ J/σ0²)."""
    import curvlinops
    import torch

    params = [t for t in model.parameters() if t.requires_grad]
    op = curvlinops.GGNLinearOperator(
        model,
        torch.nn.MSELoss(reduction="sum"),
        params,
        [(X, y.reshape(-1, 1))],
        check_deterministic=False,
    )
    return op, 0.5 / NOISE_VAR  # MSE's GGN is 2 Jᵀ J


def _posteriors_state(structure: str, model: Any, X: Any, y: Any) -> Any:
    """posteriors' ``dense_ggn`` or ``diag_ggn`` state; its precision minus the unit prior is
    the GGN of the summed Gaussian log-likelihood with variance σ0²."""
    import posteriors
    import torch
    from torch.distributions import Normal

    names = [(n, t.shape) for n, t in model.named_parameters()]
    sizes = [int(t.numel()) for t in model.parameters()]
    theta = torch.cat([t.detach().reshape(-1) for t in model.parameters()])

    def forward(flat: Any, batch: Any) -> tuple[Any, Any]:
        pieces = {n: p.view(s) for (n, s), p in zip(names, flat.split(sizes), strict=True)}
        return torch.func.functional_call(model, pieces, (batch[0],)), torch.tensor([])

    def log_likelihood(z: Any, batch: Any) -> Any:
        return Normal(z[:, 0], NOISE_VAR**0.5).log_prob(batch[1]).sum()

    method = getattr(posteriors.laplace, f"{structure}_ggn")
    init = {"init_prec": 1.0} if structure == "dense" else {"init_prec_diag": 1.0}
    previous = torch.get_default_dtype()
    torch.set_default_dtype(theta.dtype)
    try:
        transform = method.build(forward, log_likelihood, **init)
        state, _ = transform.update(transform.init(theta), (X, y))
    finally:
        torch.set_default_dtype(previous)
    return state


def _numpy(a: Any) -> np.ndarray:
    return a.detach().double().numpy() if hasattr(a, "detach") else np.asarray(a, np.float64)


def gemm_rate(dtype_name: str, n: int = 1000) -> float:
    """Flop/s of an n × n matrix product in NumPy (best of 3; the BLAS threads as set by the
    caller): about the peak a flop-bound kernel reaches on those threads."""
    A = np.random.default_rng(0).standard_normal((n, n)).astype(dtype_name)
    _, seconds = timed(lambda: A @ A, repeat=3, clock=CLOCK)
    return 2.0 * n**3 / seconds


def _row(
    name: str,
    ours: Callable[[], Any],
    peers: dict[str, Callable[[], Any]],
    dtype_name: str,
    note: str,
    *,
    checks: Sequence[str] = (),
    tolerance: float | None = None,
    entrywise: bool = False,
    flops: float | None = None,
    repeat: int | None = None,
) -> Row:
    """Time ``ours`` and each peer (CPU seconds, best of ``repeat`` after a warm-up); compare
    their answers.

    ``checks`` are disagreements found before the clock (e.g. of conventions); any of them,
    or a peer whose answer differs from ours by more than ``tolerance`` (relative to ours'
    largest entry, or to each of ours' entries when ``entrywise``; default by dtype, module
    docstring), marks the row wrong. ``flops``: the operation's flop count; when a peer is
    faster than ours, the note gives the time it takes at this machine's one-thread GEMM
    rate (:func:`gemm_rate`), the floor both sides' times are measured against. ``repeat``:
    timed calls per side (default :data:`REPEAT`; 1 for calls of tens of seconds).
    """
    repeat = REPEAT if repeat is None else repeat
    if tolerance is None:
        tolerance = _TOLERANCE[dtype_name]
    ours()  # warm-up, as for every peer below
    answer, t_ours = timed(ours, repeat=repeat, clock=CLOCK)
    ref = _numpy(answer)
    times, wrong = {}, list(checks)
    for peer, fn in peers.items():
        fn()
        got, times[peer] = timed(fn, repeat=repeat, clock=CLOCK)
        got = _numpy(got)
        scale = np.abs(ref) if entrywise else np.max(np.abs(ref))
        err = float(np.max(np.abs(got - ref) / np.maximum(scale, 1e-300)))
        if not err <= tolerance:
            wrong.append(f"{peer} differs from ours by {err:.2g} (relative)")
    fastest = min(times, key=times.get)
    if flops is not None and times[fastest] < t_ours:
        rate = gemm_rate(dtype_name)
        note = (
            f"{note}; floor {flops:.2g} flop = {flops / rate:.3g} s at {rate / 1e9:.3g} "
            "GFLOP/s (this machine's GEMM rate)"
        )
    listed = ", ".join(f"{p} {t:.3g} s" for p, t in sorted(times.items(), key=lambda x: x[1]))
    return Row(
        f"{name} [{dtype_name}]",
        t_ours,
        fastest,
        times[fastest],
        min_ratio=1.0,
        correct=not wrong,
        note="; ".join([f"peers: {listed}", note, *wrong]),
    )


def _product_peers(
    model: Any, X: Any, y: Any, dtype: Any
) -> dict[str, tuple[Callable[[np.ndarray], Any], str]]:
    """Each peer's V ↦ [Ω_lik v_1, …] (one vector at a time), with a note: curvlinops'
    operator built once; laplax's product jit-compiled ahead of time, its compile time noted
    apart from the timed calls (:mod:`.bench_peers_laplax`)."""
    import torch

    peers: dict[str, tuple[Callable[[np.ndarray], Any], str]] = {}
    if _have("curvlinops"):
        op, c = _curvlinops_operator(model, X, y)

        def curvlinops_products(V: np.ndarray) -> Any:
            Vt = torch.as_tensor(V, dtype=dtype)
            return torch.stack([c * (op @ Vt[:, j]) for j in range(V.shape[1])], dim=1)

        peers["curvlinops 3.0.1"] = (curvlinops_products, "")
    if _have("laplax"):
        from laplace_lab.benchmarks.bench_peers_laplax import compiled_ggn_mv

        product, seconds = compiled_ggn_mv(model, X, y, NOISE_VAR)

        def laplax_products(V: np.ndarray) -> np.ndarray:
            return np.column_stack([product(V[:, j]) for j in range(V.shape[1])])

        peers["laplax 0.0.2"] = (laplax_products, f"laplax's jit compile {seconds:.3g} s apart")
    return peers


def ggn_rows() -> list[Row]:
    """The full GGN, GGN diagonal and GGN-vector product rows of the module docstring."""
    import torch

    cl, post = _have("curvlinops"), _have("posteriors")
    if not (cl or post or _have("laplax")):
        return []
    rows = []
    for dtype in (torch.float64, torch.float32):
        dname = str(dtype).removeprefix("torch.")
        model, X, y = _problem("small", dtype)
        p = sum(int(t.numel()) for t in model.parameters())
        eye = np.eye(p)
        peers: dict[str, Callable[[], Any]] = {}
        if cl:
            op, c = _curvlinops_operator(model, X, y)
            identity = torch.eye(p, dtype=dtype)
            peers["curvlinops 3.0.1"] = lambda op=op, c=c, identity=identity: c * (op @ identity)
        if post:
            peers["posteriors 0.1.3"] = lambda m=model, X=X, y=y, p=p: (
                _posteriors_state("dense", m, X, y).prec - torch.eye(p, dtype=X.dtype)
            )
        if peers:
            rows.append(
                _row(
                    f"full GGN, MLP 10-50-50-1 (p = {p:,}), N = {N_ROWS:,}",
                    lambda m=model, X=X, eye=eye: _ours(m, X).dense() - eye,
                    peers,
                    dname,
                    "ours builds NetworkGGN and its dense Ω each call",
                )
            )
        model, X, y = _problem("large", dtype)
        p = sum(int(t.numel()) for t in model.parameters())
        if post:
            rows.append(
                _row(
                    f"diagonal GGN, 3x200 MLP (p = {p:,}), N = {N_ROWS:,}",
                    lambda m=model, X=X: _ours(m, X).diagonal() - 1.0,
                    {
                        "posteriors 0.1.3": lambda m=model, X=X, y=y: (
                            _posteriors_state("diag", m, X, y).prec_diag - 1.0
                        )
                    },
                    dname,
                    "curvlinops 3.0.1 offers no exact GGN diagonal",
                )
            )
        products = _product_peers(model, X, y, dtype)
        if products:
            ggn = _ours(model, X)
            V = np.random.default_rng(1).standard_normal((p, PRODUCTS))
            rows.append(
                _row(
                    f"{PRODUCTS} GGN-vector products, 3x200 MLP (p = {p:,}), N = {N_ROWS:,}",
                    lambda ggn=ggn, V=V: np.column_stack(
                        [ggn.matvec(V[:, j], include_prior=False) for j in range(PRODUCTS)]
                    ),
                    {name: partial(fn, V) for name, (fn, _) in products.items()},
                    dname,
                    "; ".join(
                        [
                            "one vector at a time; ours after the first pass that keeps the "
                            "signals",
                            *(
                                [
                                    "ours computes and accumulates in float64 (the float32 "
                                    "signals promoted), at float64's GEMM rate"
                                ]
                                if dtype == torch.float32
                                else []
                            ),
                            *(extra for _, extra in products.values() if extra),
                        ]
                    ),
                    flops=8.0 * N_ROWS * p * PRODUCTS,  # J v and Jᵀ u: 4 N p each
                )
            )
    return rows
