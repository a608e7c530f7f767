"""The in-run audits of the FSP-Laplace claims: wrong code patched in must give ERROR."""

from __future__ import annotations

import numpy as np
import pytest

from laplace_lab.paper_checks.fsp_laplace import _mutants as wrong
from laplace_lab.paper_checks.fsp_laplace import bayes_opt as bo_claims
from laplace_lab.paper_checks.verification import Status
from laplace_lab.paper_checks.verification.cache import mutant_scope
from laplace_lab.paper_checks.verification.mutants import clear_caches
from laplace_lab.paper_checks.verification.registry import Context, run_claim
from laplace_lab.papers import claims


def _claim(name: str):
    return {c.key: c for c in claims()}[f"fsp-laplace/{name}"]


@pytest.fixture(autouse=True)
def _fresh_caches():
    # The patched runs compute apart from (and never read) the true cached experiments.
    clear_caches()
    with mutant_scope():
        yield
    clear_caches()


def test_bo_acquisition_for_minimisation_is_an_error(monkeypatch):
    # Only the audit runs before the error: the experiment is never reached.
    monkeypatch.setattr(
        bo_claims, "expected_improvement", wrong.expected_improvement_for_minimisation
    )
    v = run_claim(_claim("bo-fsp-beats-laplace-low-dim"), Context())
    assert v.status is Status.ERROR
    assert "the acquisition does not maximise the reward" in v.reason


def test_bo_loop_minimising_the_wrong_sign_is_an_error(monkeypatch):
    # The loop itself reversed: the acquisition handed the negated reward scale (it then
    # prefers the points of lowest predicted reward), with a correct expected improvement.
    true = bo_claims.expected_improvement
    oracle_calls = []

    def reversed_scores(mean, variance, best, _true=true):
        oracle_calls.append(1)
        if len(oracle_calls) == 1:  # the oracle case is answered correctly
            return _true(mean, variance, best)
        return _true(-mean, variance, -best)

    monkeypatch.setattr(bo_claims, "expected_improvement", reversed_scores)
    v = run_claim(_claim("bo-fsp-comparable-to-gp"), Context())
    assert v.status is Status.ERROR
    assert "the BO loop does not minimise f" in v.reason


def test_bo_audit_passes_on_the_true_code():
    line = bo_claims.audit_direction(Context())
    assert line.startswith("Audit:")


def test_uci_scaler_fitted_on_all_rows_is_an_error(monkeypatch):
    from laplace_lab.paper_checks.fsp_laplace.experiments import uci

    monkeypatch.setattr(uci, "standardise_split", wrong.standardise_on_all_rows)
    v = run_claim(_claim("uci-fsp-beats-laplace-ell"), Context())
    assert v.status is Status.ERROR
    assert "the scaler was not fitted on the training rows alone" in v.reason


def test_uci_context_box_over_all_splits_is_an_error(monkeypatch):
    from laplace_lab.paper_checks.fsp_laplace.experiments import uci

    monkeypatch.setattr(uci, "context_box", wrong.context_box_over_all_splits)
    v = run_claim(_claim("uci-fsp-beats-laplace-ell"), Context())
    assert v.status is Status.ERROR
    assert "the context points reach beyond the training inputs' widened box" in v.reason


def test_mauna_loa_context_over_the_test_months_is_an_error(monkeypatch):
    from laplace_lab.networks.fsp_training import ContextBox
    from laplace_lab.paper_checks.fsp_laplace.experiments import mauna_loa

    t_test = mauna_loa.load_mauna_loa().t_test

    class TransductiveBox(ContextBox):
        """A box fitted over the training and the test months."""

        @classmethod
        def around(cls, X, *, widen=0.5):
            return ContextBox.around(np.vstack([np.asarray(X), t_test]), widen=widen)

    monkeypatch.setattr(mauna_loa, "ContextBox", TransductiveBox)
    v = run_claim(_claim("mauna-loa-fsp-beats-laplace"), Context())
    assert v.status is Status.ERROR
    assert "the context points reach beyond the training inputs' widened box" in v.reason


@pytest.mark.filterwarnings("ignore:The optimal value found")  # the GP fit on leaked months
def test_mauna_loa_scaler_fitted_on_all_months_is_an_error(monkeypatch):
    from laplace_lab.paper_checks.fsp_laplace import _real_data
    from laplace_lab.paper_checks.fsp_laplace.experiments import mauna_loa

    true = mauna_loa.load_mauna_loa()
    t_all = np.concatenate([true.t_train[:, 0], true.t_test[:, 0]])
    y_all = np.concatenate([true.y_train, true.y_test])
    t_all, y_all = (t_all - t_all.mean()) / t_all.std(), (y_all - y_all.mean()) / y_all.std()
    n = true.y_train.size
    leaky = true._replace(
        t_train=t_all[:n, None], y_train=y_all[:n], t_test=t_all[n:, None], y_test=y_all[n:]
    )
    monkeypatch.setattr(_real_data, "load_mauna_loa", lambda: leaky)
    v = run_claim(_claim("mauna-loa-fsp-beats-laplace"), Context())
    assert v.status is Status.ERROR
    assert "the scaler was not fitted on the training rows alone" in v.reason


def test_context_points_on_a_test_input_are_an_error():
    from laplace_lab.paper_checks.fsp_laplace.experiments.audits import require_context_apart
    from laplace_lab.paper_checks.verification.registry import ImplementationError

    rng = np.random.default_rng(0)
    X_train, X_test = rng.normal(size=(50, 2)), rng.normal(size=(10, 2)) * 0.5
    require_context_apart(rng.uniform(-1, 1, (20, 2)) * 0.1, X_train, X_test, widen=0.5, what="ok")
    with pytest.raises(ImplementationError, match="coincides with a held-out input"):
        leaky = np.vstack([rng.uniform(-1, 1, (20, 2)) * 0.1, X_test[:3]])
        require_context_apart(leaky, X_train, X_test, widen=0.5, what="leak")


def test_laplace_evidence_without_occam_factor_is_an_error(monkeypatch):
    # Patched where the Laplace baseline looks it up.
    from laplace_lab.networks import fsp_laplace

    monkeypatch.setattr(
        fsp_laplace, "linearized_log_evidence", wrong.evidence_without_log_determinant
    )
    v = run_claim(_claim("uci-fsp-beats-laplace-ell"), Context())
    assert v.status is Status.ERROR
    assert "the Laplace evidence is not the exact evidence of a linear model" in v.reason
