"""Verdict logic and self-checks of the subnetwork-laplace-optimality claims, on hand-built
inputs: the relative reading of App. A.1, the Greedy-Laplace and Wheel self-checks, and the
power every claim must carry."""

from __future__ import annotations

import numpy as np
import pytest

from laplace_lab.paper_checks.subnetwork_laplace_optimality._greedy import (
    require_literal_greedy,
)
from laplace_lab.paper_checks.subnetwork_laplace_optimality._mutants import (
    GREEDY_TOP_K_DIAGONAL,
    GREEDY_WITHOUT_SCHUR,
)
from laplace_lab.paper_checks.subnetwork_laplace_optimality._wheel import (
    WHEEL_PAYS_INNER_DISK,
    require_wheel_geometry,
)
from laplace_lab.paper_checks.subnetwork_laplace_optimality.ipv_empirical import (
    relative_reading,
)
from laplace_lab.paper_checks.verification import ImplementationError
from laplace_lab.paper_checks.verification.mutants import applied

NS = [30, 100, 300, 1000, 3000]


def test_relative_error_vanishing_like_the_wishart_theory_passes():
    # (k+1)/N + √(2/(kN)) for k = 2: 0.36 at N = 30 down to 0.019 at N = 3,000
    series = [3 / n + np.sqrt(1 / n) for n in NS]
    ok, fits = relative_reading(NS, {"k=2": series})
    assert ok
    assert fits["k=2"]["slope"] == pytest.approx(-0.6, abs=0.1)


@pytest.mark.parametrize(
    "series",
    [
        [1.0] * 5,  # E PV replaced by 0: |0 − IPV| / IPV = 1 at every N
        [2.0, 2.01, 2.0, 1.99, 2.0],  # E PV tripled
        [0.9, 0.6, 0.4, 0.3, 0.2],  # vanishing, but still 20% off at the largest N
    ],
)
def test_relative_error_that_does_not_vanish_or_stays_large_fails(series):
    ok, fits = relative_reading(NS, {"k=2": [3 / n + np.sqrt(1 / n) for n in NS], "bad": series})
    assert not ok
    assert fits["k=2"]["passes"] and not fits["bad"]["passes"]


@pytest.mark.parametrize("likelihood", ["regression", "binary", "multiclass"])
@pytest.mark.parametrize("candidates", ["2k", "paper"])
def test_greedy_self_check_passes_on_the_package_and_catches_wrong_greedy(likelihood, candidates):
    text = require_literal_greedy(
        np.random.default_rng(1), likelihood=likelihood, candidates=candidates
    )
    assert "equals the literal Algorithm 2" in text
    for mutant in (GREEDY_WITHOUT_SCHUR, GREEDY_TOP_K_DIAGONAL):
        with applied(mutant), pytest.raises(ImplementationError, match="literal Algorithm 2"):
            require_literal_greedy(
                np.random.default_rng(1), likelihood=likelihood, candidates=candidates
            )


@pytest.mark.parametrize("delta", [0.95, 0.9])
def test_wheel_geometry_check(delta):
    assert f"δ = {delta}" in require_wheel_geometry(delta, np.random.default_rng(2))
    with applied(WHEEL_PAYS_INNER_DISK), pytest.raises(ImplementationError, match="1 − δ²"):
        require_wheel_geometry(delta, np.random.default_rng(2))


@pytest.mark.parametrize("seed", range(5))
def test_theorem3_twins_lie_just_outside_one_premise_each(seed):
    """The dominance twin breaks ε-dominance by 2% in its fullest row and keeps the diagonal;
    the ratio twin misses (1 + ε)/(1 − ε) by 1% in both parts and stays ε-dominant."""
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.theorems import _outside_twins
    from laplace_lab.theory import is_diagonally_dominant, random_diagonally_dominant

    rng = np.random.default_rng(seed)
    p, k, eps = 9, 3, 0.4
    bound = (1 + eps) / (1 - eps)
    diag = np.concatenate([1.5 * bound * rng.uniform(1, 2, k), rng.uniform(0.3, 1, p - k)])
    Lam = random_diagonally_dominant(p, eps, diag=rng.permutation(diag), fill=0.999, rng=rng)
    dominance, ratio = _outside_twins(Lam, k, eps)
    assert is_diagonally_dominant(Lam, eps)
    assert not is_diagonally_dominant(dominance, eps)
    np.testing.assert_array_equal(np.diag(dominance), np.diag(Lam))
    fullest = np.max((np.abs(dominance).sum(1) - np.diag(dominance)) / (eps * np.diag(Lam)))
    assert fullest == pytest.approx(1.02, rel=1e-12)
    assert np.all(np.linalg.eigvalsh(dominance) > 0)
    assert is_diagonally_dominant(ratio, eps)
    d = np.sort(np.diag(ratio))[::-1]
    assert d[k - 1] / d[k] == pytest.approx(0.99 * bound, rel=1e-12)
    assert d[k - 1] / d[p - k] == pytest.approx(0.99 * bound, rel=1e-12)


@pytest.fixture(scope="module")
def audited_network():
    import torch

    from laplace_lab.networks.models import mlp

    torch.manual_seed(0)
    model = mlp(3, [8], 1).double().eval()
    rng = np.random.default_rng(1)
    return model, rng.standard_normal((30, 3)), rng.standard_normal((6, 3))


def _audit(model, X, Xt, *, task: str, noise_var: float) -> dict[str, float]:
    """The Experiment-1 kernel audit of ``model`` at α = 2.5 with the run's own GGN."""
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.experiment1 import (
        _ggn,
    )
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.kernel_audit import (
        audit_kernels,
    )

    return audit_kernels(
        model,
        X,
        Xt,
        task=task,
        noise_var=noise_var,
        prior_precision=2.5,
        make_ggn=_ggn,
        rng=np.random.default_rng(0),
    )


def test_kernel_audit_passes_on_the_package_and_fails_on_a_shared_wrong_variance(
    audited_network,
):
    """Every Experiment-1 kernel agrees with the dense oracle (ratios ≤ 1, and far below);
    the variances halved alike — invisible to every ordering — fail the audit."""
    from laplace_lab.paper_checks.subnetwork_laplace_optimality._mutants import (
        SCORES_WITHOUT_NOISE,
        SHARED_VARIANCES_HALVED,
    )

    model, X, Xt = audited_network

    def audit():
        return _audit(model, X, Xt, task="regression", noise_var=0.3)

    ratios = audit()
    assert set(ratios) == {
        "scores",
        "full variance",
        "sub-network variance",
        "nested prefixes",
        "W2",
    }
    assert max(ratios.values()) < 0.1, ratios
    with applied(SHARED_VARIANCES_HALVED):
        wrong = audit()
    for name in ("full variance", "sub-network variance", "nested prefixes"):
        assert wrong[name] > 1e3, wrong
    with applied(SCORES_WITHOUT_NOISE):
        assert audit()["scores"] > 1e3


def test_kernel_audit_oracle_side_is_untouched_by_the_kernel_mutants(audited_network):
    """The oracle's side of the audit (the reference the mutants of our kernels reuse) is the
    same under those mutants, and the audit given it returns exactly the ratios of the audit
    that draws it; both mutants still fail the audit with the reused reference."""
    from laplace_lab.paper_checks.subnetwork_laplace_optimality._mutants import (
        SCORES_WITHOUT_NOISE,
        SHARED_VARIANCES_HALVED,
    )
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.experiment1 import (
        _ggn,
    )
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.kernel_audit import (
        audit_kernels,
        audit_reference,
    )

    model, X, Xt = audited_network
    args = {"task": "regression", "noise_var": 0.3, "prior_precision": 2.5}

    def reference():
        return audit_reference(model, X, Xt, rng=np.random.default_rng(0), **args)

    ref = reference()
    fields = ("subset", "order", "scores", "full", "sub", "prefix", "sub_tolerance")
    for mutant in (SHARED_VARIANCES_HALVED, SCORES_WITHOUT_NOISE):
        with applied(mutant):
            again = reference()
        assert all(np.array_equal(getattr(ref, f), getattr(again, f)) for f in fields)
    assert ref.p == 3 * 8 + 8 + 8 + 1 and ref.subset.size == 41 and ref.small == 12
    drawn = _audit(model, X, Xt, task="regression", noise_var=0.3)
    given = audit_kernels(model, X, Xt, make_ggn=_ggn, reference=ref, **args)
    assert given == drawn
    with applied(SHARED_VARIANCES_HALVED):
        wrong = audit_kernels(model, X, Xt, make_ggn=_ggn, reference=ref, **args)
    assert wrong["full variance"] > 1e3
    with applied(SCORES_WITHOUT_NOISE):
        assert audit_kernels(model, X, Xt, make_ggn=_ggn, reference=ref, **args)["scores"] > 1e3
    with pytest.raises(ValueError, match="rng"):
        audit_kernels(model, X, Xt, make_ggn=_ggn, **args)


def test_kernel_audit_fails_on_a_softmax_hessian_root_without_its_square_root(monkeypatch):
    """Setup C's GGN (App. C.5): H_n = W_n W_nᵀ with W_n = U √λ. A root that drops the square
    root (W_n = U λ, so W_n W_nᵀ = H_n², every curve moved alike) passes every ordering but
    not the audit against the dense oracle's own H_n."""
    import torch

    from laplace_lab.networks.models import mlp
    from laplace_lab.numerics import ggn as ggn_module

    torch.manual_seed(0)
    model = mlp(3, [8], 4).double().eval()
    rng = np.random.default_rng(2)
    X, Xt = 2.0 * rng.standard_normal((30, 3)), rng.standard_normal((6, 3))

    def audit():
        return _audit(model, X, Xt, task="multiclass", noise_var=1.0)

    assert max(audit().values()) < 0.1
    real_eigh = ggn_module.eigh

    def eigh_squared(H):
        lam, U = real_eigh(H)
        return lam**2, U  # √(λ²) = λ: the root of H² instead of H

    monkeypatch.setattr(ggn_module, "eigh", eigh_squared)
    wrong = audit()
    assert wrong["full variance"] > 10 and wrong["sub-network variance"] > 10, wrong


def test_an_exact_zero_variance_passes_the_audit_and_a_wrong_one_fails_it():
    """A sub-network of dead ReLU weights has variance exactly 0 and tolerance 0 at a test
    point (seen on Boston at base seed 7): 0 against 0 is no error, anything else infinite."""
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.kernel_audit import (
        _to_tolerance,
    )

    want, tol = np.array([0.0, 2.0]), np.array([0.0, 1e-12])
    assert _to_tolerance([0.0, 2.0 + 5e-13], want, tol) == pytest.approx(0.5, rel=1e-3)
    assert _to_tolerance([1e-300, 2.0], want, tol) == np.inf
