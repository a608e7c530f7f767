"""Hypothesis strategies for the sub-network Laplace theory: PSD Λ, C_PI, ε-dominant, subsets."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from laplace_lab.theory import cpi_matrix, random_diagonally_dominant, random_psd

seeds = st.integers(0, 2**32 - 1)
sample_sizes = st.floats(1.0, 1e6)
noise_vars = st.floats(0.01, 10.0)


@st.composite
def psd_matrices(draw, min_p: int = 1, max_p: int = 10):
    """PSD Λ: full-rank, rank-deficient (Λ = GGᵀ with few columns), or with a set
    condition number up to 1e10."""
    p = draw(st.integers(min_p, max_p))
    kind = draw(st.sampled_from(["factor", "conditioned"]))
    if kind == "factor":
        r = draw(st.integers(1, p + 2))
        G = draw(hnp.arrays(np.float64, (p, r), elements=st.floats(-3, 3, width=64)))
        G = G + draw(st.floats(0.0, 1.0)) * (np.arange(p * r).reshape(p, r) % 3 == 0)
        return G @ G.T
    rank = draw(st.integers(1, p))
    cond = 10.0 ** draw(st.integers(0, 10))
    return random_psd(p, rank=rank, cond=cond, rng=np.random.default_rng(draw(seeds)))


@st.composite
def nested_subsets(draw, p: int):
    """(S, S′) with S ⊆ S′ ⊆ {0..p-1}, in random orders."""
    perm = draw(st.permutations(range(p)))
    size_sup = draw(st.integers(0, p))
    size = draw(st.integers(0, size_sup))
    sup = list(perm[:size_sup])
    sub = draw(st.permutations(sup))[:size]
    return np.array(sub, dtype=np.int64), np.array(sup, dtype=np.int64)


def prior_vectors(p: int):
    """Positive prior precision vectors V = diag(v)."""
    return hnp.arrays(np.float64, (p,), elements=st.floats(0.1, 10.0))


@st.composite
def cpi_matrices(draw, min_p: int = 2, max_p: int = 12):
    """Λ = diag(d) + aI + b11ᵀ ∈ C_PI, with ties in d and b < 0 (a + p·b ≥ 0) allowed."""
    p = draw(st.integers(min_p, max_p))
    levels = draw(st.lists(st.floats(0.05, 3.0), min_size=1, max_size=p))
    d = np.array(draw(st.lists(st.sampled_from(levels), min_size=p, max_size=p)))
    a = draw(st.floats(0.0, 2.0))
    b = draw(st.floats(-a / p, 2.0)) if a > 0 else draw(st.floats(0.0, 2.0))
    return cpi_matrix(d, a, b)


@st.composite
def dominant_with_ratio(draw, min_p: int = 2, max_p: int = 10):
    """(Λ, k, ε): Λ ε-diagonally dominant whose diagonal meets both ratio conditions of
    Theorem 3: a geometric diagonal with step above (1+ε)/(1−ε) around position k."""
    p = draw(st.integers(min_p, max_p))
    k = draw(st.integers(1, p // 2 if p >= 2 else 1))
    eps = draw(st.floats(0.01, 0.6))
    bound = (1 + eps) / (1 - eps)
    gap = bound * draw(st.floats(1.01, 3.0))
    diag = np.ones(p)
    diag[:k] = gap * draw(hnp.arrays(np.float64, (k,), elements=st.floats(1.0, 2.0)))
    diag[k:] = draw(hnp.arrays(np.float64, (p - k,), elements=st.floats(0.5, 1.0)))
    rng = np.random.default_rng(draw(seeds))
    perm = rng.permutation(p)
    fill = draw(st.floats(0.05, 0.99))
    return random_diagonally_dominant(p, eps, diag=diag[perm], fill=fill, rng=rng), k, eps


@st.composite
def psd_with_dead_parameters(draw, max_p: int = 9):
    """Λ with exact zero rows/columns ("dead" parameters, e.g. inactive ReLU units) around a
    PSD block of condition ≤ 1e4: Λ_SS is exactly singular whenever S holds a dead index."""
    p = draw(st.integers(2, max_p))
    live = draw(st.integers(1, p))
    rng = np.random.default_rng(draw(seeds))
    block = random_psd(live, cond=10.0 ** draw(st.integers(0, 4)), rng=rng)
    idx = rng.permutation(p)[:live]
    Lam = np.zeros((p, p))
    Lam[np.ix_(idx, idx)] = block
    return Lam
