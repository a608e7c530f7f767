"""Group-sequential decisions: a test looked at after growing numbers of replications.

A claim whose statistic is decided on replications (fitted networks, data sets, splits,
test folds) draws the fewest that decide it: it looks at the test after n_1 < n_2 < … < n_L
replications and stops at the first look that decides. Looking L times at level α each
would raise the chance of a wrong decision above α; here each look tests at the Bonferroni
share α/L, so that the whole design errs with probability at most α (Bonferroni's inequality
over the L looks), whatever the statistic and however the looks are correlated. Group
sequential boundaries (Pocock; O'Brien & Fleming) would spend α less conservatively, but they
need the joint law of the looks' statistics, which differs from claim to claim.

References
----------
.. [1] C. Jennison, B. W. Turnbull, *Group Sequential Methods with Applications to Clinical
   Trials*, Chapman & Hall/CRC, 2000, §1.3 (repeated significance tests) and §2.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

__all__ = ["Looks"]

R = TypeVar("R")


@dataclass(frozen=True)
class Looks:
    """The replication counts at which a test is looked at, and its error rate.

    Parameters
    ----------
    counts : sequence of int
        n_1 < n_2 < … < n_L, each ≥ 1.
    alpha : float
        The chance of a wrong decision that the whole design allows, in (0, 1); each look
        tests at ``alpha / L``.
    """

    counts: tuple[int, ...]
    alpha: float = 0.05

    def __post_init__(self) -> None:
        counts = tuple(int(n) for n in self.counts)
        if not counts or counts[0] < 1 or any(b <= a for a, b in itertools.pairwise(counts)):
            raise ValueError(f"counts must be increasing replication counts >= 1; got {counts}")
        if not 0.0 < float(self.alpha) < 1.0:
            raise ValueError(f"alpha must be in (0, 1); got alpha={self.alpha!r}")
        object.__setattr__(self, "counts", counts)
        object.__setattr__(self, "alpha", float(self.alpha))

    @property
    def per_look(self) -> float:
        """The level of each look's test: alpha / L."""
        return self.alpha / len(self.counts)

    def run(self, test: Callable[[int, float], R], decided: Callable[[R], bool]) -> tuple[int, R]:
        """``test(n, per_look)`` at each count n until ``decided`` holds of its result.

        Returns
        -------
        n : int
            The count of the deciding look, or the last count.
        result
            That look's result.
        """
        for n in self.counts:
            result = test(n, self.per_look)
            if decided(result):
                break
        return n, result

    def text(self, what: str = "replications") -> str:
        """The design in words, for a claim's evidence."""
        return (
            f"looks at {', '.join(map(str, self.counts))} {what}, each at level "
            f"{self.alpha:g}/{len(self.counts)} (Bonferroni over the looks)"
        )
