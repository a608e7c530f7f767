"""Strategies for index sets, priors, scalars, GGN factors and conjugate data sets.

Public through :mod:`laplace_lab.theory.strategies`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from laplace_lab._checks import integer, one_of, positive_float, positive_int, subset
from laplace_lab.theory._hypothesis import (
    POSITIVE_VALUES,
    hnp,
    integer_range,
    positive_total,
    st,
)

__all__ = [
    "GGNFactor",
    "conjugate_datasets",
    "ggn_factors",
    "nested_subsets",
    "noise_variances",
    "prior_precisions",
    "sample_sizes",
    "subsets",
    "supersets",
]


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
    inside = [v for v in POSITIVE_VALUES if lo <= v <= hi]
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
    lo_n, hi_n = integer_range(min_n, max_n, ("min_n", "max_n"), floor=1)
    lo_p, hi_p = integer_range(min_p, max_p, ("min_p", "max_p"), floor=1)
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
    lo_n, hi_n = integer_range(min_n, max_n, ("min_n", "max_n"), floor=1)
    d_max = positive_int(max_d, "max_d")
    m = positive_int(max_entry, "max_entry")

    return _conjugate(fam, lo_n, hi_n, d_max, m)


# ----------------------------------------------------------------------------- builders
# Module-level composites (see the note in :mod:`._matrix_strategies`).
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
            hnp.arrays(np.int64, (n,), elements=st.integers(0, m)).filter(positive_total)
        )
        return counts.astype(np.float64)
    if fam == "normal_normal":
        return draw(hnp.arrays(np.int64, (n,), elements=st.integers(-m, m))).astype(np.float64)
    d = draw(st.integers(1, d_max))
    X = draw(hnp.arrays(np.int64, (n, d), elements=st.integers(-m, m))).astype(np.float64)
    y = draw(hnp.arrays(np.int64, (n,), elements=st.integers(-m, m))).astype(np.float64)
    return X, y
