"""laplace-lab: verify the theory and reproduce the numerical studies of Laplace approximations.

Subpackages
-----------
theory
    Exact, small-p mathematics in float64: the oracle (IPV, Theorems 1–3, conjugate models).
numerics
    Scalable kernels on the array API (NumPy, CuPy, torch): GGN, selection, predictives, Lanczos.
studies
    Monte Carlo and network studies: grids × replications, a resumable store, executors, plots.
paper_checks
    Every checkable claim of the five papers as an executable check with a verdict.
benchmarks
    Side-by-side timings printed as ratios.
conformance
    Validates any Laplace implementation against closed forms and a dense float64 oracle.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("laplace-lab")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
