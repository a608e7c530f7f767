"""CPU cost of the Wheel bandit's Table 1 projected from measured phases.

A run at the paper's T = 16,000 has 800 phases, each one training phase (100 Adam updates,
constant cost) and one posterior refit on the replay buffer (cost growing with its t rows).
For every agent of Table 1 this measures both, in CPU seconds per seed with ``seeds`` seeds in
lockstep, at a buffer of t = 4,000 and t = 15,980 rows (random contexts and arms), and sums
train + refit over the run's phases with the refit linear in t between the two measurements.
The result is a projection from measured phases, not a measured run.

It prints a lower bound that no implementation of App. D.2 on this CPU can beat: the
three 512 × 100 × 100 float32 products of every Adam update (forward, weight gradient, input
gradient of the hidden layer) and the float64 Gram J_SᵀJ_S (Greedy-Laplace: its 2k
candidates' Gram) of every refit, at the rates this CPU runs exactly those shapes on one
thread (torch ``addmm``/``mm``, BLAS ``dsyrk``), nothing else counted, and the ratio of the
projection to it. Last, the cost of every torch kernel an update runs (:func:`update_kernels`:
all of ``nn.Linear``'s products, ReLU, the bias sums, the loss, the clip and Adam, each timed
alone), which with the Grams estimates the least that an implementation made of torch's
kernels spends, refits' passes over the buffer and per-call overhead not counted (an
estimate: products batched over networks can run a little faster than alone).

Run: ``python -m
laplace_lab.paper_checks.subnetwork_laplace_optimality.benchmarks.bandit_table_projection
[seeds]``.

Reference: S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations:
New Results and Methods", arXiv:2605.09075 (2026), §5.2, App. D.2, Table 1.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

BUFFERS = (4000, 15980)


def phase_costs(method: str, k: int, t: int, seeds: int) -> tuple[float, float]:
    """(training, refit + actions) CPU seconds per seed of one phase at a buffer of t rows."""
    from threadpoolctl import threadpool_limits

    from laplace_lab.networks.training import torch_threads
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_bandit import (
        BanditConfig,
    )
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_lockstep import (
        Lockstep,
    )

    run = Lockstep(
        BanditConfig(method=method, k=k, horizon=16000),
        [np.random.default_rng(s) for s in range(seeds)],
    )
    rng = np.random.default_rng(0)
    for b in range(seeds):  # fill the replay buffer
        run.t = 0
        run._record(b, run.env.contexts(t, rng=rng), rng.integers(0, 5, t))
    run.t, run.phase = t, 1
    with torch_threads(1), threadpool_limits(limits=1):
        start = time.process_time()
        run._train()
        train = time.process_time() - start
        start = time.process_time()
        run._act()
        act = time.process_time() - start
    return train / seeds, act / seeds


#: The buffer size t at each phase's refit of a T = 16,000 run (15 warm pulls, 20 per phase).
PHASES = np.arange(15, 16000, 20)

#: Adam updates per phase (App. D.2).
UPDATES = 100


def _best(fn, repeats: int) -> float:
    """Best of 5 mean CPU seconds of ``fn`` over ``repeats`` calls."""
    fn()
    times = []
    for _ in range(5):
        start = time.process_time()
        for _ in range(repeats):
            fn()
        times.append((time.process_time() - start) / repeats)
    return min(times)


def update_floor() -> float:
    """CPU seconds of one Adam update's three hidden-layer float32 products (one seed)."""
    import torch

    from laplace_lab.networks.training import torch_threads

    g = torch.Generator().manual_seed(0)
    a, d = torch.randn(512, 100, generator=g), torch.randn(512, 100, generator=g)
    W, b = torch.randn(100, 100, generator=g), torch.randn(100, generator=g)
    with torch_threads(1):
        return (
            _best(lambda: torch.addmm(b, a, W.t()), 200)
            + _best(lambda: d.t().mm(a), 200)
            + _best(lambda: d.mm(W), 200)
        )


def update_kernels(
    model: Any, X: Any, y: Any, *, lr: float, max_norm: float, out: dict | None = None
) -> Iterator:
    """The torch kernels of one Adam update of ``model`` on the batch (X, y), in order.

    Yields ``(kind, thunk)``, kind "product" or "element-wise"; the caller runs each thunk
    (any number of times) before asking for the next. Run once each, they are one update of
    App. D.2 with torch's own kernels: ``nn.Linear``'s products (``addmm`` forward; ``gᵀa``
    and ``g W`` backward, none for the input), ReLU and its backward, the bias sums, the mean
    squared error's gradient, ``clip_grad_norm_``'s norms and scaling, and single-tensor
    ``torch.optim.Adam`` (default betas and ε) on the flat parameter vector. The model's
    parameters are not changed; once all have run, ``out`` (a dict, if given) holds the
    clipped gradients (``"grads"``, ``parameters()`` order) and θ after the step (``"theta"``).
    """
    import torch

    lins = [m for m in model if isinstance(m, torch.nn.Linear)]
    Ws = [m.weight.detach() for m in lins]
    cs = [m.bias.detach() for m in lins]
    n, last = X.shape[0], len(lins) - 1
    relu_backward = torch.ops.aten.threshold_backward.default
    box: dict[str, Any] = {} if out is None else out

    def put(key: str, fn: Any) -> Any:
        return lambda: box.__setitem__(key, fn())

    acts = [X]
    for i, (W, c) in enumerate(zip(Ws, cs, strict=True)):
        yield "product", put("z", lambda a=acts[-1], W=W, c=c: torch.addmm(c, a, W.t()))
        if i < last:
            yield "element-wise", put("a", lambda z=box["z"]: z.relu_())
            acts.append(box["a"])
    f = box["z"]
    yield "element-wise", put("g", lambda: torch.sub(f, y[:, None]).mul_(2.0 / n))
    grads: list[Any] = []
    for i in range(last, -1, -1):
        g = box["g"]
        yield "product", put("gW", lambda g=g, a=acts[i]: g.t().mm(a))
        yield "element-wise", put("gb", lambda g=g: g.sum(0))
        grads = [box["gW"], box["gb"], *grads]
        if i > 0:
            yield "product", put("gin", lambda g=g, W=Ws[i]: g.mm(W))
            yield "element-wise", put("g", lambda a=acts[i]: relu_backward(box["gin"], a, 0))
    norms = []
    for t in grads:
        yield "element-wise", put("norm", lambda t=t: torch.linalg.vector_norm(t, 2))
        norms.append(box["norm"])
    yield "element-wise", put("total", lambda: torch.linalg.vector_norm(torch.stack(norms), 2))
    coef = torch.clamp(max_norm / (box["total"] + 1e-6), max=1.0)
    for t in grads:
        yield "element-wise", put("_", lambda t=t: t.mul_(coef))
    box["grads"] = grads
    grad = torch.cat([t.reshape(-1) for t in grads])
    theta = torch.cat([t.detach().reshape(-1) for t in model.parameters()])
    m, v, denom = torch.zeros_like(theta), torch.zeros_like(theta), torch.empty_like(theta)
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    c2 = (1 - beta2) ** 0.5  # the bias corrections of step 1
    yield "element-wise", put("_", lambda: m.lerp_(grad, 1 - beta1))
    yield "element-wise", put("_", lambda: v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2))
    yield "element-wise", put("_", lambda: torch.sqrt(v, out=denom).div_(c2).add_(eps))
    yield "element-wise", put("_", lambda: theta.addcdiv_(m, denom, value=-lr / (1 - beta1)))
    box["theta"] = theta


def update_kernel_costs(repeats: int = 200) -> tuple[float, float]:
    """(products, element-wise) CPU seconds of one update of one Wheel-bandit network: every
    kernel of :func:`update_kernels` timed alone at its shape (one thread), summed."""
    import torch

    from laplace_lab.networks.models import bandit_net
    from laplace_lab.networks.training import build_seeded, torch_threads
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.wheel_config import (
        BanditConfig,
    )

    cfg = BanditConfig()
    model = build_seeded(bandit_net, rng=np.random.default_rng(0))
    g = torch.Generator().manual_seed(0)
    X = torch.randn(cfg.batch_size, 7, generator=g)
    y = torch.randn(cfg.batch_size, generator=g)
    cost = {"product": 0.0, "element-wise": 0.0}
    with torch_threads(1):
        for kind, thunk in update_kernels(model, X, y, lr=cfg.lr, max_norm=cfg.grad_clip):
            cost[kind] += _best(thunk, repeats)
    return cost["product"], cost["element-wise"]


def gram_floor(columns: int, rows: int = 8000) -> float:
    """CPU seconds per replay row of the float64 Gram of ``columns`` columns (BLAS dsyrk)."""
    import scipy.linalg.blas
    from threadpoolctl import threadpool_limits

    block = np.random.default_rng(0).standard_normal((rows, columns))
    G = np.zeros((columns, columns), order="F")
    with threadpool_limits(limits=1):
        sec = _best(lambda: scipy.linalg.blas.dsyrk(1.0, block.T, beta=1.0, c=G), 2)
    return sec / rows


def gram_columns(method: str, k: int) -> int:
    """Columns of the Gram an agent forms at each refit (0 for MAP; NeuralLinear: the last
    layer's weights and bias)."""
    from laplace_lab.networks.models import bandit_net

    last_layer = sum(t.numel() for t in list(bandit_net().parameters())[-2:])
    return {"map": 0, "neural_linear": last_layer, "greedy_laplace": 2 * k}.get(method, k)


def table_floor(agent_list: tuple[str, ...], seeds: int = 25) -> tuple[float, float]:
    """(training, Gram) CPU-hours below which Table 1 cannot run here (module docstring)."""
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.studies.wheel_bandit import (
        parse_agent,
    )

    train = PHASES.size * UPDATES * update_floor() * len(agent_list) * seeds / 3600
    rates: dict[int, float] = {}
    gram = 0.0
    for agent in agent_list:
        cols = gram_columns(*parse_agent(agent))
        if cols:
            rate = rates.setdefault(cols, gram_floor(cols))
            gram += rate * float(PHASES.sum()) * seeds / 3600
    return train, gram


def main(argv: list[str] | None = None) -> int:
    """Print per-agent phase costs, the projected CPU seconds per run and Table 1's total."""
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.studies.wheel_bandit import (
        agents,
        parse_agent,
    )

    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1 or (args and not args[0].isdigit()) or (args and int(args[0]) < 1):
        print(f"usage: bandit_table_projection [seeds ≥ 1]; got {' '.join(args)}", file=sys.stderr)
        return 2
    seeds = int(args[0]) if args else 2
    phases = PHASES
    total = 0.0
    for agent in agents((100, 500)):
        method, k = parse_agent(agent)
        (tr0, a0), (tr1, a1) = (phase_costs(method, k, t, seeds) for t in BUFFERS)
        slope = (a1 - a0) / (BUFFERS[1] - BUFFERS[0])
        per_run = phases.size * (tr0 + tr1) / 2 + float(np.sum(a0 + slope * (phases - BUFFERS[0])))
        total += per_run
        print(
            f"{agent:22s} train/phase {(tr0 + tr1) / 2:.3f} s, refit/phase {a0:.3f} s "
            f"(t={BUFFERS[0]}) {a1:.3f} s (t={BUFFERS[1]}) -> {per_run:.0f} CPU-s per run",
            flush=True,
        )
    projected = total * 25 / 3600
    print(f"Table 1 (25 seeds x {len(agents((100, 500)))} agents): {projected:.1f} CPU-h")
    train, gram = table_floor(agents((100, 500)))
    print(
        f"Lower bound on this CPU (one thread): {train:.2f} CPU-h of hidden-layer products "
        f"in training + {gram:.2f} CPU-h of float64 Grams = {train + gram:.2f} CPU-h"
    )
    print(f"ratio to the floor: {projected / (train + gram):.2f}")
    runs = PHASES.size * UPDATES * len(agents((100, 500))) * 25 / 3600
    products, elementwise = (runs * c for c in update_kernel_costs())
    least = products + elementwise + gram
    print(
        f"Every torch kernel of the updates, each timed alone: {products:.2f} CPU-h of products "
        f"(all of nn.Linear's) + {elementwise:.2f} element-wise (ReLU, bias sums, loss, clip, "
        f"Adam); with the Grams {least:.2f} CPU-h = {least / (train + gram):.2f} x the floor, "
        "before any refit pass or per-call overhead"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
