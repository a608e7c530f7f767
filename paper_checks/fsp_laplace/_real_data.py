"""Shared runs of the real-data claims (Mauna Loa CO₂, UCI regression) and their decision rule.

Every run is cached per (mode, base seed) so that the claims that read it share one fit; the
mutant runner clears these caches around each mutant run.

Decision rule, fixed before measuring: a method "beats" another when the mean over training
seeds (or folds) of their paired difference is significantly positive — a one-sided Student-t
test at level 0.05 (:func:`laplace_lab.paper_checks.verification.decisions.superiority`); the
reverse ordering significant refutes, and neither is INCONCLUSIVE. A recorded full-mode run is
re-decided by the same rule from its stored values (:func:`redecided`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np

from laplace_lab.paper_checks.fsp_laplace.experiments.mauna_loa import (
    co2_gp_scores,
    fit_co2_gp,
    load_mauna_loa,
    mauna_loa_experiment,
)
from laplace_lab.paper_checks.fsp_laplace.experiments.uci import uci_fold
from laplace_lab.paper_checks.verification import (
    Context,
    Decision,
    Recorded,
    cached,
    load_recorded,
)

#: Training seeds of the Mauna Loa networks and their L-BFGS evaluations (quick, full).
ML_SEEDS = {False: 3, True: 10}
ML_STEPS = {False: 300, True: 1000}
#: Data sets and test folds of the 5-fold cross-validation (quick: three folds of Boston).
UCI_RUNS = {False: (("boston",), (0, 1, 2)), True: (("boston", "concrete"), (0, 1, 2, 3, 4))}
#: Folds of the 5-fold cross-validation.
UCI_FOLDS = 5


#: The full-mode run of the real-data claims (10 seeds, both UCI sets, all folds).
FULL_RECORD = Path(__file__).parent / "recorded" / "real_data_full.json"
#: The full-mode run of the claims decided on replicates (:data:`..prior_beliefs.LOOKS`,
#: :data:`..uci.OOD_LOOKS`), whose quick sizes leave them undecided.
REPLICATED_RECORD = Path(__file__).parent / "recorded" / "replicated_full.json"


def recorded_claim(claim: str, record: Path = FULL_RECORD) -> tuple[Recorded, dict]:
    """The recorded full-mode run and what it stored for ``claim`` (status under the rule
    of its day, reason, details with the raw values per seed, fold or replicate)."""
    rec = load_recorded(record)
    return rec, rec.data["claims"][claim]


def redecided(
    claim: str,
    decide: Callable[[dict], Decision],
    *,
    record: Path = FULL_RECORD,
    counts: bool = True,
    why: str = "",
) -> tuple[tuple[Recorded, ...], list[str], Decision]:
    """The recorded full-mode run of ``claim`` re-decided under the current rules from its
    stored raw values (``decide`` maps its stored ``details`` to a :class:`Decision`): the
    record with its decision, one evidence line, and the decision."""
    rec, got = recorded_claim(claim, record)
    d = decide(got["details"])
    line = (
        f"Full mode (recorded {rec.date}, commit {rec.commit[:7]}), re-decided under the "
        f"current rules from its stored values: {d.status.value} — {d.summary} (recorded "
        f"under the rule of its day: {got['status']})"
        + ("" if counts else f"; it does not count: {why}")
    )
    return (rec.decided(d, counts=counts, why=why),), [line], d


class Difference(NamedTuple):
    """Mean and standard error over seeds (or folds) of a paired difference a − b."""

    mean: float
    se: float
    values: tuple[float, ...]

    def text(self, unit: str = "") -> str:
        """ "+m ± se" with the unit."""
        return f"{self.mean:+.3g} ± {self.se:.2g}{unit}"


def difference(a: list[float] | np.ndarray, b: list[float] | np.ndarray | float) -> Difference:
    """The paired difference a − b (b may be one number, e.g. the deterministic GP)."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    se = float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else float("inf")
    return Difference(float(d.mean()), se, tuple(float(x) for x in d))


@cached
def co2_gp(full: bool) -> tuple:
    """The Mauna Loa split, the fitted CO₂ prior (kernel, noise variance) and the GP's scores."""
    data = load_mauna_loa()
    gp = fit_co2_gp(data)
    return data, gp, co2_gp_scores(data, gp)


def _co2_network(method: str, full: bool, seed: int, i: int) -> dict:
    data, gp, _ = co2_gp(full)
    rng = Context(full=full, seed=seed).rng(f"fsp-mauna-loa/{method}/{i}")
    methods = (method,) if method == "FSP-Laplace" else ("Laplace", "MAP")
    return mauna_loa_experiment(rng=rng, steps=ML_STEPS[full], data=data, gp=gp, methods=methods)


@cached
def co2_fsp_network(full: bool, seed: int, i: int) -> dict:
    """Scores of the FSP-Laplace network at training seed i."""
    return _co2_network("FSP-Laplace", full, seed, i)


@cached
def co2_laplace_network(full: bool, seed: int, i: int) -> dict:
    """Scores of the Laplace network and its MAP at training seed i."""
    return _co2_network("Laplace", full, seed, i)


def co2_network(method: str, full: bool, seed: int, i: int) -> dict:
    """Scores of one network (``"FSP-Laplace"``, or ``"Laplace"`` with its ``"MAP"``) at
    training seed i; each network is cached apart, so that a mutant of one reuses the
    other."""
    run = co2_fsp_network if method == "FSP-Laplace" else co2_laplace_network
    return run(full, seed, i)


def co2_scores(method: str, metric: str, full: bool, seed: int) -> list[float]:
    """``metric`` of ``method`` per training seed (the GP: one value per seed, all equal)."""
    if method == "GP":
        return [co2_gp(full)[2][metric]] * ML_SEEDS[full]
    run = "FSP-Laplace" if method == "FSP-Laplace" else "Laplace"
    return [co2_network(run, full, seed, i)[method][metric] for i in range(ML_SEEDS[full])]


def _cv_seed(name: str, full: bool, seed: int, cv: int) -> int:
    """The permutation seed of repetition ``cv`` of the cross-validation (0: the claims'
    first, shared by every UCI claim)."""
    key = f"fsp-uci/{name}" if cv == 0 else f"fsp-uci/{name}/cv{cv}"
    return int(Context(full=full, seed=seed).rng(key).integers(2**31))


@cached
def uci_fold_scores(name: str, full: bool, seed: int, cv: int, fold: int) -> dict:
    """method → metric → value on test fold ``fold`` of repetition ``cv`` of the 5-fold
    cross-validation."""
    return uci_fold(name, fold, rng=_cv_seed(name, full, seed, cv), n_folds=UCI_FOLDS)


def uci_replicate(name: str, full: bool, seed: int, i: int) -> dict:
    """Scores of replicate i: test fold i mod 5 of cross-validation repetition ⌊i / 5⌋."""
    return uci_fold_scores(name, full, seed, i // UCI_FOLDS, i % UCI_FOLDS)


def uci_scores(name: str, full: bool, seed: int) -> dict[str, dict[str, list[float]]]:
    """method → metric → values over the test folds of one 5-fold cross-validation."""
    out: dict[str, dict[str, list[float]]] = {}
    for fold in UCI_RUNS[full][1]:
        for method, scores in uci_fold_scores(name, full, seed, 0, fold).items():
            for metric, value in scores.items():
                out.setdefault(method, {}).setdefault(metric, []).append(value)
    return out
