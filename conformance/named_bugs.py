"""Name the classic bug behind a failed case when its answers are exactly that bug's.

A Laplace library that fails a case is most often wrong in one of a few known ways: the prior
precision read as a prior variance, the prior added twice, the noise variance σ0² left out of
the regression GGN or applied twice, the other weight–bias convention of KFAC (or, on a
convolution, KFAC-expand for KFAC-reduce and back), or the GGN where the empirical Fisher was
asked. Each such bug is the correct Laplace approximation of a
*neighbouring* problem, so a failure's recorded answers (:class:`.diagnosis.Recording`) are
judged again, unchanged, by the same case against the oracle of each neighbour: when they
pass there (to the case's own tolerance), the failure's message names the bug and the
neighbour that reproduces it. A correct target never gets a name (it does not fail), and a
wrong one gets one only when its every answer is that bug's to the tolerance.

References
----------
.. [1] E. Daxberger, A. Kristiadi, A. Immer, R. Eschenhagen, M. Bauer, P. Hennig, "Laplace
   Redux — Effortless Bayesian Deep Learning", NeurIPS 2021, arXiv:2106.14806, §2 (the prior
   precision, σ0² and the GGN of the Laplace posterior).
.. [2] F. Kunstner, L. Balles, P. Hennig, "Limitations of the empirical Fisher approximation
   for natural gradient descent", NeurIPS 2019, arXiv:1905.12558 (the EF is not the GGN).
.. [3] H. Ritter, A. Botev, D. Barber, "A Scalable Laplace Approximation for Neural
   Networks", ICLR 2018, §3 (KFAC; the bias folded into the weight factor or kept apart).
.. [4] R. Eschenhagen, A. Immer, R. E. Turner, F. Schneider, P. Hennig, "Kronecker-Factored
   Approximate Curvature for Modern Neural Network Architectures", NeurIPS 2023,
   arXiv:2311.00636, §3 (KFAC-expand and KFAC-reduce).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from laplace_lab.conformance.diagnosis import Recording, Replay
from laplace_lab.conformance.kronecker import SharedKFACOracle
from laplace_lab.conformance.oracle import GAUSSIAN, DenseOracle
from laplace_lab.conformance.problems import Problem

__all__ = ["BUGS", "DETERMINISTIC", "NamedBug", "named_bug"]

#: The capabilities whose cases compare deterministic answers with a tolerance of rounding:
#: a statistical test (posterior samples, Monte Carlo probabilities) or a rule of order √u
#: (the evidence maximiser) is passed by neighbours too close to tell, so names nothing.
DETERMINISTIC = frozenset(
    {
        "predictive_variance",
        "diagonal_predictive_variance",
        "kfac_predictive_variance",
        "ekfac_predictive_variance",
        "ef_predictive_variance",
        "last_layer_predictive_variance",
        "low_rank_predictive_variance",
        "log_marginal_likelihood",
    }
)
#: The oracle's ingredients that depend on the model and inputs only (shared by a neighbour).
_SHARED = ("theta", "J", "G", "f", "test_outputs")


@dataclass(frozen=True)
class NamedBug:
    """A classic bug as the neighbouring problem whose correct answer it gives.

    Attributes
    ----------
    name : str
        Short id (``prior-as-variance``, ...).
    says : str
        What the target does, in the words of its failure message.
    applies : callable
        ``applies(capability, problem) -> bool``: where the neighbour differs from the case.
    neighbour : callable
        ``neighbour(problem, oracle) -> (problem, oracle)``.
    """

    name: str
    says: str
    applies: Callable[[str, Problem], bool]
    neighbour: Callable[[Problem, DenseOracle], tuple[Problem, DenseOracle]]


def _oracle_of(problem: Problem, like: DenseOracle, **injected: Any) -> DenseOracle:
    """The dense oracle of ``problem``, reusing ``like``'s model-only ingredients."""
    alt = DenseOracle(problem)
    for name in _SHARED:
        if name in like.__dict__:
            alt.__dict__[name] = like.__dict__[name]
    alt.__dict__.update(injected)
    return alt


def _with(**changes: Callable[[Problem], Any]):
    def neighbour(problem: Problem, oracle: DenseOracle) -> tuple[Problem, DenseOracle]:
        alt = dataclasses.replace(problem, **{k: f(problem) for k, f in changes.items()})
        return alt, _oracle_of(alt, oracle)

    return neighbour


def _prior(problem: Problem) -> np.ndarray | float:
    return np.asarray(problem.prior_precision, dtype=np.float64)


def _noise(problem: Problem) -> np.ndarray | float:
    """σ0²: a float, or the (C,) per-output variances of multi-output regression."""
    noise = np.asarray(problem.noise_var, dtype=np.float64)
    return float(noise) if noise.ndim == 0 else noise


def _regression_with_noise(capability: str, problem: Problem) -> bool:
    # at σ0² = 1 (every output) the problem with σ0² left out or squared is the same problem
    return problem.likelihood in GAUSSIAN and not np.allclose(_noise(problem), 1.0)


def _any_prior(capability: str, problem: Problem) -> bool:
    return not np.allclose(_prior(problem), 1.0)  # at α = 1, α and 1/α are one problem


def _ggn_for_ef(problem: Problem, oracle: DenseOracle) -> tuple[Problem, DenseOracle]:
    return problem, _oracle_of(problem, oracle, empirical_fisher=oracle.ggn)


BUGS: tuple[NamedBug, ...] = (
    NamedBug(
        "prior-as-variance",
        "the prior precision read as a prior variance (V⁻¹ where V belongs)",
        _any_prior,
        _with(prior_precision=lambda p: 1.0 / _prior(p)),
    ),
    NamedBug(
        "prior-twice",
        "the prior precision added twice (Ω = GGN + 2V)",
        lambda capability, problem: True,
        _with(prior_precision=lambda p: 2.0 * _prior(p)),
    ),
    NamedBug(
        "noise-left-out",
        "σ0² left out of the regression GGN (σ0² = 1)",
        _regression_with_noise,
        _with(noise_var=lambda p: np.ones_like(_noise(p)) if np.ndim(_noise(p)) else 1.0),
    ),
    NamedBug(
        "noise-twice",
        "σ0² applied twice in the regression GGN (σ0⁴ where σ0² belongs)",
        _regression_with_noise,
        _with(noise_var=lambda p: _noise(p) ** 2),
    ),
    NamedBug(
        "ggn-for-empirical-fisher",
        "the GGN where the empirical Fisher was asked",
        lambda capability, problem: capability == "ef_predictive_variance",
        _ggn_for_ef,
    ),
)

#: The two weight–bias conventions of KFAC (``kfac_predictive_variance``), each the other's.
_OTHER_CONVENTION = {"joint": "separate", "separate": "joint"}
#: The two approximations of a Conv2d layer's weight sharing, each the other's.
_OTHER_APPROXIMATION = {"expand": "reduce", "reduce": "expand"}


def _kfac_variants(case: Any) -> list[tuple[str, str, str, str]]:
    """(name, convention, approximation, what it says) of the KFAC variants that are not the
    case's: the other weight–bias convention, and on a Conv2d case the other approximation
    (on an MLP the two approximations are the same)."""
    parts = case.name.rsplit("-", 2)
    if parts[-1] in _OTHER_APPROXIMATION:  # kfac/<problem>-<convention>-<approximation>
        convention, approximation = parts[-2], parts[-1]
        other_c, other_a = _OTHER_CONVENTION[convention], _OTHER_APPROXIMATION[approximation]
        return [
            (
                "other-kfac-convention",
                other_c,
                approximation,
                f"KFAC in the {other_c!r} weight–bias convention where {convention!r} was asked",
            ),
            (
                "other-kfac-approximation",
                convention,
                other_a,
                f"KFAC-{other_a} where KFAC-{approximation} was asked",
            ),
        ]
    convention = parts[-1]
    if convention not in _OTHER_CONVENTION:
        return []
    other = _OTHER_CONVENTION[convention]
    says = f"KFAC in the {other!r} weight–bias convention where {convention!r} was asked"
    return [("other-kfac-convention", other, "expand", says)]


def _other_kfac_variant(
    case: Any, answers: list[Any], oracle: DenseOracle
) -> tuple[str, str] | None:
    """(name, says) of the KFAC variant whose variances the answers are, to their tolerance
    (the other weight–bias convention, or on a Conv2d case the other of KFAC-expand and
    KFAC-reduce), or None."""
    if case.capability != "kfac_predictive_variance":
        return None
    for name, convention, approximation, says in _kfac_variants(case):
        dense = SharedKFACOracle(oracle, convention, approximation)
        expected = np.asarray(dense.predictive_variance(), dtype=np.float64)
        try:
            got = np.asarray(answers[0], dtype=np.float64).reshape(expected.shape)
        except (TypeError, ValueError, IndexError):
            return None
        if np.all(np.abs(got - expected) <= np.asarray(dense.variance_tolerance())):
            return name, says
    return None


def named_bug(
    recording: Recording,
    case: Any,
    problem: Problem,
    oracle: DenseOracle,
    run: Callable[[Any, Problem, DenseOracle], Any],
) -> tuple[str, str] | None:
    """``(name, says)`` of the classic bug whose answers ``recording`` gave, or None.

    Parameters
    ----------
    recording : Recording
        The target's answers as the failed case ran.
    case : Case
        The failed case (its ``name`` and ``capability``).
    problem, oracle : Problem, DenseOracle
        The case's problem and oracle.
    run : callable
        ``run(target, problem, oracle) -> Check``: the case on another problem and oracle (a
        failed Check where the target's answer is outside the contract).
    """
    if case.capability not in DETERMINISTIC:
        return None
    kfac = _other_kfac_variant(case, recording.answers, oracle)
    if kfac is not None:
        return kfac
    for bug in BUGS:
        if not bug.applies(case.capability, problem):
            continue
        alt_problem, alt_oracle = bug.neighbour(problem, oracle)
        replay = Replay(
            recording.name,
            recording.predictive_variance,
            recording.capabilities,
            iter(recording.answers),
        )
        try:
            passed = run(replay, alt_problem, alt_oracle).passed
        except (RuntimeError, ValueError, np.linalg.LinAlgError):
            continue  # a neighbour the case cannot be judged on names nothing
        if passed:
            return bug.name, bug.says
    return None
