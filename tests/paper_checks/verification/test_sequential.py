"""Group-sequential looks: each at the Bonferroni share of the error rate, stopping at the
first look that decides, and a design that errs no more often than its rate."""

from __future__ import annotations

import numpy as np
import pytest

from laplace_lab.paper_checks.verification.replicates import sequential
from laplace_lab.paper_checks.verification.sequential import Looks


def test_looks_stop_at_the_first_deciding_look_at_the_bonferroni_level():
    seen = []

    def test(n, level):
        seen.append((n, level))
        return n >= 20

    n, decided = Looks((5, 10, 20, 40), alpha=0.04).run(test, bool)
    assert (n, decided) == (20, True)
    assert seen == [(5, 0.01), (10, 0.01), (20, 0.01)]
    n, decided = Looks((5, 10), alpha=0.05).run(lambda n, level: False, bool)
    assert (n, decided) == (10, False)  # undecided: the last look's result
    assert "looks at 5, 10 fits, each at level 0.05/2" in Looks((5, 10)).text("fits")


@pytest.mark.parametrize(
    ("counts", "alpha"), [((), 0.05), ((0, 3), 0.05), ((4, 4), 0.05), ((3,), 0.0), ((3,), 1.0)]
)
def test_a_design_needs_increasing_positive_counts_and_a_rate_in_0_1(counts, alpha):
    with pytest.raises(ValueError, match=r"counts must be increasing|alpha must be in"):
        Looks(counts, alpha)


def test_the_sequential_t_design_errs_at_most_at_its_rate_under_the_null():
    # a statistic whose mean is exactly its threshold: any decision is wrong
    rng = np.random.default_rng(7)
    trials, wrong = 2000, 0
    for _ in range(trials):
        values = rng.standard_normal(40)
        est = sequential(lambda i, v=values: float(v[i]), 0.0, looks=(5, 10, 20, 40))
        wrong += est.side != 0
    rate = wrong / trials
    # Bonferroni over 4 looks keeps the rate at most 0.05 (about 0.03 here: the looks are
    # correlated); 3 binomial standard errors of slack for the simulation
    assert rate <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / trials)
    # and the looks do spend the rate: more than a single look at the per-look level would
    assert rate > 0.05 / 4
