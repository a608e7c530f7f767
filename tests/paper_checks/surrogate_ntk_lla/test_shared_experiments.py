"""Claims that need the same trained surrogate ask the cache for it in the same words.

A cached experiment is keyed by its arguments bound to its signature (``steps=0`` passed or
left to its default is one result); the calls are checked word for word all the same. The
toy's surrogate and the MAP's and LLAs' Monte Carlo scores of the digits are checked here
with stand-ins for the training, so that no network is trained.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from laplace_lab.paper_checks.surrogate_ntk_lla import _digits, _toy
from laplace_lab.paper_checks.surrogate_ntk_lla import surrogate as module
from laplace_lab.paper_checks.verification.registry import Context


def test_the_full_training_of_the_convergence_arms_is_the_fit_without_context(monkeypatch):
    calls: list[tuple] = []

    def recorder(*args, **kwargs):
        calls.append((args, tuple(sorted(kwargs.items()))))
        return len(calls)

    n = 4  # held-out inputs of the stand-in toy; 3 outputs each
    rng = np.random.default_rng(0)
    monkeypatch.setattr(module, "surrogate", recorder)
    monkeypatch.setattr(module, "toy", lambda seed, r: SimpleNamespace(model=None, X_test=None))
    monkeypatch.setattr(module, "held_out_ntk", lambda seed, r: (np.eye(3 * n), np.ones(3 * n)))
    monkeypatch.setattr(
        module, "learned", lambda fit, X: np.eye(3 * n) + rng.normal(0.0, 0.1, (3 * n, 3 * n))
    )
    module.surrogate_kernel_convergence(Context(full=False, seed=0))
    reps = module.REPLICATES[False]
    convergence = set(calls)
    assert len(convergence) == 3 * reps  # per toy: m = 1, m = M early, m = M full
    calls.clear()
    for r in range(reps):
        module.without_context.fn(0, False, r)
    assert set(calls) <= convergence


def test_the_surrogates_scores_continue_the_monte_carlo_stream_of_the_others(monkeypatch):
    """The MAP's and the LLAs' scores are kept apart from the surrogates' (so that a change to
    the surrogates reuses them); every method's draws still come from one stream per seed, in
    the order of METHODS, as if drawn in one pass."""
    seed = 7
    drawn: dict[str, np.ndarray] = {}

    def scores(method, data, rng):
        drawn[method] = rng.standard_normal(3)
        return method

    methods = {
        ("lla", None): "LLA",
        ("lla", "last_layer"): "LLLA",
        ("scalla", False): "ScaLLA",
        ("scalla", True): "ScaLLA biased",
    }
    monkeypatch.setattr(_digits, "digits_map", lambda s: (None, None))
    monkeypatch.setattr(_digits, "_map_scores", lambda model, data: "MAP")
    monkeypatch.setattr(_digits, "digits_lla", lambda s, subset=None: methods["lla", subset])
    monkeypatch.setattr(_digits, "digits_scalla", lambda s, full, b: methods["scalla", b])
    monkeypatch.setattr(_digits, "_gaussian_scores", scores)
    monkeypatch.setattr(_digits, "digits_base_scores", _digits.digits_base_scores.fn)
    out = _digits.digits_scores.fn(seed, False)
    assert list(out) == list(_digits.METHODS)
    assert all(out[k] == k for k in _digits.METHODS)
    one_pass = _digits.keyed_generator("surrogate-ntk-lla", "digits-mc", seed=seed)
    for name in _digits.METHODS[1:]:
        np.testing.assert_array_equal(drawn[name], one_pass.standard_normal(3))


def _stand_in_toy():
    """A toy of the real layout on an untrained 2 → 4 → 3 tanh MLP (p = 27), and its dense
    Jacobians (N·C, p) per input set, by autograd one output at a time."""
    import torch

    from laplace_lab.networks.models import mlp
    from laplace_lab.networks.training import build_seeded
    from laplace_lab.numerics import LinearizedLaplace

    rng = np.random.default_rng(5)
    X = {
        name: rng.normal(size=(n, 2)).astype(np.float32)
        for name, n in zip(_toy.INPUTS, (6, 4, 5, 3), strict=True)
    }
    model = build_seeded(lambda: mlp(2, [4], 3, activation="tanh"), rng=0).eval()
    lla = LinearizedLaplace.fit(model, X["X_train"], likelihood="multiclass", prior_precision=2.0)
    t = _toy.Toy(
        model, X["X_train"], np.arange(6) % 3, X["X_test"], X["X_context"], X["X_ood"], lla
    )
    params = list(model.parameters())
    jac = {}
    for name, inputs in X.items():
        rows = []
        for x in torch.as_tensor(inputs):
            for c in range(3):
                grads = torch.autograd.grad(model(x[None])[0, c], params)
                rows.append(torch.cat([g.reshape(-1) for g in grads]).double().numpy())
        jac[name] = np.array(rows)
    return t, jac


def test_the_toys_grams_and_exact_variances_are_dense_references_without_any_surrogate(
    monkeypatch,
):
    """What the surrogate mutants reuse (:func:`_toy.toy_ntk`, :func:`_toy.exact_variance`) is
    J Jᵀ and the exact LLA's diag(J Σ Jᵀ), Σ = (Σ_n J_nᵀ Λ_n J_n + α I)⁻¹, Λ = diag(p) − p pᵀ,
    computed with every part of the surrogate's training and features disabled; read-only."""
    import torch

    import laplace_lab.numerics.surrogate_kernel as sk

    t, J = _stand_in_toy()
    monkeypatch.setattr(_toy, "toy", lambda seed, replicate: t)

    def forbidden(*args, **kwargs):
        raise AssertionError("the toy's NTK or exact LLA reached the surrogate")

    for name in ("draw_probes", "kernel_matching_loss", "train_surrogate"):
        monkeypatch.setattr(sk, name, forbidden)
    monkeypatch.setattr(sk.SurrogateFit, "features", forbidden)
    K = _toy.toy_ntk.fn(0, 0, "X_train", "X_context")
    np.testing.assert_allclose(K, J["X_train"] @ J["X_context"].T, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(
        _toy.toy_ntk.fn(0, 0, "X_ood"), J["X_ood"] @ J["X_ood"].T, rtol=1e-5, atol=1e-7
    )
    with torch.no_grad():
        p = torch.softmax(t.model(torch.as_tensor(t.X_train)), 1).double().numpy()
    H = 2.0 * np.eye(J["X_train"].shape[1])
    for n in range(p.shape[0]):
        Jn = J["X_train"][3 * n : 3 * n + 3]
        H += Jn.T @ (np.diag(p[n]) - np.outer(p[n], p[n])) @ Jn
    reference = np.einsum("ip,pq,iq->i", J["X_ood"], np.linalg.inv(H), J["X_ood"])
    v = _toy.exact_variance.fn(0, 0, "X_ood")
    np.testing.assert_allclose(v, reference.reshape(-1, 3), rtol=1e-4)
    assert not K.flags.writeable and not v.flags.writeable
    with pytest.raises(ValueError, match="second"):
        _toy.toy_ntk.fn(0, 0, "X_train", "X_val")
    with pytest.raises(ValueError, match="inputs"):
        _toy.exact_variance.fn(0, 0, "test")
