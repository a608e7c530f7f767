"""The margins of the FSP-Laplace out-of-distribution claim, from Table C.1 alone, and the
corrected resampled t of its cross-validation folds."""

import math

import numpy as np
import pytest

from laplace_lab.paper_checks.fsp_laplace import uci
from laplace_lab.paper_checks.verification import decisions


def test_margins_are_the_standard_errors_of_table_c1s_own_differences():
    # Table C.1 (arXiv:2407.13711), OOD accuracy: Boston FSP 0.923 ± 0.015, Laplace 0.913 ±
    # 0.008; concrete 0.914 ± 0.007, 0.859 ± 0.002
    assert uci.OOD_MARGIN["boston"] == pytest.approx(0.017)
    assert uci.OOD_MARGIN["concrete"] == pytest.approx(math.sqrt(0.007**2 + 0.002**2))


def test_paper_gaps_are_table_c1():
    # the mean FSP − Laplace gap over the 11 sets of Table C.1 is +0.002
    assert "(mean +0.002)" in uci._paper_gaps()


def test_cross_validated_standard_error_is_nadeau_and_bengios():
    values = np.array([0.1, -0.05, 0.02, 0.07, -0.01])
    t = decisions.cross_validated("gap", values, test_over_train=0.25)
    # (1/J + n_test/n_train)·s² with J = 5: (0.2 + 0.25)·s², against the naive 0.2·s²
    assert t.se == pytest.approx(math.sqrt(0.45 * values.var(ddof=1)))
    assert t.df == 4 and t.mean == pytest.approx(values.mean()) and t.n == 0
    with pytest.raises(ValueError, match="test_over_train"):
        decisions.cross_validated("gap", values, test_over_train=0.0)


def test_more_repeated_folds_do_not_shrink_the_corrected_error_below_the_overlap_term():
    rng = np.random.default_rng(0)
    values = rng.normal(size=400)
    t = decisions.cross_validated("gap", values, test_over_train=uci.TEST_OVER_TRAIN)
    assert t.se > math.sqrt(uci.TEST_OVER_TRAIN) * values.std(ddof=1) * 0.999
