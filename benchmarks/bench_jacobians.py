"""Per-sample Jacobians of a 3×200 MLP (p = 98,801).

Targets:
- ``per_sample_jacobian`` (torch.func vmap over jacrev, chunked) at least 5× the throughput of
  a Python loop of ``torch.autograd.grad`` per sample (on 90 inputs);
- subset-only Jacobians: the same time as the full Jacobian but an output of N·k, not N·p.
"""

from __future__ import annotations

import numpy as np
import torch

from laplace_lab.benchmarks._harness import Row, benchmark, main_for, timed
from laplace_lab.networks.models import mlp_3x200
from laplace_lab.numerics.jacobians import per_sample_jacobian


def _loop(
    model: torch.nn.Module, X: torch.Tensor, out: torch.Tensor | None = None
) -> torch.Tensor:
    """The baseline: torch.autograd.grad once per row; rows stacked, or written into ``out``."""
    params = [t for t in model.parameters() if t.requires_grad]
    rows = []
    for i, x in enumerate(X):
        g = torch.autograd.grad(model(x[None]).sum(), params)
        flat = [t.reshape(-1) for t in g]
        if out is None:
            rows.append(torch.cat(flat))
        else:
            torch.cat(flat, out=out[i])
    return torch.stack(rows) if out is None else out


def throughput(n: int, *, target: float = 5.0, method: str = "auto", reuse: bool = False) -> Row:
    """Rows per second of ``per_sample_jacobian`` against the per-sample autograd loop.

    ``reuse``: both sides write into one pre-touched (N, p) buffer (``out=``), so the ratio
    is compute only; otherwise each call returns a fresh N × p output (ours on huge pages,
    :mod:`laplace_lab.numerics._large_outputs`; the loop's ``torch.stack`` on ordinary pages).
    """
    torch.manual_seed(0)
    model = mlp_3x200(90).eval()
    X = torch.randn(n, 90)
    buf = torch.zeros(n, 98_801) if reuse else None
    J, ours = timed(lambda: per_sample_jacobian(model, X, method=method, out=buf), repeat=3)
    J = J.clone()
    R, base = timed(lambda: _loop(model, X, buf), repeat=2)
    same = bool(torch.allclose(J, R, rtol=1e-4, atol=1e-5))
    how = "reused out= buffer" if reuse else "fresh output"
    return Row(
        f"per_sample_jacobian[{method}] vs autograd.grad loop (3x200 MLP, p={J.shape[1]}, "
        f"N={n}, {how})",
        ours,
        "loop of torch.autograd.grad",
        base,
        min_ratio=target,
        correct=same,
        note=f"equal J: {same}; {n / ours:.0f} rows/s",
    )


def subset(n: int, k: int) -> Row:
    torch.manual_seed(1)
    model = mlp_3x200(90).eval()
    X = torch.randn(n, 90)
    S = np.random.default_rng(0).choice(98_801, size=k, replace=False)
    sub, ours = timed(lambda: per_sample_jacobian(model, X, subset=S, chunk_size=128), repeat=2)
    full, base = timed(lambda: per_sample_jacobian(model, X, chunk_size=128)[:, S], repeat=2)
    same = bool(torch.equal(sub, full))
    return Row(
        f"subset Jacobian (k={k}) vs full Jacobian then slice (N={n})",
        ours,
        "full N x p Jacobian, then columns",
        base,
        min_ratio=0.8,
        correct=same,
        note=f"output {sub.numel() * 4 / 2**20:.1f} MiB vs {n * 98_801 * 4 / 2**20:.0f} MiB; "
        f"equal: {same}",
    )


@benchmark("jacobians")
def run(full: bool = False) -> list[Row]:
    """Rows for ``laplace-lab bench`` (small sizes unless ``full``)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        if full:
            return [
                throughput(1000),
                throughput(1000, reuse=True),
                throughput(1000, method="vmap", target=1.0),
                subset(1000, 2000),
            ]
        return [
            throughput(500),
            throughput(500, reuse=True),
            throughput(500, method="vmap", target=1.0),
            subset(500, 1000),
        ]
    finally:
        torch.set_num_threads(previous)


if __name__ == "__main__":
    raise SystemExit(main_for(run))
