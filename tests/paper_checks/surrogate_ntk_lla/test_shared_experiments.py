"""Claims that need the same trained surrogate ask the cache for it in the same words.

A cached experiment is keyed by its arguments bound to its signature (``steps=0`` passed or
left to its default is one result); the calls are checked word for word all the same. The
toy's surrogate and the MAP's and LLAs' Monte Carlo scores of the digits are checked here
with stand-ins for the training, so that no network is trained.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from laplace_lab.paper_checks.surrogate_ntk_lla import _digits
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
    monkeypatch.setattr(module, "ntk", lambda model, X: np.eye(3 * n))
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
