"""UCI Auto MPG as the case study of §5.2 of Rodemann et al. (arXiv:2605.12208) reads it."""

from __future__ import annotations

import numpy as np

from laplace_lab.paper_checks.self_supervised_laplace import _audits, uci


def test_auto_mpg_is_the_uci_table_with_origin_one_hot():
    ds = uci.auto_mpg(np.random.default_rng(0))
    assert ds.X_train.shape[0] + ds.X_test.shape[0] == 392  # UCI's 398 less 6 missing horsepower
    assert ds.X_test.shape[0] == 78  # 20%, Table 3's coverages are multiples of 1/79
    assert ds.X_train.shape[1] == 9  # 6 numeric inputs and origin one-hot (no car name)
    onehot = ds.X_train[:, -3:] * ds.x_std[-3:] + ds.x_mean[-3:]
    np.testing.assert_allclose(onehot.sum(axis=1), 1.0)
    _audits.standardised_on_training_rows(ds, "Auto MPG")
