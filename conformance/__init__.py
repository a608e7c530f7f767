"""Validate any Laplace implementation against answers computed independently of it.

``laplace-lab validate --target MODULE:CALLABLE`` (or :func:`validate` from Python) calls a
target that follows the contract of :mod:`laplace_lab.conformance.contract` on registered
cases — linear-Gaussian models where linearized Laplace is exact Bayesian linear regression,
small MLPs against a dense float64 GGN oracle, all three likelihoods, unsorted and
non-contiguous subsets, float32 and float64 under the dtype rule of
:mod:`laplace_lab.conformance.tolerance` — and writes a report (HTML, Markdown, JSON) with a
minimal reproducer for every failure. Optional capabilities (masks, posterior samples, the
log marginal likelihood, low-rank posteriors, empirical Bayes) are checked when the target
declares them.

A layer above :mod:`laplace_lab.numerics`, :mod:`laplace_lab.theory` and
:mod:`laplace_lab.studies`; nothing but the command line imports it, except the dense oracle,
which the paper checks use to audit the kernels their claims rest on.
"""

from laplace_lab._lazy import lazy_exports

# Public names and their modules, imported on first use so that building the command-line
# parser (which imports ``laplace_lab.conformance.cli``) loads none of the suite.
_EXPORTS = {
    "Validation": "runner",
    "validate": "runner",
    "write_validation_report": "report",
    "CAPABILITIES": "contract",
    "MASK_METHODS": "contract",
    "NotOffered": "contract",
    "Target": "contract",
    "load_target": "contract",
    "Case": "registry",
    "CaseResult": "registry",
    "Check": "registry",
    "Outcome": "registry",
    "cases": "registry",
    "conformance_case": "registry",
    "get_case": "registry",
    "DenseOracle": "oracle",
    "Problem": "problems",
    "build_problem": "problems",
    "problem_names": "problems",
}


__all__ = [
    # running
    "Validation",
    "validate",
    "write_validation_report",
    # the contract
    "CAPABILITIES",
    "MASK_METHODS",
    "NotOffered",
    "Target",
    "load_target",
    # the registry of cases
    "Case",
    "CaseResult",
    "Check",
    "Outcome",
    "cases",
    "conformance_case",
    "get_case",
    # problems and the oracle
    "DenseOracle",
    "Problem",
    "build_problem",
    "problem_names",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
