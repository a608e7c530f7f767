"""Posterior samples of the structured Laplace posteriors: diagonal, KFAC and low rank.

The capability ``structured_posterior_samples`` returns draws θ ~ N(θ̂, P⁻¹) over all p
parameters, with P the precision of the structure:

- ``"diag"``: diag(Ω), the factorised posterior of ``diagonal_predictive_variance``;
- ``"kron"``: ⊕_l K_l + αI, the KFAC precision of ``kfac_predictive_variance`` in the
  ``"joint"`` or ``"separate"`` weight–bias convention
  (:class:`~laplace_lab.conformance.kronecker.KFACOracle`);
- ``"low_rank"``: U_r diag(λ_r) U_rᵀ + V with the exact top-r eigenpairs of the GGN part,
  the posterior of ``low_rank_predictive_variance``; r is the rank of
  :func:`~laplace_lab.conformance.catalog.low_rank.gapped_rank`, the r ∈ [2, 5] with the
  largest gap (λ_r − λ_{r+1})/λ_1.

The oracle writes P out densely in float64 (:func:`structured_precision`: from the dense
GGN, or from the Kronecker factors of per-sample signals, never from a sampler) and the
draws are whitened with its Cholesky factor and tested as the full posterior's are
(:func:`laplace_lab.conformance.gaussian_samples.whitened_test`: the mean and the
Bartlett-corrected covariance test, each at level 5e-4, k = p = 41 or 59, n = 16 000
draws). A correct sampler
fails a case with probability at most 1e-3, the 13 cases together at most 1.3e-2 for a
seed; each case has its own stream of draws (``--seed`` redraws them).

Every case breaks a symmetric reading: α = 2.5 (a precision read as a variance is 0.4), a
non-isotropic diagonal prior V on the regression problem of the diagonal and low-rank cases
(a sampler that assumes V = αI fails), σ0² = 0.3, three classes; the two KFAC conventions,
the diagonal and the full posterior, and the ranks r and r ± 1 are far apart in the
covariance statistic (docs/validation.md, "Structured posterior samples").

References
----------
.. [1] H. Ritter, A. Botev, D. Barber, "A Scalable Laplace Approximation for Neural Networks",
   ICLR 2018, §2–3 (the diagonal and KFAC Laplace posteriors and their sampling).
.. [2] E. Daxberger, A. Kristiadi, A. Immer, R. Eschenhagen, M. Bauer, P. Hennig, "Laplace
   Redux — Effortless Bayesian Deep Learning", NeurIPS 2021, arXiv:2106.14806, §2 (diagonal,
   KFAC and low-rank Hessian structures).
.. [3] T. W. Anderson, "An Introduction to Multivariate Statistical Analysis", 3rd ed.,
   Wiley (2003), §10.8 (testing Σ = Σ0).
"""

from __future__ import annotations

import numpy as np

from laplace_lab._checks import one_of, positive_int
from laplace_lab.conformance.catalog.low_rank import gapped_rank
from laplace_lab.conformance.compare import target_array
from laplace_lab.conformance.contract import KFAC_CONVENTIONS, SAMPLE_STRUCTURES
from laplace_lab.conformance.gaussian_samples import sample_seed, whitened_test
from laplace_lab.conformance.kronecker import KFACOracle
from laplace_lab.conformance.oracle import DenseOracle
from laplace_lab.conformance.problems import Problem
from laplace_lab.conformance.registry import Check, conformance_case
from laplace_lab.conformance.runner import call_expression, call_target

__all__ = ["sample_arguments", "structured_precision"]

CAPABILITY = "structured_posterior_samples"
#: Draws asked per case: 4 × the full posterior's, for k = p = 41 or 59 instead of ≤ 12 (the
#: module docstring's separations grow with n, the null's spread does not).
N_SAMPLES = 16_000


def structured_precision(
    oracle: DenseOracle, structure: str, *, convention: str | None, rank: int | None
) -> np.ndarray:
    """The oracle's dense p × p precision P of ``structure`` (module docstring), float64."""
    one_of(structure, "structure", SAMPLE_STRUCTURES)
    if structure == "diag":
        return np.diag(np.diag(oracle.omega))
    if structure == "kron":
        return KFACOracle(oracle, one_of(convention, "convention", KFAC_CONVENTIONS)).precision
    return oracle.low_rank_omega(positive_int(rank, "rank"))


def sample_arguments(oracle: DenseOracle, structure: str, convention: str | None) -> dict:
    """``structure``, ``convention`` and ``rank`` as the case passes them (None where they do
    not apply; the rank by :func:`~.low_rank.gapped_rank` on the GGN's spectrum)."""
    rank = gapped_rank(oracle.ggn_spectrum[0]) if structure == "low_rank" else None
    return {
        "structure": structure,
        "convention": convention if structure == "kron" else None,
        "rank": rank,
    }


def check_structured_samples(
    target,
    problem: Problem,
    oracle: DenseOracle,
    *,
    name: str,
    structure: str,
    convention: str | None,
    seed: int,
) -> Check:
    """The target's draws, whitened with the Cholesky factor of the oracle's P, against
    N(0, I) (module docstring)."""
    args = sample_arguments(oracle, structure, convention)
    draws_seed = sample_seed("conformance-structured-samples", name, seed=seed)
    kw = {**args, "n_samples": N_SAMPLES, "seed": draws_seed}
    expr = call_expression(CAPABILITY, problem, **kw)
    out = call_target(target, CAPABILITY, problem, **kw)
    theta = target_array(out, "the posterior samples", (N_SAMPLES, problem.p), expr)
    P = structured_precision(oracle, structure, convention=args["convention"], rank=args["rank"])
    test = whitened_test(theta, oracle.theta, P)
    details = {**test.details(), **{k: v for k, v in args.items() if v is not None}}
    body = (
        "import numpy as np\n"
        "from laplace_lab.conformance import DenseOracle\n"
        "from laplace_lab.conformance.catalog.structured_sampling import structured_precision\n"
        "from laplace_lab.conformance.gaussian_samples import whitened_test\n"
        f"theta = np.asarray({expr}, dtype=float)\n"
        "oracle = DenseOracle(problem)\n"
        f"P = structured_precision(oracle, {structure!r}, convention={args['convention']!r}, "
        f"rank={args['rank']!r})\n"
        "test = whitened_test(theta, oracle.theta, P)  # z = Lᵀ(θ − θ̂) must be N(0, I)\n"
        f"print(test.summary())  # E‖z‖²/k = {test.trace_ratio:.4g} here, 1 if right"
    )
    return Check(test.passed, test.summary(), details, body)


#: (structure, convention, problem, description) of every case.
_CASES = (
    ("diag", None, "mlp-regression-diagonal-prior", "tanh MLP 3-8-1, σ0² = 0.3, a diagonal V"),
    ("diag", None, "mlp-binary", "one logit, α = 2.5"),
    ("diag", None, "mlp-multiclass", "3 logits, α = 2.5"),
    ("kron", "joint", "mlp-regression", "tanh MLP 3-8-1, σ0² = 0.3, α = 2.5; [W b] factor"),
    ("kron", "separate", "mlp-regression", "the same; bias factor G alone"),
    ("kron", "separate", "mlp-regression-float32", "the same in float32"),
    ("kron", "joint", "mlp-binary", "one logit; [W b] factor"),
    ("kron", "separate", "mlp-binary", "one logit; bias factor G alone"),
    ("kron", "joint", "mlp-multiclass", "3 logits, G = Σ Dᵀ(diag(π) − ππᵀ)D; [W b] factor"),
    ("kron", "separate", "mlp-multiclass", "3 logits; bias factor G alone"),
    (
        "low_rank",
        None,
        "mlp-regression-diagonal-prior",
        "the rank of the largest eigengap, a diagonal V",
    ),
    ("low_rank", None, "mlp-binary", "the rank of the largest eigengap, one logit"),
    ("low_rank", None, "mlp-multiclass", "the rank of the largest eigengap of the softmax GGN"),
)


def case_name(structure: str, convention: str | None, problem: str) -> str:
    """``structured-samples/<structure>/<problem>[-<convention>]``."""
    suffix = f"-{convention}" if convention else ""
    return f"structured-samples/{structure.replace('_', '-')}/{problem}{suffix}"


def _register(structure: str, convention: str | None, problem: str, text: str) -> None:
    name = case_name(structure, convention, problem)

    @conformance_case(name, capability=CAPABILITY, problem=problem, description=text)
    def case(target, problem: Problem, oracle: DenseOracle, *, seed: int) -> Check:
        return check_structured_samples(
            target,
            problem,
            oracle,
            name=name,
            structure=structure,
            convention=convention,
            seed=seed,
        )


for _structure, _convention, _problem, _text in _CASES:
    _register(_structure, _convention, _problem, _text)
