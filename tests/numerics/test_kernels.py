"""Covariance functions against scipy distances, in every input dimension and dtype."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from laplace_lab.numerics.kernels import RBF, KernelGram, Matern12


@pytest.mark.parametrize("d", [3, 16, 17, 784])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gram_matches_exact_distances_on_both_sides_of_the_expansion_threshold(d, dtype):
    """Above 16 inputs the squared distance is expanded; in float32 the plain expansion lost
    ~1e-2 of Matérn-½'s value at d = 784 (and its diagonal was 0.985, not 1)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(40, d)).astype(dtype)
    Y = rng.uniform(size=(30, d)).astype(dtype)
    r = cdist(X.astype(np.float64), Y.astype(np.float64))
    tol = 20 * np.finfo(dtype).eps
    np.testing.assert_allclose(Matern12()(X, Y), np.exp(-r), rtol=0, atol=tol)
    np.testing.assert_allclose(
        RBF(2.0, 3.0)(X, Y), 2.0 * np.exp(-0.5 * (r / 3.0) ** 2), atol=2 * tol
    )
    gram = KernelGram(Matern12(), X)
    np.testing.assert_allclose(np.diagonal(gram.dense()), gram.diagonal(), rtol=0, atol=tol)
