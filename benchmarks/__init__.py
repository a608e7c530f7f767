"""Side-by-side benchmarks: each row times ours and a baseline in one run and prints the ratio.

A benchmark is a function ``run(full: bool) -> list[Row]`` registered with :func:`benchmark`
in a module ``bench_<topic>.py`` of this package (discovered, no central edit) or in a user
module loaded with ``laplace-lab bench --plugin MODULE``. Every row's ratio is
baseline / ours: above 1 means ours is better (faster, or smaller in memory).
"""

from laplace_lab.benchmarks._harness import (
    BenchmarkSkipped,
    Row,
    benchmark,
    benchmarks,
    format_table,
    load_plugin,
    main_for,
    run_benchmarks,
    timed,
)

__all__ = [
    "BenchmarkSkipped",
    "Row",
    "benchmark",
    "benchmarks",
    "format_table",
    "load_plugin",
    "main_for",
    "run_benchmarks",
    "timed",
]
