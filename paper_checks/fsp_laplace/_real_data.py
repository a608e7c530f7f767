"""Shared runs of the real-data claims (Mauna Loa CO₂, UCI regression) and their decision rule.

Every run is cached per (mode, base seed) so that the claims that read it share one fit; the
mutant runner clears these caches around each mutant run.

Decision rule, fixed before measuring: a method "beats" another when the mean over training
seeds (or folds) of their paired difference exceeds one standard error of that mean — the
paper's own reading of "better": "we bold the score with the highest mean as well as any
scores whose standard-error bars overlap" (Cinquin et al., arXiv:2407.13711, §4.1).
"""

from __future__ import annotations

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
from laplace_lab.paper_checks.verification import Context, Recorded, cached, load_recorded

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


def full_mode_record(
    claim: str, record: Path = FULL_RECORD
) -> tuple[tuple[Recorded, ...], list[str]]:
    """The recorded full-mode run and one evidence line with ``claim``'s verdict in it."""
    rec = load_recorded(record)
    got = rec.data["claims"][claim]
    return (rec,), [
        f"Full mode (recorded {rec.date}, commit {rec.commit[:7]}): {got['status']} — "
        f"{got['reason']}"
    ]


def full_mode_verdict(claim: str, record: Path = REPLICATED_RECORD) -> str:
    """The recorded full-mode verdict of ``claim`` (for the reason of a quick verdict that
    its quick sizes leave undecided)."""
    return str(load_recorded(record).data["claims"][claim]["status"])


class Difference(NamedTuple):
    """Mean and standard error over seeds (or folds) of a paired difference a − b."""

    mean: float
    se: float
    values: tuple[float, ...]

    @property
    def positive(self) -> bool:
        """Mean − one standard error > 0: a beats b under the paper's reading."""
        return self.mean - self.se > 0

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
