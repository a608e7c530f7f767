"""The studies behind the subnetwork-inference claims: rotations, ECE, SWAG, ResNet-18, the
toy and UCI runs on tiny budgets."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from laplace_lab.networks.models import count_parameters, mlp, resnet18, weight_indices  # noqa: E402
from laplace_lab.networks.swag import swag_diagonal_variance  # noqa: E402
from laplace_lab.numerics.classification_metrics import expected_calibration_error  # noqa: E402
from laplace_lab.paper_checks.subnetwork_inference.experiments.rotated_digits import (  # noqa: E402
    fit_rotation_map,
    rotate_digits,
    rotation_shift,
    score_rotation_shift,
)
from laplace_lab.paper_checks.subnetwork_inference.experiments.toy_regression import (  # noqa: E402
    fit_toy_map,
    score_toy_regression,
    subnetwork_prior_precision,
    toy_regression,
)
from laplace_lab.paper_checks.subnetwork_inference.experiments.uci import (  # noqa: E402
    evaluate_split,
    full_posteriors,
    subnetwork_posteriors,
    train_splits,
)


def test_resnet18_matches_the_published_counts():
    # torchvision's ImageNet ResNet-18 has 11,689,512 parameters; the CIFAR-10 adaptation
    # (3×3 stem, no max-pool, 10 classes) 11,173,962
    assert count_parameters(resnet18(n_outputs=1000, stem="imagenet")) == 11_689_512
    assert count_parameters(resnet18()) == 11_173_962
    no_bn = resnet18(batch_norm=False)
    assert count_parameters(no_bn) == 11_173_962 - 2 * 4800  # 4,800 BN channels


def test_weight_indices_count_the_papers_d():
    model = mlp(1, [50, 50], 1)
    W = weight_indices(model)
    assert W.size == 2600 and count_parameters(model) == 2701
    assert np.all(np.diff(W) > 0) and W.max() < 2701
    assert subnetwork_prior_precision(3.0, 26, 2600) == pytest.approx(0.03)


def test_rotations_and_calibration_error():
    img = np.zeros((1, 64))
    img[0, 8 * 1 + 6] = 1.0  # row 1, column 6
    np.testing.assert_array_equal(rotate_digits(img, 0), img)
    np.testing.assert_allclose(rotate_digits(img, 360), img)
    quarter = rotate_digits(img, 90).reshape(8, 8)
    # a counter-clockwise quarter turn about the centre sends (row 1, col 6) to (row 1, col 1)
    assert np.unravel_index(np.argmax(quarter), (8, 8)) == (1, 1)
    assert np.all(rotate_digits(np.random.default_rng(0).uniform(0, 1, (5, 64)), 33) >= 0)
    # perfectly calibrated: confidence 0.8 and 80% correct in the one occupied bin
    probs = np.tile([0.8, 0.2], (10, 1))
    labels = np.array([0] * 8 + [1] * 2)
    assert expected_calibration_error(probs, labels) == pytest.approx(0.0, abs=1e-12)
    assert expected_calibration_error(probs, np.ones(10, int)) == pytest.approx(0.8)


def test_swag_gives_dead_parameters_zero_variance_and_leaves_the_model():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    rng = np.random.default_rng(1)  # the weights from a seeded stream, not torch's global one
    with torch.no_grad():
        for t in model.parameters():
            t.copy_(torch.as_tensor(rng.uniform(-1.0, 1.0, tuple(t.shape)), dtype=t.dtype))
        model[0].weight[0] = -1.0  # unit 0 is dead on positive inputs
        model[0].bias[0] = -1.0
        model[0].weight[1] = 1.0  # unit 1 is active on every input
        model[0].bias[1] = 0.5
    before = [t.detach().clone() for t in model.parameters()]
    X = np.random.default_rng(0).uniform(0, 1, (40, 3))
    y = X.sum(1)
    var = swag_diagonal_variance(
        model, X, y, likelihood="regression", rng=0, epochs=3, prior_precision=0.0
    )
    assert var.shape == (21,)
    assert np.all(var[[0, 1, 2, 12]] == 0.0)  # unit 0's weights and bias never move
    assert var[16] == 0.0  # its output weight sees a zero activation
    assert np.all(var[[3, 4, 5]] > 0)
    for a, b in zip(before, model.parameters(), strict=True):
        assert torch.equal(a, b)


def test_swag_refuses_a_negative_prior_precision():
    model = torch.nn.Linear(3, 1)
    X = np.zeros((4, 3))
    with pytest.raises(ValueError, match="prior_precision must be >= 0; got prior_precision=-1"):
        swag_diagonal_variance(
            model, X, X.sum(1), likelihood="regression", rng=0, prior_precision=-1.0
        )


def test_toy_regression_small_run():
    r = toy_regression(rng=0, n_train=40, n_test=31, epochs=60)
    assert r.weights["Full Cov"] == 2600 and r.weights["Wass 1%"] == 26
    assert np.all(r.std["Full Cov"] > 0)
    # every dead weight sits exactly at the prior variance 1/λ under both rules
    np.testing.assert_allclose(r.diagonal_variance[r.dead_mask], 1 / 3.0, rtol=1e-12)
    assert np.all(r.marginal_variance <= 1 / 3.0 * (1 + 1e-9))
    assert r.dead == int(r.dead_mask.sum())


def test_uci_split_nested_subnetworks_with_a_fixed_prior_never_lose_variance():
    """Also: the evaluation in two stages (the second recomputes the largest network's
    Jacobians) gives the very numbers of the evaluation that passes them on."""
    (trained,) = train_splits("boston", rngs=[0], epochs=20)
    r = evaluate_split(trained)
    assert r.weights == {"1x50": 700, "1x100": 1400, "2x50": 3200, "2x100": 11400}
    assert r.decreases_fixed == 0.0
    assert set(r.ll_subnetwork) == {"1x50", "1x100", "2x50"}
    assert all(v.shape == r.ll_full["1x50"].shape for v in r.ll_subnetwork.values())
    staged = subnetwork_posteriors(full_posteriors(trained))
    assert r.weights == staged.weights and r.prior_precision == staged.prior_precision
    assert (r.decreases, r.decreases_fixed) == (staged.decreases, staged.decreases_fixed)
    assert r.dead_in_subnetwork == staged.dead_in_subnetwork
    for field in ("ll_map", "ll_full", "ll_subnetwork", "ll_subnetwork_fixed"):
        a, b = getattr(r, field), getattr(staged, field)
        assert a.keys() == b.keys()
        for arch in a:
            np.testing.assert_array_equal(a[arch], b[arch])


def test_toy_regression_random_tie_break_selects_among_the_largest_variances():
    """The seeded random tie-break picks weights of largest marginal variance (the same rule
    on permuted weights), and draws nothing the other methods use."""
    plain = toy_regression(rng=0, n_train=40, n_test=31, epochs=60)
    tied = toy_regression(
        rng=0, n_train=40, n_test=31, epochs=60, tie_break=np.random.default_rng(5)
    )
    assert plain.std_random_ties == {} and set(tied.std_random_ties) == {
        "Wass 50%",
        "Wass 3%",
        "Wass 1%",
    }
    for m, S in tied.subsets_random_ties.items():
        var = tied.marginal_variance
        assert S.size == tied.weights[m] and np.unique(S).size == S.size
        assert var[S].min() >= np.delete(var, S).max()
    for m in plain.std:
        np.testing.assert_array_equal(plain.std[m], tied.std[m])


def _alone(model, X, y, Xv, yv, epochs, lr=1e-2, alpha=1.0):
    """The reference: one network, plain full-batch Adam on mean ½(y − f)² + α‖θ‖²/(2N),
    its state of least validation MSE (checked every 10 epochs) kept."""
    import copy

    X, y, Xv, yv = (torch.as_tensor(a, dtype=torch.float32) for a in (X, y, Xv, yv))
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    best, state = np.inf, None
    for epoch in range(epochs):
        opt.zero_grad()
        loss = 0.5 * torch.mean((model(X)[:, 0] - y) ** 2)
        loss = loss + alpha / (2 * len(y)) * sum((t * t).sum() for t in model.parameters())
        loss.backward()
        opt.step()
        if epoch % 10 == 9 or epoch == epochs - 1:
            with torch.no_grad():
                mse = float(torch.mean((model(Xv)[:, 0] - yv) ** 2))
            if mse < best:
                best, state = mse, copy.deepcopy(model.state_dict())
    model.load_state_dict(state)
    return model.double()


def test_uci_networks_trained_together_are_each_trained_alone():
    """Networks of one architecture on their own splits train as one stacked ensemble: each
    is its own full-batch Adam with its own early stopping (the reference above)."""
    import copy

    from laplace_lab.paper_checks.subnetwork_inference.experiments.uci import _fit

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    models = [mlp(3, [8], 1) for _ in range(3)]
    data = [
        (
            rng.normal(size=(30, 3)),
            rng.normal(size=30),
            rng.normal(size=(10, 3)),
            rng.normal(size=10),
        )
        for _ in models
    ]
    alone = [_alone(copy.deepcopy(m), *d, epochs=45) for m, d in zip(models, data, strict=True)]
    together = _fit(models, *zip(*data, strict=True), epochs=45)
    for a, b in zip(together, alone, strict=True):
        for p, q in zip(a.parameters(), b.parameters(), strict=True):
            assert torch.allclose(p, q, rtol=0, atol=1e-5)
    assert not torch.allclose(together[0][0].weight, together[1][0].weight)


def test_the_subnetwork_stage_takes_both_jacobians_or_neither():
    with pytest.raises(ValueError, match=r"J and Gt must be given together.*got J given, Gt None"):
        subnetwork_posteriors(object(), J=np.ones((3, 2)))


def _assert_same_fields(a, b):
    """Every field of two result dataclasses equal, arrays and dicts of arrays elementwise."""
    for field in a.__dataclass_fields__:
        x, y = getattr(a, field), getattr(b, field)
        if isinstance(x, dict):
            assert x.keys() == y.keys(), field
            for key in x:
                np.testing.assert_array_equal(x[key], y[key], err_msg=f"{field}[{key}]")
        else:
            np.testing.assert_array_equal(x, y, err_msg=field)


def test_a_rotation_fit_scores_again_to_the_same_numbers():
    """The MAP and SWAG of a rotation run, scored twice (the random subnetwork drawn from a
    copy of its generator each time), give the very numbers of the run in one piece."""
    cfg = {"n_ggn": 20, "n_test": 15, "epochs": 1}
    whole = rotation_shift(rng=3, angles=(0, 45), subnetwork_size=10, **cfg)
    fit = fit_rotation_map(rng=3, **cfg)
    first = score_rotation_shift(fit, angles=(0, 45), subnetwork_size=10)
    again = score_rotation_shift(fit, angles=(0, 45), subnetwork_size=10)
    _assert_same_fields(whole, first)
    _assert_same_fields(whole, again)
    assert not np.array_equal(
        whole.log_likelihood["Subnetwork (random)"], whole.log_likelihood["MAP"]
    )
    with pytest.raises(TypeError, match="fit must be a RotationFit; got dict"):
        score_rotation_shift({}, angles=(0,))


def test_a_toy_fit_scores_again_to_the_same_numbers():
    """The toy's data and MAP, scored twice (the random subnetworks drawn from a copy of
    their generator each time), give the very numbers of the run in one piece."""
    whole = toy_regression(rng=4, n_train=40, n_test=31, epochs=60)
    fit = fit_toy_map(rng=4, n_train=40, n_test=31, epochs=60)
    for _ in range(2):
        _assert_same_fields(whole, score_toy_regression(fit))
    with pytest.raises(TypeError, match="fit must be a ToyFit; got int"):
        score_toy_regression(0)
