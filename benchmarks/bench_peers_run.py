"""``laplace-lab bench --only peers``: every peer row, side by side in one process, in CPU
seconds (:func:`.bench_peers.one_thread`) — the GGN
rows of :mod:`.bench_peers` and those of :mod:`.bench_peers_kfac`, :mod:`.bench_peers_lla`,
:mod:`.bench_peers_eig` and :mod:`.bench_peers_cnn` (each module's docstring says what it
times and against whom).

References
----------
.. [1] F. Dangel, R. Eschenhagen, et al., curvlinops: linear operators for curvature matrices
   in PyTorch, https://github.com/f-dangel/curvlinops (3.0.1).
"""

from __future__ import annotations

from laplace_lab.benchmarks import (
    bench_peers,
    bench_peers_cnn,
    bench_peers_eig,
    bench_peers_kfac,
    bench_peers_lla,
)
from laplace_lab.benchmarks._harness import BenchmarkSkipped, Row, benchmark, main_for


@benchmark("peers")
def run(full: bool = False) -> list[Row]:
    """Every peer row (``full`` changes nothing: the sizes are fixed)."""
    if not any(bench_peers._have(m) for m in ("curvlinops", "posteriors", "laplace", "laplax")):
        raise BenchmarkSkipped("no peer library is installed")
    with bench_peers.one_thread():
        return (
            bench_peers.ggn_rows()
            + bench_peers_kfac.rows()
            + bench_peers_lla.rows()
            + bench_peers_eig.rows()
            + bench_peers_cnn.rows()
        )


if __name__ == "__main__":
    raise SystemExit(main_for(run))
