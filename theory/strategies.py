"""Hypothesis strategies for property-testing the sub-network Laplace theory and conjectures.

Every strategy builds its object from small integers, so that when a property fails,
Hypothesis shrinks the counterexample to a small matrix one can read and check by hand:
a PSD Λ is G Gᵀ with an integer factor G (shrinking towards fewer rows, fewer columns and
entries of 0 and ±1), a C_PI matrix is diag(d) + a·I + b·11ᵀ with integer d and a, an
ε-dominant matrix has integer entries. Drawing Λ from a random seed instead shrinks only the
seed and ends in an opaque float matrix.

The strategies need Hypothesis, an optional dependency: ``pip install 'laplace-lab[strategies]'``
(the rest of :mod:`laplace_lab.theory` does not import this module).

Strategies (all arguments keyword-only and validated):

- :func:`psd_matrices` — PSD Λ with rank and conditioning controls;
- :func:`cpi_matrices` — Λ ∈ C_PI, with ties in diag(d) and b < 0;
- :func:`dominant_matrices` — ε-diagonally dominant Λ meeting the premises of Theorem 3;
- :func:`subsets`, :func:`supersets`, :func:`nested_subsets` — ordered index subsets;
- :func:`prior_precisions` — positive prior precision vectors V = diag(v);
- :func:`ggn_factors` — Jacobians and logits for the regression, binary and multiclass GGN;
- :func:`conjugate_datasets` — data for the conjugate models (normal–normal,
  Poisson–gamma, Bayesian linear regression);
- :func:`sample_sizes`, :func:`noise_variances` — the scalars N and σ0².

References
----------
.. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
   Results and Methods", arXiv:2605.09075 (2026), §4 (IPV, C_PI, Theorems 1–3) and App. A.
.. [2] J. Rodemann, A. Marquard, T. Augustin, M. Caprio, "Self-Supervised Laplace Approximation
   for Bayesian Uncertainty Quantification", TMLR, arXiv:2605.12208, App. B.1 (conjugate
   models).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from laplace_lab._checks import integer, one_of, positive_float, positive_int, subset

try:
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp
except ImportError as err:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "laplace_lab.theory.strategies needs Hypothesis, an optional dependency: "
        "pip install 'laplace-lab[strategies]' (or pip install hypothesis)"
    ) from err

__all__ = [
    "DominantCase",
    "GGNFactor",
    "conjugate_datasets",
    "cpi_matrices",
    "dominant_matrices",
    "ggn_factors",
    "nested_subsets",
    "noise_variances",
    "prior_precisions",
    "psd_matrices",
    "sample_sizes",
    "subsets",
    "supersets",
]

#: Positive values in the order Hypothesis shrinks them (towards 1).
_POSITIVE_VALUES = (1.0, 2.0, 0.5, 4.0, 0.25, 10.0, 0.1, 100.0, 0.01)


def _full_column_rank(a: np.ndarray) -> bool:
    return bool(np.linalg.matrix_rank(a) == a.shape[1])


def _positive_total(c: np.ndarray) -> bool:
    return bool(c.sum() > 0)


def _range(low: object, high: object, names: tuple[str, str], *, floor: int) -> tuple[int, int]:
    lo = integer(low, names[0], low=floor)
    hi = integer(high, names[1], low=floor)
    if hi < lo:
        raise ValueError(f"{names[1]} must be >= {names[0]}; got {names[1]}={hi}, {names[0]}={lo}")
    return lo, hi


def psd_matrices(
    *,
    min_p: int = 1,
    max_p: int = 6,
    min_rank: int = 1,
    max_rank: int | None = None,
    max_cond: float = 1.0,
    max_entry: int = 3,
) -> st.SearchStrategy[np.ndarray]:
    """Symmetric PSD matrices Λ = Σ_c s_c g_c g_cᵀ with integer columns g_c.

    G = [g_1 … g_r] is a p × r integer matrix of exact rank r, so rank(Λ) = r; every s_c is a
    power of ten in [1/max_cond, 1]. With ``max_cond=1`` (the default) Λ = G Gᵀ has integer
    entries; a larger ``max_cond`` spreads the spectrum (ill-conditioned Λ at 1e10).

    Parameters
    ----------
    min_p, max_p : int
        The dimension p, 1 ≤ min_p ≤ max_p.
    min_rank, max_rank : int
        The rank r (0 allows the zero matrix); max_rank None means p.
    max_cond : float
        ≥ 1: the largest ratio between the scales s_c of the rank-one terms.
    max_entry : int
        ≥ 1: the entries of G lie in [−max_entry, max_entry].

    Returns
    -------
    SearchStrategy of (p, p) float64 arrays

    Examples
    --------
    IPV(S) ≥ 0 for every PSD Λ (eq. 8 of [1]_):

    >>> from hypothesis import given
    >>> from laplace_lab.theory import ipv
    >>> from laplace_lab.theory.strategies import psd_matrices
    >>> @given(psd_matrices(max_p=4, max_cond=1e6))
    ... def test_ipv_is_nonnegative(Lam):
    ...     assert ipv(Lam, [0], n=10) >= 0
    >>> test_ipv_is_nonnegative()

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations:
       New Results and Methods", arXiv:2605.09075 (2026), §4, eq. (8).
    """
    lo_p, hi_p = _range(min_p, max_p, ("min_p", "max_p"), floor=1)
    lo_r = integer(min_rank, "min_rank", low=0, high=hi_p)
    hi_r = hi_p if max_rank is None else integer(max_rank, "max_rank", low=lo_r)
    cond = positive_float(max_cond, "max_cond")
    if cond < 1.0:
        raise ValueError(f"max_cond must be >= 1; got max_cond={max_cond!r}")
    m = positive_int(max_entry, "max_entry")
    decades = math.floor(math.log10(cond) + 1e-12)

    return _psd(lo_p, hi_p, lo_r, hi_r, decades, m)


def cpi_matrices(
    *,
    min_p: int = 2,
    max_p: int = 8,
    ties: bool = True,
    negative_b: bool | None = None,
    max_entry: int = 5,
) -> st.SearchStrategy[np.ndarray]:
    """Matrices of the class C_PI: Λ = diag(d) + a·I + b·11ᵀ, d > 0, a ≥ 0, a + p·b ≥ 0.

    d and a are integers; b = −t·a/p with t ∈ {0, 1/4, 1/2, 3/4, 1} when negative (so C is
    PSD, possibly singular), an integer when non-negative.

    Parameters
    ----------
    min_p, max_p : int
        The dimension p, 1 ≤ min_p ≤ max_p.
    ties : bool
        Allow ties in d (then d takes few distinct values); False makes d distinct.
    negative_b : bool or None
        Force b < 0 (True), b ≥ 0 (False), or draw both (None).
    max_entry : int
        ≥ 1: d lies in [1, max_entry + p] and a, b in [0, max_entry].

    Returns
    -------
    SearchStrategy of (p, p) float64 arrays

    Examples
    --------
    Theorem 2 of [1]_: on C_PI the top-k diagonal attains the exhaustive maximum of IPV.

    >>> from hypothesis import given
    >>> from laplace_lab.theory import check_theorem2
    >>> from laplace_lab.theory.strategies import cpi_matrices
    >>> @given(cpi_matrices(max_p=6))
    ... def test_theorem2(Lam):
    ...     assert check_theorem2(Lam, 2, n=100.0).holds
    >>> test_theorem2()

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations:
       New Results and Methods", arXiv:2605.09075 (2026), §4, C_PI and Theorem 2.
    """
    lo_p, hi_p = _range(min_p, max_p, ("min_p", "max_p"), floor=1)
    if not isinstance(ties, bool):
        raise TypeError(f"ties must be a bool; got {type(ties).__name__} {ties!r}")
    if negative_b is not None and not isinstance(negative_b, bool):
        raise TypeError(f"negative_b must be a bool or None; got {negative_b!r}")
    m = positive_int(max_entry, "max_entry")

    return _cpi(lo_p, hi_p, ties, negative_b, m)


class DominantCase(NamedTuple):
    """An ε-diagonally dominant Λ with the premises of Theorem 3 at size k."""

    Lam: np.ndarray
    k: int
    eps: float


def dominant_matrices(
    *, min_p: int = 2, max_p: int = 8, max_entry: int = 2
) -> st.SearchStrategy[DominantCase]:
    """(Λ, k, ε) with Λ ε-diagonally dominant and both ratio premises of Theorem 3.

    Off-diagonal entries are integers in [−max_entry, max_entry]; every diagonal entry is an
    integer above its row's off-diagonal absolute sum divided by ε (dominance), and the k
    largest exceed (1+ε)/(1−ε) times all the others, so that Λ_{m_k m_k} / Λ_{m_{k+1} m_{k+1}}
    and Λ_{m_k m_k} / Λ_{m_{p−k+1} m_{p−k+1}} exceed (1+ε)/(1−ε) (k ≤ p/2).

    Parameters
    ----------
    min_p, max_p : int
        The dimension p, 2 ≤ min_p ≤ max_p.
    max_entry : int
        ≥ 1: the off-diagonal range.

    Returns
    -------
    SearchStrategy of DominantCase(Lam, k, eps)

    Examples
    --------
    >>> from hypothesis import given
    >>> from laplace_lab.theory import check_theorem3
    >>> from laplace_lab.theory.strategies import dominant_matrices
    >>> @given(dominant_matrices(max_p=6))
    ... def test_theorem3(case):
    ...     assert check_theorem3(case.Lam, case.k, case.eps, n=50.0).holds
    >>> test_theorem3()

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations:
       New Results and Methods", arXiv:2605.09075 (2026), Theorem 3 and App. A.5.
    """
    lo_p, hi_p = _range(min_p, max_p, ("min_p", "max_p"), floor=2)
    m = positive_int(max_entry, "max_entry")

    return _dominant(lo_p, hi_p, m)


def subsets(*, p: int, min_size: int = 0, max_size: int | None = None) -> st.SearchStrategy:
    """Ordered subsets S of {0, …, p−1}: distinct int64 indices in a random order.

    Parameters
    ----------
    p : int
        ≥ 1, the number of parameters.
    min_size, max_size : int
        The size |S|, 0 ≤ min_size ≤ max_size ≤ p (max_size None means p).

    Returns
    -------
    SearchStrategy of (|S|,) int64 arrays (shrinking towards 0, 1, 2, … in order)

    Examples
    --------
    >>> from hypothesis import given
    >>> from laplace_lab.theory import ipv, ipv_full
    >>> from laplace_lab.theory.strategies import subsets
    >>> @given(subsets(p=4))
    ... def test_ipv_below_full(S):
    ...     Lam = [[2.0, 1, 0, 0], [1, 2, 0, 0], [0, 0, 1, 0], [0, 0, 0, 3]]
    ...     assert ipv(Lam, S, n=10) <= ipv_full(Lam, n=10) + 1e-12
    >>> test_ipv_below_full()
    """
    p = positive_int(p, "p")
    lo = integer(min_size, "min_size", low=0, high=p)
    hi = p if max_size is None else integer(max_size, "max_size", low=lo, high=p)

    return _subsets(p, lo, hi)


def supersets(*, subset_of: Any, p: int, max_size: int | None = None) -> st.SearchStrategy:
    """Ordered supersets S′ ⊇ S of a given subset S of {0, …, p−1}, in a random order.

    Parameters
    ----------
    subset_of : sequence of int
        S: distinct indices in [0, p).
    p : int
        ≥ 1.
    max_size : int, optional
        |S′| ≤ max_size (≥ |S|); p when None.

    Returns
    -------
    SearchStrategy of int64 arrays containing every index of S

    Examples
    --------
    Theorem 1 of [1]_: IPV is monotone under inclusion.

    >>> import numpy as np
    >>> from hypothesis import given
    >>> from laplace_lab.theory import check_monotonicity
    >>> from laplace_lab.theory.strategies import supersets
    >>> Lam = np.array([[1.0, 1, 1], [1, 2, 2], [1, 2, 2]])
    >>> @given(supersets(subset_of=[2], p=3))
    ... def test_theorem1(S_sup):
    ...     assert check_monotonicity(Lam, [2], S_sup, n=10).holds
    >>> test_theorem1()

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations:
       New Results and Methods", arXiv:2605.09075 (2026), Theorem 1.
    """
    p = positive_int(p, "p")
    S = subset(subset_of, p, "subset_of")
    hi = p if max_size is None else integer(max_size, "max_size", low=S.size, high=p)
    rest = sorted(set(range(p)) - set(S.tolist()))

    return _supersets(S, rest, hi)


def nested_subsets(*, p: int, min_size: int = 0) -> st.SearchStrategy:
    """Nested pairs (S, S′) with S ⊆ S′ ⊆ {0, …, p−1}, both in random orders.

    Parameters
    ----------
    p : int
        ≥ 1.
    min_size : int
        The smallest |S|, 0 ≤ min_size ≤ p.

    Returns
    -------
    SearchStrategy of (S, S′) pairs of int64 arrays

    Examples
    --------
    >>> from hypothesis import given
    >>> from laplace_lab.theory import check_monotonicity
    >>> from laplace_lab.theory.strategies import nested_subsets
    >>> @given(nested_subsets(p=3))
    ... def test_theorem1(pair):
    ...     S, S_sup = pair
    ...     Lam = [[1.0, 1, 1], [1, 2, 2], [1, 2, 2]]
    ...     assert check_monotonicity(Lam, S, S_sup, n=10).holds
    >>> test_theorem1()
    """
    p = positive_int(p, "p")
    lo = integer(min_size, "min_size", low=0, high=p)

    return _nested(p, lo)


def prior_precisions(
    *, p: int, min_value: float = 0.1, max_value: float = 10.0, isotropic: bool = False
) -> st.SearchStrategy[np.ndarray]:
    """Positive prior precision vectors v (V = diag(v)) from readable values.

    Entries come from 1, 2, 0.5, 4, 0.25, 10, 0.1, 100, 0.01 (shrinking towards 1) inside
    [min_value, max_value], or from the floats of that interval when none of them is.

    Parameters
    ----------
    p : int
        ≥ 1, the length.
    min_value, max_value : float
        0 < min_value ≤ max_value.
    isotropic : bool
        V = cI: all entries equal.

    Returns
    -------
    SearchStrategy of (p,) float64 arrays

    Examples
    --------
    >>> from hypothesis import given
    >>> from laplace_lab.theory import ipv
    >>> from laplace_lab.theory.strategies import prior_precisions
    >>> @given(prior_precisions(p=2))
    ... def test_stronger_prior_lowers_ipv(v):
    ...     Lam = [[2.0, 1.0], [1.0, 1.0]]
    ...     weak = ipv(Lam, [0, 1], n=4, prior_precision=v)
    ...     assert ipv(Lam, [0, 1], n=4, prior_precision=2 * v) <= weak + 1e-12
    >>> test_stronger_prior_lowers_ipv()
    """
    p = positive_int(p, "p")
    lo, hi = positive_float(min_value, "min_value"), positive_float(max_value, "max_value")
    if hi < lo:
        raise ValueError(f"max_value must be >= min_value; got max_value={hi}, min_value={lo}")
    if not isinstance(isotropic, bool):
        raise TypeError(f"isotropic must be a bool; got {type(isotropic).__name__} {isotropic!r}")
    inside = [v for v in _POSITIVE_VALUES if lo <= v <= hi]
    element = st.sampled_from(inside) if inside else st.floats(lo, hi)
    if isotropic:
        return element.map(lambda c: np.full(p, c, dtype=np.float64))
    return hnp.arrays(np.float64, (p,), elements=element)


def sample_sizes(*, min_value: float = 1.0, max_value: float = 1e6) -> st.SearchStrategy[float]:
    """The number of training points N as a float in [min_value, max_value] (0 < min ≤ max).

    Examples
    --------
    >>> from hypothesis import given
    >>> from laplace_lab.theory import ipv
    >>> from laplace_lab.theory.strategies import sample_sizes
    >>> @given(sample_sizes())
    ... def test_ipv_shrinks_like_one_over_n(n):
    ...     assert ipv([[1.0]], [0], n=n) <= 1.0 / n
    >>> test_ipv_shrinks_like_one_over_n()
    """
    lo, hi = positive_float(min_value, "min_value"), positive_float(max_value, "max_value")
    if hi < lo:
        raise ValueError(f"max_value must be >= min_value; got max_value={hi}, min_value={lo}")
    return st.floats(lo, hi)


def noise_variances(
    *, min_value: float = 0.01, max_value: float = 10.0
) -> st.SearchStrategy[float]:
    """The observation-noise variance σ0² as a float in [min_value, max_value] (0 < min ≤ max).

    Examples
    --------
    >>> from hypothesis import given
    >>> from laplace_lab.theory import ipv
    >>> from laplace_lab.theory.strategies import noise_variances
    >>> @given(noise_variances())
    ... def test_ipv_scales_with_the_noise(s2):
    ...     assert ipv([[1.0]], [0], n=10, noise_var=s2) <= s2 / 10
    >>> test_ipv_scales_with_the_noise()
    """
    lo, hi = positive_float(min_value, "min_value"), positive_float(max_value, "max_value")
    if hi < lo:
        raise ValueError(f"max_value must be >= min_value; got max_value={hi}, min_value={lo}")
    return st.floats(lo, hi)


class GGNFactor(NamedTuple):
    """Output gradients J and MAP logits of one GGN (inputs of ``numerics.GGN.<likelihood>``).

    J is (N, p) for regression and binary, (N, C, p) for multiclass; logits are (N,) or
    (N, C) (for regression they are the outputs f(x_n), which the GGN does not read).
    """

    J: np.ndarray
    logits: np.ndarray
    likelihood: str


def ggn_factors(
    *,
    likelihood: str = "regression",
    min_n: int = 1,
    max_n: int = 6,
    min_p: int = 1,
    max_p: int = 6,
    n_classes: int = 3,
    max_entry: int = 3,
) -> st.SearchStrategy[GGNFactor]:
    """Jacobians (integer entries) and logits (multiples of 1/2) of a small GGN.

    Parameters
    ----------
    likelihood : {"regression", "binary", "multiclass"}
    min_n, max_n : int
        The number of training points N, 1 ≤ min_n ≤ max_n.
    min_p, max_p : int
        The number of parameters p, 1 ≤ min_p ≤ max_p.
    n_classes : int
        C ≥ 2 (multiclass only).
    max_entry : int
        ≥ 1: Jacobian entries in [−max_entry, max_entry], logits in [−max_entry, max_entry].

    Returns
    -------
    SearchStrategy of GGNFactor(J, logits, likelihood)

    Examples
    --------
    The GGN precision is PSD plus the prior: its smallest eigenvalue is at least min V.

    >>> import numpy as np
    >>> from hypothesis import given
    >>> from laplace_lab.numerics import GGN
    >>> from laplace_lab.theory.strategies import ggn_factors
    >>> @given(ggn_factors(likelihood="multiclass"))
    ... def test_precision_above_prior(f):
    ...     Omega = GGN.multiclass(f.J, f.logits, prior_precision=1.0).dense()
    ...     assert np.linalg.eigvalsh(Omega)[0] >= 1.0 - 1e-9
    >>> test_precision_above_prior()

    References
    ----------
    .. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations:
       New Results and Methods", arXiv:2605.09075 (2026), §2.1 eqs. (2) and (4), App. C.5.
    """
    lik = one_of(likelihood, "likelihood", ("regression", "binary", "multiclass"))
    lo_n, hi_n = _range(min_n, max_n, ("min_n", "max_n"), floor=1)
    lo_p, hi_p = _range(min_p, max_p, ("min_p", "max_p"), floor=1)
    C = integer(n_classes, "n_classes", low=2)
    m = positive_int(max_entry, "max_entry")

    return _ggn_factor(lik, lo_n, hi_n, lo_p, hi_p, C, m)


def conjugate_datasets(
    *,
    family: str = "linear_regression",
    min_n: int = 1,
    max_n: int = 8,
    max_d: int = 3,
    max_entry: int = 3,
) -> st.SearchStrategy[Any]:
    """Small integer-valued data sets for the conjugate models of [1]_.

    Parameters
    ----------
    family : {"linear_regression", "normal_normal", "poisson_gamma"}
        ``linear_regression``: a pair (X, y) with X of shape (n, d), d ≤ max_d
        (``BayesianLinearRegression``); ``normal_normal``: observations x (n,)
        (``NormalNormal``); ``poisson_gamma``: counts (n,) with a positive total
        (``PoissonGamma``; a zero total leaves the MLE at the boundary).
    min_n, max_n : int
        The number of observations, 1 ≤ min_n ≤ max_n.
    max_d : int
        ≥ 1: the largest number of regressors.
    max_entry : int
        ≥ 1: entries in [−max_entry, max_entry] (counts in [0, max_entry]).

    Returns
    -------
    SearchStrategy of (X, y) pairs or (n,) float64 arrays

    Examples
    --------
    With a Gaussian-linear model the posterior variant of SSLA is exact, here for Bayesian
    linear regression: the predictive variance exceeds the noise variance.

    >>> import numpy as np
    >>> from hypothesis import given
    >>> from laplace_lab.theory import BayesianLinearRegression
    >>> from laplace_lab.theory.strategies import conjugate_datasets
    >>> @given(conjugate_datasets(max_d=2))
    ... def test_predictive_variance_exceeds_noise(data):
    ...     X, y = data
    ...     d = X.shape[1]
    ...     model = BayesianLinearRegression(np.zeros(d), np.eye(d), noise_var=0.5)
    ...     assert model.predictive(data, x_new=np.ones(d)).var() > 0.5
    >>> test_predictive_variance_exceeds_noise()

    References
    ----------
    .. [1] J. Rodemann, A. Marquard, T. Augustin, M. Caprio, "Self-Supervised Laplace
       Approximation for Bayesian Uncertainty Quantification", TMLR, arXiv:2605.12208,
       §5 and App. B.1.
    """
    fam = one_of(family, "family", ("linear_regression", "normal_normal", "poisson_gamma"))
    lo_n, hi_n = _range(min_n, max_n, ("min_n", "max_n"), floor=1)
    d_max = positive_int(max_d, "max_d")
    m = positive_int(max_entry, "max_entry")

    return _conjugate(fam, lo_n, hi_n, d_max, m)


# ----------------------------------------------------------------------------- builders
# Module-level composites: building one per call of a public function costs Hypothesis a
# source inspection every time a strategy is drawn inside another.
@st.composite
def _psd(
    draw: Any, lo_p: int, hi_p: int, lo_r: int, hi_r: int, decades: int, m: int
) -> np.ndarray:
    p = draw(st.integers(max(lo_p, lo_r), hi_p))
    r = draw(st.integers(lo_r, min(hi_r, p)))
    if r == 0:
        return np.zeros((p, p))
    G = draw(
        hnp.arrays(np.int64, (p, r), elements=st.integers(-m, m)).filter(_full_column_rank)
    ).astype(np.float64)
    scales = 10.0 ** -np.array(draw(st.lists(st.integers(0, decades), min_size=r, max_size=r)))
    L = (G * scales) @ G.T
    return 0.5 * (L + L.T)


@st.composite
def _cpi(
    draw: Any, lo_p: int, hi_p: int, ties: bool, negative_b: bool | None, m: int
) -> np.ndarray:
    p = draw(st.integers(lo_p, hi_p))
    if ties:
        d = draw(st.lists(st.integers(1, m + p), min_size=p, max_size=p))
    else:
        d = draw(st.permutations(range(1, p + 1)))
    neg = draw(st.booleans()) if negative_b is None else negative_b
    if neg:
        a = draw(st.integers(1, m))
        b = -a * draw(st.sampled_from((0.25, 0.5, 0.75, 1.0))) / p
    else:
        a = draw(st.integers(0, m))
        b = float(draw(st.integers(0, m)))
    d = np.asarray(d, dtype=np.float64)
    return np.diag(d) + a * np.eye(p) + b * np.ones((p, p))


@st.composite
def _dominant(draw: Any, lo_p: int, hi_p: int, m: int) -> DominantCase:
    p = draw(st.integers(lo_p, hi_p))
    k = draw(st.integers(1, p // 2))
    eps = draw(st.sampled_from((0.5, 0.25, 0.75, 0.1)))
    bound = (1 + eps) / (1 - eps)
    E = np.zeros((p, p))
    iu = np.triu_indices(p, 1)
    E[iu] = draw(st.lists(st.integers(-m, m), min_size=iu[0].size, max_size=iu[0].size))
    E = E + E.T
    need = np.floor(np.abs(E).sum(axis=1) / eps) + 1  # ε Λ_ii > Σ_j |Λ_ij|
    small = need[k:] + np.array(draw(st.lists(st.integers(0, 3), min_size=p - k, max_size=p - k)))
    floor_large = np.floor(bound * small.max()) + 1
    large = np.maximum(need[:k], floor_large) + np.array(
        draw(st.lists(st.integers(0, 3), min_size=k, max_size=k))
    )
    Lam = E + np.diag(np.concatenate([large, small]))
    order = np.asarray(draw(st.permutations(range(p))))
    return DominantCase(Lam[np.ix_(order, order)], k, float(eps))  # relabelled


@st.composite
def _subsets(draw: Any, p: int, lo: int, hi: int) -> np.ndarray:
    size = draw(st.integers(lo, hi))
    return np.asarray(draw(st.permutations(range(p)))[:size], dtype=np.int64)


@st.composite
def _supersets(draw: Any, S: np.ndarray, rest: list[int], hi: int) -> np.ndarray:
    extra = draw(st.permutations(rest))[: draw(st.integers(0, hi - S.size))]
    return np.asarray(draw(st.permutations([*S.tolist(), *extra])), dtype=np.int64)


@st.composite
def _nested(draw: Any, p: int, lo: int) -> tuple[np.ndarray, np.ndarray]:
    sup = draw(subsets(p=p, min_size=lo))
    sub = draw(st.permutations(sup.tolist()))[: draw(st.integers(lo, sup.size))]
    return np.asarray(sub, dtype=np.int64), sup


@st.composite
def _ggn_factor(
    draw: Any, lik: str, lo_n: int, hi_n: int, lo_p: int, hi_p: int, C: int, m: int
) -> GGNFactor:
    n, p = draw(st.integers(lo_n, hi_n)), draw(st.integers(lo_p, hi_p))
    out = (n, C) if lik == "multiclass" else (n,)
    J = draw(hnp.arrays(np.int64, (*out, p), elements=st.integers(-m, m)))
    f = draw(hnp.arrays(np.int64, out, elements=st.integers(-2 * m, 2 * m))) / 2.0
    return GGNFactor(J.astype(np.float64), f, lik)


@st.composite
def _conjugate(draw: Any, fam: str, lo_n: int, hi_n: int, d_max: int, m: int) -> Any:
    n = draw(st.integers(lo_n, hi_n))
    if fam == "poisson_gamma":
        counts = draw(
            hnp.arrays(np.int64, (n,), elements=st.integers(0, m)).filter(_positive_total)
        )
        return counts.astype(np.float64)
    if fam == "normal_normal":
        return draw(hnp.arrays(np.int64, (n,), elements=st.integers(-m, m))).astype(np.float64)
    d = draw(st.integers(1, d_max))
    X = draw(hnp.arrays(np.int64, (n, d), elements=st.integers(-m, m))).astype(np.float64)
    y = draw(hnp.arrays(np.int64, (n,), elements=st.integers(-m, m))).astype(np.float64)
    return X, y
