"""The digits' and toys' hot loops give the numbers of their plain formulations, bit for bit.

The Monte Carlo probabilities of a Gaussian predictive are checked against the average of
``scipy.special.softmax`` (or ``expit``) over the same draws; the JVP function that the
surrogate's training builds once is checked against the dense Jacobian times the probes, and
against :func:`model_jvp` on several batches.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.special import expit, softmax

from laplace_lab.networks.models import mlp
from laplace_lab.networks.training import build_seeded
from laplace_lab.numerics import GaussianPredictive, draw_probes, model_jvp, per_sample_jacobian
from laplace_lab.numerics.surrogate_kernel import _jvp_function


def _reference(mean: np.ndarray, cov: np.ndarray, samples: int, seed: int) -> np.ndarray:
    """E[softmax(f)] (E[σ(f)] for one logit) over draws f = μ + L ε, L from eigh, in blocks of
    256 draws: the plain formulation."""
    lam, U = np.linalg.eigh(cov)
    L = U * np.sqrt(np.clip(lam, 0.0, None))[..., None, :]
    gen, out = np.random.default_rng(seed), np.zeros_like(mean)
    for a in range(0, samples, 256):
        s = min(256, samples - a)
        f = mean[None] + np.einsum("mab,smb->sma", L, gen.standard_normal((s, *mean.shape)))
        out += (expit(f) if mean.shape[1] == 1 else softmax(f, axis=-1)).sum(axis=0)
    return out / samples


@pytest.mark.parametrize(("C", "likelihood"), [(10, "multiclass"), (1, "binary")])
def test_monte_carlo_probabilities_are_the_plain_average_bit_for_bit(C, likelihood):
    rng = np.random.default_rng(3)
    M = 37
    A = rng.standard_normal((M, C, C))
    cov = A @ A.transpose(0, 2, 1) / C
    mean = 3.0 * rng.standard_normal((M, C))
    pred = GaussianPredictive(mean, cov, likelihood)
    p = pred.probabilities(link="mc", samples=600, rng=np.random.default_rng(7))
    assert np.array_equal(p, _reference(mean, cov, 600, 7))
    if C > 1:
        np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-12)


@pytest.mark.parametrize("make", ["mlp", "cnn"])
def test_the_jvp_function_built_once_is_functional_calls_bit_for_bit_on_every_batch(make):
    import copy

    from laplace_lab.numerics.surrogate_kernel import _plain_sequential

    if make == "cnn":
        model, d = _digits_like_cnn(), 64
    else:
        model = build_seeded(
            lambda: mlp(3, [6, 5], 4, activation="tanh"), rng=0, dtype=torch.float64
        ).eval()
        d = 3
    # the same model through functional_call: a no-op pre-hook keeps it off the fast path
    slow = copy.deepcopy(model)
    slow.register_forward_pre_hook(lambda module, args: None)
    assert _plain_sequential(model) is not None and _plain_sequential(slow) is None
    P = sum(t.numel() for t in model.parameters())
    jvp, reference = _jvp_function(model), _jvp_function(slow)
    rng = np.random.default_rng(1)
    for step in range(3):
        X = torch.as_tensor(rng.standard_normal((5 + step, d)))
        V = draw_probes(4, P, rng=step, dtype=torch.float64)
        Z = jvp(X, V)
        assert torch.equal(Z, reference(X, V))
        assert torch.equal(Z, model_jvp(model, X, V))
        J = per_sample_jacobian(model, X)  # (n, C, P), dense reference
        np.testing.assert_allclose(Z, torch.einsum("ncp,sp->snc", J, V), rtol=1e-12)
    with pytest.raises(ValueError, match="V must have shape"):
        jvp(X, V[:, 1:])


def _digits_like_cnn():
    from laplace_lab.networks.models import digits_cnn

    return build_seeded(lambda: digits_cnn(channels=(2, 3)), rng=4, dtype=torch.float64).eval()


@pytest.mark.parametrize("make", ["mlp", "cnn"])
def test_the_plain_sequential_forward_is_the_modules_forward_bit_for_bit(make):
    from torch.func import functional_call

    from laplace_lab.numerics.surrogate_kernel import _plain_sequential

    rng = np.random.default_rng(5)
    if make == "cnn":
        model, X = _digits_like_cnn(), torch.as_tensor(rng.standard_normal((6, 64)))
    else:
        model = build_seeded(
            lambda: mlp(3, [6, 5], 4, activation="tanh"), rng=0, dtype=torch.float64
        ).eval()
        X = torch.as_tensor(rng.standard_normal((6, 3)))
    plain = _plain_sequential(model)
    assert plain is not None
    prm = {n: t.detach() * 1.5 for n, t in model.named_parameters()}  # not the module's own
    assert torch.equal(plain(prm, X), functional_call(model, prm, (X,)))


def test_a_sequential_with_a_hook_or_another_layer_has_no_plain_forward_and_the_same_jvps():
    from laplace_lab.numerics.surrogate_kernel import _plain_sequential

    reflect = build_seeded(
        lambda: torch.nn.Sequential(
            torch.nn.Unflatten(1, (1, 4, 4)),
            torch.nn.Conv2d(1, 2, 3, padding=1, padding_mode="reflect"),
            torch.nn.Flatten(),
            torch.nn.Linear(32, 3),
        ),
        rng=1,
        dtype=torch.float64,
    )
    hooked = _digits_like_cnn()
    hooked[-1].register_forward_hook(lambda module, args, out: 2.0 * out)
    patched = _digits_like_cnn()
    last = patched[-1]
    patched[-1].forward = lambda x: 2.0 * torch.nn.functional.linear(x, last.weight, last.bias)
    assert _plain_sequential(patched) is None  # a forward set on the instance
    normed = build_seeded(
        lambda: torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4)),
        rng=2,
        dtype=torch.float64,
    ).eval()
    rng = np.random.default_rng(6)
    for model, d in ((reflect, 16), (hooked, 64), (normed, 3)):
        assert _plain_sequential(model) is None
        X = torch.as_tensor(rng.standard_normal((5, d)))
        P = sum(t.numel() for t in model.parameters())
        V = draw_probes(3, P, rng=0, dtype=torch.float64)
        J = per_sample_jacobian(model, X)
        np.testing.assert_allclose(
            _jvp_function(model)(X, V), torch.einsum("ncp,sp->snc", J, V), rtol=1e-10
        )


def test_tied_weights_keep_the_modules_forward():
    def tied():
        a, b = torch.nn.Linear(3, 3), torch.nn.Linear(3, 3)
        b.weight = a.weight
        return torch.nn.Sequential(a, torch.nn.Tanh(), b)

    model = build_seeded(tied, rng=3, dtype=torch.float64).eval()
    X = torch.as_tensor(np.random.default_rng(8).standard_normal((4, 3)))
    P = sum(t.numel() for t in model.parameters())  # the shared weight once: 9 + 3 + 3
    assert P == 15
    V = draw_probes(3, P, rng=0, dtype=torch.float64)
    J = per_sample_jacobian(model, X)
    np.testing.assert_allclose(
        _jvp_function(model)(X, V), torch.einsum("ncp,sp->snc", J, V), rtol=1e-10
    )
