"""Setup C/D configurations follow App. C.5/C.6; verdicts over backbones combine worst-first."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from laplace_lab.paper_checks.subnetwork_laplace_optimality import setups
from laplace_lab.paper_checks.verification import Status, Verdict


def test_setup_d_configuration_is_app_c6():
    for model, ks in setups._BACKBONES.values():
        c = setups._uci_config("boston", model, ks)
        assert (c.train.optimizer, c.train.lr, c.train.epochs) == ("adam", 1e-2, 1500)
        assert c.train.batch_size >= 506  # full batch on every Setup D data set here
        assert c.prior_precision == 1.0 and c.train.prior_precision == 1.0
        assert c.test_fraction == 0.1 and c.noise_from == "test"
        assert set(c.methods) == {
            "gradient_laplace",
            "greedy_laplace",
            "subnet_diagonal",
            "last_k",
        }
    assert [m for m, _ in setups._BACKBONES.values()] == ["mlp_2x50", "mlp_3x200"]


def test_setup_c_configuration_is_app_c5_on_digits():
    for full in (False, True):
        c, seeds = setups._digits_config(full)
        assert (c.dataset, c.model) == ("digits", "digits_cnn")
        t = c.train
        assert (t.optimizer, t.lr, t.momentum, t.nesterov, t.weight_decay) == (
            "sgd",
            0.1,
            0.9,
            True,
            1e-4,
        )
        assert 650 <= max(c.ks) and seeds >= 3  # NeuralLinear's k = 650 inside the grid


def test_combine_decides_every_backbone_at_once():
    from laplace_lab.paper_checks.verification import decisions

    ok = Verdict(Status.CONFIRMED, measured=0.5, evidence="a")
    other = Verdict(Status.CONFIRMED, measured=0.9, evidence="b")
    below = decisions.test("[s] k = 200", [-1.0, -1.1, -0.9], side=-1)
    unclear = decisions.test("[l] k = 200", [-1.0, 1.0, 0.1], side=-1)
    v = setups._combine({"s": ok, "l": other}, (), decisions.superiority([below, unclear]))
    assert v.status is Status.INCONCLUSIVE and v.measured == 0.9
    assert v.decision.status is Status.INCONCLUSIVE
    assert "[s] a | [l] b" in v.evidence
    both = decisions.superiority([below, below])
    assert setups._combine({"s": ok, "l": ok}, (), both).status is Status.CONFIRMED
