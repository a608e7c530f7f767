"""The normal predictives the SSLA claims compare (frozen ``scipy.stats.norm``): the
divergences read their mean and standard deviation exactly as scipy computes them."""

from __future__ import annotations

import importlib

import numpy as np
from scipy import stats

from laplace_lab.theory import kl_divergence, wasserstein1

divergences = importlib.import_module("laplace_lab.theory.divergences")


def _same(a: float, b: float) -> bool:
    return (a == b and np.signbit(a) == np.signbit(b)) or (a != a and b != b)


def test_normal_parameters_are_scipys_mean_and_std_bit_for_bit():
    rng = np.random.default_rng(7)
    dists = [
        stats.norm(rng.standard_normal() * 10 ** rng.uniform(-5, 5), 10 ** rng.uniform(-8, 8))
        for _ in range(300)
    ]
    dists += [
        stats.norm(),
        stats.norm(3, 2),
        stats.norm(-0.0, 1.0),
        stats.norm(scale=5.0),
        stats.norm(loc=np.float32(1.1), scale=np.float32(0.3)),
        stats.norm(np.array(2.0), np.array(0.7)),
        stats.norm(0.0, -1.0),
        stats.norm(np.nan, 1.0),
    ]
    for d in dists:
        got = divergences._normal_params(d)
        want = (float(d.mean()), float(d.std()))
        assert _same(got[0], want[0]) and _same(got[1], want[1]), (d.args, d.kwds, got, want)


def test_normal_divergences_match_their_textbook_closed_forms():
    # KL(N(m1, s1²) ‖ N(m2, s2²)) = log(s2/s1) + (s1² + (m1 − m2)²)/(2 s2²) − ½;
    # W1 of two normals with equal sd is |m1 − m2|
    p, q = stats.norm(1.5, 0.5), stats.norm(-0.5, 2.0)
    kl = np.log(2.0 / 0.5) + (0.25 + 4.0) / 8.0 - 0.5
    np.testing.assert_allclose(kl_divergence(p, q), kl, rtol=1e-14)
    assert wasserstein1(stats.norm(loc=1.0, scale=3.0), stats.norm(4.0, 3.0)) == 3.0
