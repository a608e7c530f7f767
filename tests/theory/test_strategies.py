"""The public Hypothesis strategies: what each promises, how they shrink, how they refuse."""

from __future__ import annotations

import contextlib
import doctest
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from laplace_lab.theory import (
    BayesianLinearRegression,
    check_theorem3,
    is_cpi,
    is_diagonally_dominant,
)
from laplace_lab.theory import _matrix_strategies as matrix_module
from laplace_lab.theory import _sample_strategies as sample_module
from laplace_lab.theory import strategies as strat
from laplace_lab.theory.strategies import (
    conjugate_datasets,
    cpi_matrices,
    dominant_matrices,
    ggn_factors,
    nested_subsets,
    prior_precisions,
    psd_matrices,
    subsets,
    supersets,
)

settings.register_profile("examples", max_examples=10, deadline=None, database=None)


@contextlib.contextmanager
def settings_profile(name: str):
    previous = settings.get_current_profile_name()
    settings.load_profile(name)
    try:
        yield
    finally:
        settings.load_profile(previous)


def test_every_example_in_the_docstrings_runs():
    # the examples' properties are checked elsewhere at full strength; here: that they run
    with settings_profile("examples"):
        results = [doctest.testmod(m, verbose=False) for m in (matrix_module, sample_module)]
    assert sum(r.attempted for r in results) >= 40 and not any(r.failed for r in results)
    documented = [n for n in strat.__all__ if callable(getattr(strat, n))]
    for name in documented:
        if name[0].islower():
            assert "Examples" in getattr(strat, name).__doc__, name
    assert len([n for n in documented if n[0].islower()]) >= 6


@given(psd_matrices(max_p=5, min_rank=2, max_rank=3))
def test_psd_matrices_have_the_rank_asked_for_and_integer_entries(Lam):
    assert np.array_equal(Lam, Lam.T) and np.array_equal(Lam, np.round(Lam))
    assert 2 <= np.linalg.matrix_rank(Lam) <= 3
    assert np.linalg.eigvalsh(Lam)[0] >= -1e-9 * max(1.0, np.abs(Lam).max())


@given(psd_matrices(min_p=3, max_p=3, min_rank=3, max_cond=1e8))
def test_psd_matrices_spread_their_spectrum_with_max_cond(Lam):
    eig = np.linalg.eigvalsh(Lam)
    assert eig[0] > 0 and eig[-1] / eig[0] >= 1.0


def test_psd_matrices_shrink_to_a_readable_counterexample():
    # "the (0, 1) entry is at least the (0, 0) entry" — the minimal counterexample is small
    Lam = find(psd_matrices(max_p=4, max_cond=1e6), lambda L: L.shape[0] > 1 and L[0, 1] > 1)
    assert Lam.shape == (2, 2) and np.array_equal(Lam, np.round(Lam))
    assert np.abs(Lam).max() <= 9


@given(cpi_matrices(max_p=7, negative_b=True, ties=False))
def test_cpi_matrices_are_cpi_with_negative_b_and_distinct_d(Lam):
    dec = is_cpi(Lam)
    assert dec is not None
    off = Lam[~np.eye(Lam.shape[0], dtype=bool)]
    assert off.size == 0 or off.max() < 0
    assert np.unique(np.diag(Lam)).size == Lam.shape[0]


def test_cpi_matrices_produce_ties():
    Lam = find(cpi_matrices(min_p=3, max_p=5), lambda L: np.unique(np.diag(L)).size < L.shape[0])
    assert Lam.shape[0] == 3


@given(dominant_matrices(max_p=7))
def test_dominant_matrices_meet_the_premises_of_theorem3(case):
    assert is_diagonally_dominant(case.Lam, case.eps)
    assert np.array_equal(case.Lam, case.Lam.T)
    check = check_theorem3(case.Lam, case.k, case.eps, n=10.0)
    assert check.details["part_a"].premises and check.details["part_b"].premises


@given(st.data())
def test_subsets_supersets_and_nested_pairs(data):
    p = data.draw(st.integers(1, 7))
    S = data.draw(subsets(p=p, min_size=1, max_size=min(4, p)))
    assert 1 <= S.size <= 4 and np.unique(S).size == S.size and S.dtype == np.int64
    S_sup = data.draw(supersets(subset_of=S, p=p))
    assert set(S.tolist()) <= set(S_sup.tolist()) and np.unique(S_sup).size == S_sup.size
    sub, sup = data.draw(nested_subsets(p=p, min_size=1))
    assert sub.size >= 1 and set(sub.tolist()) <= set(sup.tolist())


def test_subsets_come_unsorted():
    S = find(subsets(p=5), lambda s: s.size >= 2 and np.any(np.diff(s) < 0))
    assert S.size <= 3 and S.max() <= 2  # shrunk to a small unsorted subset


@given(prior_precisions(p=4, min_value=0.25, max_value=4.0), prior_precisions(p=3, isotropic=True))
def test_prior_precisions_are_positive_and_in_range(v, c):
    assert v.shape == (4,) and np.all((v >= 0.25) & (v <= 4.0))
    assert np.all(c == c[0]) and c[0] > 0


@given(ggn_factors(likelihood="multiclass", n_classes=4), ggn_factors(likelihood="binary"))
def test_ggn_factors_have_the_likelihoods_shapes(multi, binary):
    N, C, _ = multi.J.shape
    assert C == 4 and multi.logits.shape == (N, C)
    assert binary.J.ndim == 2 and binary.logits.shape == (binary.J.shape[0],)


@given(conjugate_datasets(max_d=2), conjugate_datasets(family="poisson_gamma"))
def test_conjugate_datasets_fit_their_models(data, counts):
    X, y = data
    assert X.shape[0] == y.shape[0] and 1 <= X.shape[1] <= 2
    d = X.shape[1]
    post = BayesianLinearRegression(np.zeros(d), np.eye(d), noise_var=1.0).posterior(data)
    assert np.all(np.linalg.eigvalsh(post.cov) > 0)
    assert counts.sum() > 0 and np.all(counts >= 0)


def test_arguments_are_keyword_only_and_validated():
    with pytest.raises(TypeError):
        psd_matrices(3)
    with pytest.raises(ValueError, match="max_p must be >= min_p"):
        psd_matrices(min_p=4, max_p=2)
    with pytest.raises(ValueError, match="max_cond must be >= 1"):
        psd_matrices(max_cond=0.5)
    with pytest.raises(TypeError, match="max_entry must be an integer"):
        psd_matrices(max_entry=2.5)
    with pytest.raises(ValueError, match="likelihood must be one of"):
        ggn_factors(likelihood="poisson")
    with pytest.raises(ValueError, match="subset_of has indices outside"):
        supersets(subset_of=[5], p=3)
    with pytest.raises(ValueError, match="min_p must be in"):
        dominant_matrices(min_p=1)
    with pytest.raises(TypeError, match="ties must be a bool"):
        cpi_matrices(ties=1)


def test_missing_hypothesis_is_one_clear_import_error(tmp_path):
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'hypothesis':\n"
        "            raise ImportError('no hypothesis here')\n"
        "sys.meta_path.insert(0, Block())\n"
        "import laplace_lab.theory\n"
        "import laplace_lab.theory.strategies\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 1
    assert "pip install 'laplace-lab[strategies]'" in out.stderr


def test_strategies_import_from_the_installed_package(tmp_path):
    (tmp_path / "theory.py").write_text("raise RuntimeError('the user module was imported')")
    code = "import laplace_lab.theory.strategies as s; print(len(s.__all__))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) >= 6
