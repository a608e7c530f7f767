"""The replicated decisions of two experiment claims of Daxberger et al., "Bayesian Deep
Learning via Subnetwork Inference" (ICML 2021, arXiv:2010.14689): the split-level test of
§6.2 (UCI) and the two-look test across trained networks of §6.3 (rotated digits), on
synthetic replications."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from laplace_lab.paper_checks.subnetwork_inference import rotated_digits, uci
from laplace_lab.paper_checks.subnetwork_inference.experiments.rotated_digits import (
    RotationShift,
)
from laplace_lab.paper_checks.subnetwork_inference.experiments.uci import UCISplit
from laplace_lab.paper_checks.verification import Context, Status
from laplace_lab.paper_checks.verification.registry import run_claim
from laplace_lab.papers import claims

WASS, RAND = rotated_digits.WASS, rotated_digits.RAND


def _claim(name: str):
    return next(c for c in claims("subnetwork-inference") if c.name == name)


def test_a_replication_stream_is_the_same_for_any_number_of_replications():
    """Replication i is stream i of the key whatever the count: the claims that read the first
    replications share them, and a second look extends the first."""
    for key in ("uci-subnetworks", "rotated-digits"):
        many = [g.integers(2**62) for g in Context(seed=3).rng(key).spawn(16)]
        one = [Context(seed=3).rng(key).spawn(i + 1)[i].integers(2**62) for i in range(16)]
        assert many == one


def _uci_split(rng: np.random.Generator, shift: float) -> UCISplit:
    """A split whose subnetwork is ``shift`` nats behind on average, with one far-off point."""
    full = {a: rng.normal(-0.3, 0.5, 51) for a in uci.ARCHITECTURES}
    sub = {a: full[a] - shift + rng.normal(0.0, 0.2, 51) for a in uci.SMALLER}
    for v in sub.values():
        v[rng.integers(51)] -= 60.0 if shift else 0.0
    zeros = {a: 0 for a in uci.ARCHITECTURES}
    return UCISplit(
        "boston", dict(zeros), dict(zeros), full, full, sub, sub, 0.0, 0.0, zeros, zeros
    )


@pytest.mark.parametrize(("shift", "status"), [(0.3, Status.REFUTED), (0.0, Status.INCONCLUSIVE)])
def test_uci_comparison_replicates_at_the_split(monkeypatch, shift, status):
    rng = np.random.default_rng(0)
    fake = tuple(_uci_split(rng, shift) for _ in range(uci.QUICK_SPLITS))
    monkeypatch.setattr(uci, "_splits", lambda seed, full: fake)
    v = run_claim(_claim("uci-large-subnetwork-beats-small-full"), Context())
    assert v.status is status
    if shift:  # every split behind, however far its one outlier pulls its mean
        assert all(d["splits_behind"] == uci.QUICK_SPLITS for d in v.details.values())


def _run(rng: np.random.Generator, difference: float) -> RotationShift:
    """One replication whose Wasserstein subnetwork is ``difference`` nats/digit ahead."""
    angles = (0.0, 30.0, 60.0, 90.0)
    base = rng.normal(-1.0, 0.3, (4, 20))
    ll = {"MAP": base - 1.0, RAND: base, WASS: base + difference + rng.normal(0, 0.05, (4, 20))}
    per_angle = {m: -v.mean(axis=1) for m, v in ll.items()}
    return RotationShift(
        angles,
        per_angle,
        per_angle,
        per_angle,
        {},
        ll,
        {},
        {"Laplace (full)": 1.0, WASS: 0.05},
        1898,
        100,
        20,
    )


@pytest.mark.parametrize(
    ("differences", "status", "replications"),
    [
        ([-0.6] * 16, Status.REFUTED, 8),  # decided at the first look
        ([0.4, -0.9] * 8, Status.INCONCLUSIVE, 16),  # no order at either look
        ([0.5] * 16, Status.CONFIRMED, 8),
    ],
)
def test_rotated_selection_comparison_looks_across_trained_networks(
    monkeypatch, differences, status, replications
):
    rng = np.random.default_rng(1)
    runs = [_run(rng, d + rng.normal(0, 0.1)) for d in differences]
    monkeypatch.setattr(rotated_digits, "_replication", lambda seed, full, i: runs[i])
    v = run_claim(_claim("rotated-digits-wasserstein-beats-random"), Context())
    assert v.status is status and v.details["replications"] == replications


def test_rotated_selection_comparison_refuses_identical_predictives(monkeypatch):
    run = _run(np.random.default_rng(2), 0.0)
    same = RotationShift(
        **{
            **run.__dict__,
            "log_likelihood": {**run.log_likelihood, WASS: run.log_likelihood[RAND]},
        }
    )
    monkeypatch.setattr(rotated_digits, "_replication", lambda seed, full, i: same)
    v = run_claim(_claim("rotated-digits-wasserstein-beats-random"), Context())
    assert v.status is Status.ERROR and "predictive ignores S" in v.evidence_text
