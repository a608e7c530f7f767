"""The papers' registered studies: their default grids run (fewer replications) and agree with
theory."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from laplace_lab.paper_checks.self_supervised_laplace.studies import ssla_conjugate
from laplace_lab.paper_checks.subnetwork_laplace_optimality.studies import (
    gradient_vs_greedy,
    ipv_vs_pv,
    theorem2_consistency,
)
from laplace_lab.papers import studies
from laplace_lab.studies.executors import Task, run_replication
from laplace_lab.studies.runner import run_study
from laplace_lab.studies.spec import expand_grid
from laplace_lab.studies.store import Store
from laplace_lab.studies.summary import fit_rates, summarise
from laplace_lab.theory.classes import cpi_matrix
from laplace_lab.theory.exhaustive import exhaustive_extremes
from laplace_lab.theory.ipv import ipv


def _run(study, tmp_path, reps):
    path = tmp_path / f"{study.name}.sqlite"
    run_study(study, store=path, replications=reps, progress=False)
    with Store(path, study=study.name, create=False) as db:
        rows = list(db.rows())
    summary = summarise(study, rows)
    table = {(s.metric, *sorted(s.params.items())): s for s in summary}
    return rows, summary, table


#: Replications per grid point in these tests (the default grids, fewer replications).
REPS = {
    "theorem2-consistency": 60,
    "ipv-vs-pv": 24,
    "ssla-conjugate": 16,
    "gradient-vs-greedy": 20,
}


# one worker runs the module (``--dist loadgroup``), so each study below runs once
pytestmark = pytest.mark.xdist_group("studies")


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """``results(study)`` runs a study's default grid once per module: (rows, summary, table)."""
    cache = {}

    def get(study):
        if study.name not in cache:
            folder = tmp_path_factory.mktemp(study.name)
            cache[study.name] = _run(study, folder, reps=REPS[study.name])
        return cache[study.name]

    return get


def _get(table, metric, **params):
    return table[(metric, *sorted(params.items()))]


def test_the_papers_register_their_studies():
    names = set(studies())
    assert {"theorem2-consistency", "ipv-vs-pv", "ssla-conjugate", "gradient-vs-greedy"} <= names


# -- theorem2-consistency ------------------------------------------------------------------
T2 = theorem2_consistency.STUDY
T2_FIXED = {"p": 20, "k": 5, "a": 0.5, "b": 0.2}


@pytest.mark.parametrize("scenario", ["separated", "ties", "near-ties"])
def test_theorem2_population_extremes_are_the_diagonal_extremes(scenario):
    d = theorem2_consistency.diagonal(scenario, 20, 5)
    lam = cpi_matrix(d, 0.5, 0.2)
    ext = exhaustive_extremes(lam, 5, n=1000)
    best = ipv(lam, np.argsort(-d, kind="stable")[:5], n=1000)
    worst = ipv(lam, np.argsort(d, kind="stable")[:5], n=1000)
    assert ext.n_subsets == math.comb(20, 5)
    assert best == pytest.approx(ext.best_ipv, rel=1e-13)
    assert worst == pytest.approx(ext.worst_ipv, rel=1e-13)


@pytest.mark.parametrize("b", [0.3, -0.1])  # structured sampler (b ≥ 0) and Cholesky (b < 0)
def test_theorem2_gradients_have_covariance_lambda(b):
    d = np.array([1.0, 1.5, 2.0, 2.5])
    lam = cpi_matrix(d, 0.5, b)
    n = 200_000
    g = theorem2_consistency.gradients(np.random.default_rng(7), n, d, 0.5, b)
    cov = g.T @ g / n
    # sd of the (i, j) entry of the empirical second moment: √((Λ_ii Λ_jj + Λ_ij²) / N)
    sd = np.sqrt((np.outer(np.diag(lam), np.diag(lam)) + lam**2) / n)
    assert np.all(np.abs(cov - lam) < 4.5 * sd), (cov - lam) / sd


def test_theorem2_selects_the_optimum_at_the_largest_n_when_a6_holds(results):
    _, _, table = results(T2)
    n = max(T2.grid["N"])
    for scenario in ("separated", "ties"):
        d = theorem2_consistency.diagonal(scenario, 20, 5)
        assert theorem2_consistency.separation(d, 5) > math.sqrt(math.log(20) / n)  # (A6)
        for metric in ("select_gradient", "select_subnet_diagonal"):
            s = _get(table, metric, N=n, scenario=scenario, **T2_FIXED)
            assert s.interval == "wilson" and s.low > 0.9, (scenario, metric, s)


def test_theorem2_near_ties_match_the_normal_approximation(results):
    # (A6) fails: the near-tied pair (m_k, m_{k+1}) is ordered correctly with probability
    # Φ(δ / sd(s_i − s_j)), Var(g_i² − g_j²) = 2Λ_ii² + 2Λ_jj² − 4Λ_ij² for Gaussian g.
    _, _, table = results(T2)
    n = max(T2.grid["N"])
    d = theorem2_consistency.diagonal("near-ties", 20, 5)
    lam = cpi_matrix(d, 0.5, 0.2)
    i, j = 4, 5
    sd = math.sqrt((2 * lam[i, i] ** 2 + 2 * lam[j, j] ** 2 - 4 * lam[i, j] ** 2) / n)
    predicted = norm.cdf((d[i] - d[j]) / sd)
    assert 0.5 < predicted < 0.6
    s = _get(table, "select_gradient", N=n, scenario="near-ties", **T2_FIXED)
    assert s.low <= predicted <= s.high, (predicted, s)
    assert s.high < 0.9  # not consistent at this N, as (A6) warns


def test_theorem2_ipv_success_equals_the_multiset_criterion_and_sets_differ_under_ties(results):
    rows, _, table = results(T2)
    for r in rows:
        assert r.metrics["select_gradient"] == r.metrics["top_values_gradient"], r
    n = max(T2.grid["N"])
    ties = _get(table, "same_set_gradient", N=n, scenario="ties", **T2_FIXED)
    assert ties.high < 0.8  # a set comparison would call half the optimal choices failures
    assert _get(table, "select_gradient", N=n, scenario="ties", **T2_FIXED).mean == 1.0


def test_theorem2_score_error_is_of_order_sqrt_log_p_over_n_not_smaller(results):
    # App. A.4 writes sup_i |s_i − Λ_ii| = o_P(√(log p / N)); for Gaussian gradients it is
    # Θ_P(√(log p / N)): the scaled error stays flat in N instead of tending to 0.
    _, _, table = results(T2)
    means = [
        _get(table, "score_error_scaled", N=n, scenario="separated", **T2_FIXED).mean
        for n in T2.grid["N"]
    ]
    assert min(means) > 2.0
    assert max(means) / min(means) < 1.5


# -- ipv-vs-pv -----------------------------------------------------------------------------
PV = ipv_vs_pv.STUDY


def test_pv_bias_matches_the_wishart_mean(results):
    _, summary, _ = results(PV)
    checked = 0
    for s in summary:
        if s.metric == "scaled_signed_fixed" and s.params["N"] >= 300:
            expected = ipv_vs_pv.wishart_bias(s.params["N"], s.params["k"])
            assert abs(s.mean - expected) <= 4 * s.se + 0.1 * expected, (s, expected)
            checked += 1
    assert checked == 16


def test_pv_error_rates_and_the_papers_bound(results):
    _, summary, _ = results(PV)
    absolute = fit_rates(summary, "error_fixed", x="N")
    scaled = fit_rates(summary, "scaled_error_fixed", x="N")
    for p in (20, 200):  # k = 2: the √(2k/N) fluctuation dominates the k²/N bias
        key = (("k", 2), ("n_test", 1000), ("p", p))
        assert abs(absolute[key].slope + 1.5) < 0.1 and absolute[key].contains(-1.5), absolute
        assert abs(scaled[key].slope + 0.5) < 0.1 and scaled[key].contains(-0.5), scaled
    for s in summary:  # the paper's bound holds (loosely) in every replication
        if s.metric.startswith("within_bound"):
            assert s.mean == 1.0, s
    text = PV.report(summary)
    assert "S fixed    k=2   p=20    absolute: N^-1.5" in text


@pytest.mark.parametrize(
    "study", [T2, PV, ssla_conjugate.STUDY, gradient_vs_greedy.STUDY], ids=lambda s: s.name
)
def test_every_full_grid_setting_runs(study):
    # Every setting of the --full grid at the smallest value of its expensive axis, one
    # replication each, as the runner runs it (one BLAS thread; NaN refused).
    axis = study.x
    grid = dict(study.full_grid, **{axis: (min(study.full_grid[axis]),)})
    assert len(study.full_grid[axis]) > len(study.grid[axis])
    for params in expand_grid(grid):
        result = run_replication(Task(study, params, 0, 0))  # one BLAS thread, no NaN
        assert result.metrics and all(math.isfinite(v) for v in result.metrics.values())


# -- ssla-conjugate ------------------------------------------------------------------------
SSLA = ssla_conjugate.STUDY


def test_ssla_fitted_rates_match_the_derived_ones(results):
    _, summary, _ = results(SSLA)
    checked = 0
    for (model, method), expected in ssla_conjugate.EXPECTED_SLOPES.items():
        for div in ("kl", "tv", "w1"):
            fits = fit_rates(summary, f"{method}_{div}", x="n", floor=ssla_conjugate.FLOORS[div])
            fit = fits.get((("model", model),))
            if expected is None:  # SSLA with the posterior Hessian is exact for normal-normal
                assert fit is None
                continue
            # ASSLA's error is deterministic to first order (the missing O(1/n) variance):
            # tight; SSLA's depends on |x̄ - μ0| (random): looser.
            tol = 0.05 if method.startswith("assla") else 0.3
            assert abs(fit.slope - expected[div]) < tol, (model, method, div, fit)
            checked += 1
    assert checked == 21


def test_ssla_with_the_posterior_hessian_is_exact_for_normal_normal(results):
    _, summary, _ = results(SSLA)
    values = [
        s for s in summary if s.metric == "ssla_post_tv" and s.params["model"] == "normal-normal"
    ]
    assert len(values) == len(SSLA.grid["n"])
    assert max(s.high for s in values) < 1e-13


def _figure(study, summary, tmp_path, monkeypatch):
    """The matplotlib Figure the study's plot saves (captured at savefig)."""
    from matplotlib.figure import Figure

    from laplace_lab.studies.output import plot_summary

    saved = []
    original = Figure.savefig

    def capture(self, path, **kwargs):
        saved.append(self)
        return original(self, path, **kwargs)

    monkeypatch.setattr(Figure, "savefig", capture)
    png = plot_summary(study, summary, tmp_path / f"{study.name}.png")
    assert png.read_bytes()[:4] == b"\x89PNG" and len(saved) == 1
    return saved[0]


def test_ssla_figure_has_labels_w1_fitted_exponents_and_derived_slopes(
    results, tmp_path, monkeypatch
):
    _, summary, _ = results(SSLA)
    fig = _figure(SSLA, summary, tmp_path, monkeypatch)
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) == 2 * 3  # (normal-normal, poisson-gamma) x (KL, TV, W1)
    assert {ax.get_ylabel() for ax in axes} == set(ssla_conjugate.DIVERGENCES.values())
    assert sum("W1" in ax.get_title() for ax in axes) == 2
    for ax in axes:
        model, div = ax.get_title().split(":")[0], ax.get_title().split(": ")[1][:2].lower()
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        for method, name in ssla_conjugate.LABELS.items():
            (text,) = [t for t in legend if t.startswith(name + ":")]
            expected = ssla_conjugate.EXPECTED_SLOPES[(model, method)]
            if expected is None:
                assert "exact" in text
                continue
            # the fitted exponent shown is near the derived one (as in the rate test)
            shown = float(text.split("n^")[1].split(" ")[0])
            assert abs(shown - expected[div]) < (0.05 if method.startswith("assla") else 0.3)
        # one dashed line of the derived slope per drawn approximation
        dashed = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
        drawn = sum(
            ssla_conjugate.EXPECTED_SLOPES[(model, m)] is not None for m in ssla_conjugate.LABELS
        )
        assert len(dashed) == drawn
        for ln in dashed:
            x, y = ln.get_data()
            slope = np.log(y[-1] / y[0]) / np.log(x[-1] / x[0])
            derived = {
                e[div]
                for (mo, _), e in ssla_conjugate.EXPECTED_SLOPES.items()
                if mo == model and e
            }
            assert min(abs(slope - d) for d in derived) < 1e-9


def test_ipv_vs_pv_figure_draws_the_intervals_as_error_bars(results, tmp_path, monkeypatch):
    from matplotlib.container import ErrorbarContainer

    _, summary, table = results(PV)
    fig = _figure(PV, summary, tmp_path, monkeypatch)
    for ax, subset in zip(fig.axes, ("fixed", "selected"), strict=True):
        bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
        assert len(bars) == 4  # (k, p) in {2, 8} x {20, 200}
        for bar in bars:
            k, p = (int(v.split("=")[1]) for v in bar.get_label().split(":")[0].split(", "))
            xs, ys = bar.lines[0].get_data()
            segments = bar.lines[2][0].get_segments()
            for n, y, seg in zip(xs, ys, segments, strict=True):
                s = _get(table, f"error_{subset}", N=int(n), k=k, p=p, n_test=1000)
                assert y == s.mean and s.n == REPS["ipv-vs-pv"]
                np.testing.assert_allclose(sorted(seg[:, 1]), [s.low, s.high], rtol=1e-12)


# -- gradient-vs-greedy --------------------------------------------------------------------
GG = gradient_vs_greedy.STUDY


def test_greedy_study_population_extremes_follow_theorems_2_and_3(results):
    rows, _, _ = results(GG)
    cpi = [r for r in rows if r.params["family"] == "cpi"]
    assert len(cpi) == 4 * 20
    for r in cpi:  # Theorem 2 (population): S* is the best subset, S̃* the worst
        assert r.metrics["regret_diag_top"] <= 1e-9, r
        assert r.metrics["regret_diag_bottom"] >= 1 - 1e-9, r
    dominant = [r for r in rows if r.params["family"] == "dominant"]
    holds = [r for r in dominant if r.metrics["theorem3_condition"] == 1.0]
    assert len(holds) >= 10  # the check below is not vacuous (29 of 80 here)
    for r in holds:  # Theorem 3 (a): IPV(S*) >= IPV(S̃*) when the diagonal ratio is large
        assert r.metrics["regret_diag_top"] <= r.metrics["regret_diag_bottom"], r


def test_greedy_study_regrets_are_normalised(results):
    from laplace_lab.numerics import GGN
    from laplace_lab.numerics.selection_registry import SubnetProblem

    dense = SubnetProblem(GGN.regression(np.ones((2, 3)), noise_var=1.0, prior_precision=1.0))
    n_rules = len(gradient_vs_greedy.rules(dense))
    assert {"gradient_laplace", "greedy_laplace", "subnet_diagonal", "last_k", "random"} <= set(
        gradient_vs_greedy.rules(dense)
    )
    rows, _, _ = results(GG)
    for r in rows:
        regrets = [v for name, v in r.metrics.items() if name.startswith("regret_")]
        assert len(regrets) == n_rules + 2 and all(0.0 <= v <= 1.0 + 1e-9 for v in regrets), r
        assert r.metrics["greedy_beats_gradient"] + r.metrics["gradient_beats_greedy"] <= 1


BAD_VALUES = {
    "theorem2-consistency": ({"N": [-5]}, "N must be a positive integer; got N=-5"),
    "ipv-vs-pv": ({"k": [300], "p": [200]}, r"k must be in \[1, 200\]; got k=300"),
    "ssla-conjugate": ({"model": ["normal-gamma"]}, "model must be one of"),
    "gradient-vs-greedy": ({"p": [40], "k": [20]}, r"C\(p=40, k=20\)"),
    "network-subnet-w2": ({"dataset": ["mnist"]}, "dataset must be one of"),
    "wheel-bandit": ({"agent": ["greedy_laplace"]}, "needs a size"),
    "wheel-bandit-readings": ({"reading": ["thompson_noise=zero"]}, "thompson_noise must be"),
}


@pytest.mark.parametrize("name", sorted(BAD_VALUES))
def test_every_shipped_study_checks_its_grid_values(name):
    study = studies()[name]
    assert study.check_params is not None
    for full in (False, True):  # the shipped grids pass their own check
        assert study.grid_with(full=full) == study.grid_for(full=full)
    overrides, message = BAD_VALUES[name]
    with pytest.raises(ValueError, match=message):
        study.grid_with(overrides)


def test_reports_of_one_replication_print_no_nan():
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.studies import wheel_bandit
    from laplace_lab.studies.summary import SummaryRow

    m = math
    params = {"delta": 0.95, "horizon": 600, "agent": "map"}
    one = SummaryRow(params, "regret", 1, 123.0, m.nan, m.nan, m.nan, "normal")
    text = wheel_bandit.report([one])
    assert "nan" not in text and "123.0 (one run)  (n=1)" in text
