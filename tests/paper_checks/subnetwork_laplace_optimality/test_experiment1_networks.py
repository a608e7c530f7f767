"""End-to-end Experiment 1 on a tiny configuration: invariants, dense cross-checks, seeds."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from laplace_lab._random import keyed_seed

torch = pytest.importorskip("torch")

from laplace_lab.networks.training import adam_recipe  # noqa: E402
from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.experiment1 import (  # noqa: E402
    ExperimentConfig,
    run_experiment,
    run_seed,
)

P_DIABETES_2X50 = 50 * 10 + 2651


def _tiny(**changes):
    base = dict(
        dataset="diabetes",
        model="mlp_2x50",
        n_train=40,
        n_test=15,
        ks=(5, 40, 300, P_DIABETES_2X50),
        methods=("gradient_laplace", "greedy_laplace", "subnet_diagonal", "last_k", "random"),
        train=adam_recipe(epochs=4, batch_size=20, lr=1e-2),
        ensemble_size=2,
        coverage_target="y",
    )
    base.update(changes)
    return ExperimentConfig(**base)


def test_end_to_end_invariants_and_references():
    res = run_seed(_tiny(), rng=0)
    assert res.p == P_DIABETES_2X50 and res.ks[-1] == res.p
    for name, w2 in res.w2.items():
        # k = p keeps every parameter: the surrogate is the full Laplace, W2 = 0
        assert w2[-1] == pytest.approx(0.0, abs=1e-7), name
        assert res.coverage[name][-1] == res.reference["full_laplace"]["coverage"]
        assert np.all(w2 >= 0)
    # nested prefixes: sub-network variance grows with k (Theorem 1), so W2 shrinks
    for name in ("gradient_laplace", "subnet_diagonal", "last_k", "random"):
        assert np.all(np.diff(res.w2[name]) <= 1e-12), name
    assert res.reference["full_laplace"]["w2"] == 0.0
    assert res.reference["neural_linear"]["k"] == 51
    assert {"kfac_laplace", "deep_ensemble"} <= set(res.reference)
    assert res.noise_var >= 1e-3
    assert {"training", "jacobians", "ggn", "greedy_laplace"} <= set(res.timings)


def test_seeds_reproducible_and_aggregated(capfd):
    cfg = _tiny(ks=(5, 40), methods=("gradient_laplace", "random"), ensemble_size=0, kfac=False)
    a = run_experiment(cfg, 2, seed=3)
    assert "Experiment 1 (diabetes, mlp_2x50): 100%|" in capfd.readouterr().err
    quiet = run_experiment(cfg, 1, seed=3, progress=False)
    assert capfd.readouterr().err == ""
    np.testing.assert_array_equal(quiet.seeds[0].w2["random"], a.seeds[0].w2["random"])
    b = run_seed(cfg, rng=keyed_seed("subnet-experiment", 1, seed=3))
    np.testing.assert_array_equal(a.seeds[1].w2["random"], b.w2["random"])
    w = np.array([s.w2["gradient_laplace"] for s in a.seeds])
    np.testing.assert_allclose(a.w2_mean["gradient_laplace"], w.mean(0))
    np.testing.assert_allclose(a.w2_se["gradient_laplace"], w.std(0, ddof=1) / np.sqrt(2))
    assert "gradient_laplace" in a.table()


def test_config_validation():
    with pytest.raises(ValueError, match="model"):
        ExperimentConfig(model="resnet1000")
    with pytest.raises(ValueError, match="methods"):
        ExperimentConfig(methods=("oracle",))
    with pytest.raises(ValueError, match="ks"):
        ExperimentConfig(ks=(10, 5))
    with pytest.raises(ValueError, match="coverage_target"):
        ExperimentConfig(coverage_target="labels")
    with pytest.raises(ValueError, match="replications"):
        run_experiment(_tiny(), 0)


def test_catalog_study_run_one_flattens_the_seed_result():
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.studies import network_subnet_w2
    from laplace_lab.studies.registry import studies

    assert "network-subnet-w2" in set(studies())
    params = {"dataset": "diabetes", "model": "mlp_2x50", "n_train": 40}
    out = network_subnet_w2.run_one(params, rng=np.random.default_rng(0))
    for m in ("gradient_laplace", "greedy_laplace", "subnet_diagonal", "last_k", "random"):
        assert out[f"w2_{m}_k1000"] <= out[f"w2_{m}_k50"] + 1e-12
        assert 0.0 <= out[f"coverage_{m}_k50"] <= 1.0
    assert out["w2_full_laplace"] == 0.0
    assert {"w2_kfac_laplace", "w2_deep_ensemble", "w2_neural_linear"} <= set(out)


def test_setup_d_options_noise_from_test_split_and_test_fraction(monkeypatch):
    import laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.experiment1 as se

    seen = []
    original = se.noise_variance

    def spy(model, X, y, **kw):
        seen.append(X.shape[0])
        return original(model, X, y, **kw)

    monkeypatch.setattr(se, "noise_variance", spy)
    cfg = _tiny(
        n_train=None,
        n_test=None,
        test_fraction=0.1,
        ks=(5, 40),
        methods=("gradient_laplace",),
        ensemble_size=0,
        kfac=False,
        neural_linear=False,
    )
    a = run_seed(cfg, rng=0)
    b = run_seed(replace(cfg, noise_from="test"), rng=0)
    # diabetes: 442 rows, 90/10 split → 44 test rows, 398 training rows (App. C.6)
    assert seen == [398, 44]
    assert a.noise_var != b.noise_var  # same MAP (same seed), different residuals


def test_blas_pool_bounded_inside_a_seed_and_restored(monkeypatch):
    import threadpoolctl

    import laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.experiment1 as se

    inside = []
    monkeypatch.setattr(
        se,
        "_run_seed",
        lambda config, streams, audit: inside.append(
            [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]
        ),
    )
    before = [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]
    run_seed(_tiny(blas_threads=1), rng=0)
    assert inside[0] and set(inside[0]) == {1}
    after = [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]
    assert after == before


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("noise_from", "holdout", ValueError),
        ("blas_threads", 0, ValueError),
        ("blas_threads", True, TypeError),
        ("torch_threads", 0, ValueError),
    ],
)
def test_setup_d_config_validation(field, value, error):
    with pytest.raises(error, match=field):
        _tiny(**{field: value})


def test_a_config_given_lists_is_the_config_of_tuples():
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.experiment1 import (
        ExperimentConfig,
    )

    listed = ExperimentConfig(ks=[50, 100], methods=["random"])
    assert listed == ExperimentConfig(ks=(50, 100), methods=("random",))
    assert hash(listed) == hash(ExperimentConfig(ks=(50, 100), methods=("random",)))
