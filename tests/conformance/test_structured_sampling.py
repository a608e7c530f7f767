"""Structured posterior samples: the oracle's dense precisions against closed forms,
laplace-lab's samplers as exact linear maps of their normal draws, the Bartlett factor
against the exact mean of the likelihood-ratio statistic, and the distance of every case's
posterior from the wrong ones beside it, measured in the covariance test's own statistic."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

from laplace_lab.conformance import DenseOracle, build_problem, cases
from laplace_lab.conformance.adapters import numerics as ours
from laplace_lab.conformance.catalog.structured_sampling import (
    N_SAMPLES,
    sample_arguments,
    structured_precision,
)
from laplace_lab.conformance.gaussian_samples import LEVEL, bartlett_factor, expected_statistic
from laplace_lab.conformance.kronecker import KFACOracle
from laplace_lab.numerics import LowRankLaplace
from laplace_lab.numerics.kfac import fit_kfac

STRUCTURED = {n: c for n, c in cases().items() if c.capability == "structured_posterior_samples"}


def _oracle(name: str) -> DenseOracle:
    return DenseOracle(build_problem(name, seed=0))


def _design(problem) -> np.ndarray:
    X = problem.X_train.numpy()
    return np.hstack([X, np.ones((X.shape[0], 1))])  # f = wᵀx + b, parameters() order


@pytest.mark.parametrize(("k", "n"), [(12, 4000), (41, N_SAMPLES), (59, N_SAMPLES), (59, 4000)])
def test_the_bartlett_factor_gives_the_statistic_the_mean_of_its_chi_square(k, n):
    # nŜ ~ Wishart_k(n, I): E log det(nŜ) = Σ_{i<k} ψ((n − i)/2) + k log 2, so the exact
    # mean of λ = n(tr Ŝ − log det Ŝ − k) is −n E log det Ŝ
    df = k * (k + 1) // 2
    e_logdet = sum(special.digamma((n - i) / 2) for i in range(k)) + k * np.log(2 / n)
    mean = -n * e_logdet
    assert abs(bartlett_factor(k, n) * mean - df) < 2e-5 * df  # O(n⁻²): 4e-7 to 1.2e-5
    # uncorrected, the mean is off by k(2k² + 3k − 1)/(12n): 8.8 at k = 59, n = 4000
    assert mean - df == pytest.approx(k * (2 * k * k + 3 * k - 1) / (12 * n), rel=0.01)


def test_the_dense_structured_precisions_are_their_closed_forms_where_those_exist():
    # diagonal: orthogonal design columns, so Ω = ΦᵀΦ/σ0² + V is diagonal itself
    o = _oracle("linear-gaussian-orthogonal")
    Phi = _design(o.problem)
    exact = Phi.T @ Phi / o.problem.noise_var + np.diag(o.problem.prior_vector())
    got = structured_precision(o, "diag", convention=None, rank=None)
    np.testing.assert_allclose(got, np.diag(np.diag(exact)), rtol=1e-12, atol=0)
    assert np.abs(exact - np.diag(np.diag(exact))).max() < 1e-12 * np.abs(exact).max()
    # joint KFAC of one Linear layer under a Gaussian likelihood is the GGN itself
    o = _oracle("linear-gaussian")
    Phi = _design(o.problem)
    exact = Phi.T @ Phi / o.problem.noise_var + o.problem.prior_precision * np.eye(Phi.shape[1])
    got = structured_precision(o, "kron", convention="joint", rank=None)
    np.testing.assert_allclose(got, exact, rtol=1e-12, atol=1e-12 * np.abs(exact).max())
    # low rank: rank p is Ω, rank r keeps the top r eigenvalues of ΦᵀΦ/σ0²
    o = _oracle("linear-gaussian-spectrum")
    Phi = _design(o.problem)
    gram = Phi.T @ Phi / o.problem.noise_var
    V = o.problem.prior_vector()
    got = structured_precision(o, "low_rank", convention=None, rank=Phi.shape[1])
    np.testing.assert_allclose(got, gram + np.diag(V), rtol=1e-11, atol=1e-11 * gram.max())
    part = structured_precision(o, "low_rank", convention=None, rank=2) - np.diag(V)
    lam = np.sort(np.linalg.eigvalsh(gram))[::-1]
    top = np.sort(np.linalg.eigvalsh(part))[::-1]
    np.testing.assert_allclose(top[:2], lam[:2], rtol=1e-11)
    assert np.abs(top[2:]).max() < 1e-10 * lam[0]


def _covariance_of_kfac_draws(model, kfac) -> np.ndarray:
    """T Tᵀ for the linear map z ↦ Δθ of ``kfac_draws`` (its columns: unit draws)."""
    sizes = [
        (QG.shape[0], QA.shape[0]) for (_, QA), (_, QG) in zip(kfac.eig_A, kfac.eig_G, strict=True)
    ]
    m = sum(a * b for a, b in sizes)
    z, start = [], 0
    for a, b in sizes:
        unit = np.zeros((m, a * b))
        unit[start : start + a * b] = np.eye(a * b)
        z.append(unit.reshape(m, a, b))
        start += a * b
    T = ours.kfac_draws(model, kfac, z).T  # (p, m)
    return T @ T.T


@pytest.mark.parametrize("name", ["mlp-regression", "mlp-multiclass"])
@pytest.mark.parametrize("convention", ["joint", "separate"])
def test_the_kfac_sampler_has_the_covariance_of_the_oracles_kfac_precision(name, convention):
    o = _oracle(name)
    p = o.problem
    kfac = fit_kfac(
        p.model,
        p.X_train,
        likelihood=p.likelihood,
        prior_precision=p.prior_precision,
        noise_var=p.noise_var,
        convention=convention,
    )
    cov = _covariance_of_kfac_draws(p.model, kfac)
    exact = np.linalg.inv(KFACOracle(o, convention).precision)
    np.testing.assert_allclose(cov, exact, rtol=0, atol=1e-10 * np.abs(exact).max())


def test_the_low_rank_sampler_has_the_covariance_of_the_exact_low_rank_precision():
    # perturbation and solve on a non-isotropic V: T = [T_p, T_r] with T Tᵀ = Ω_r⁻¹
    o = _oracle("mlp-regression-diagonal-prior")
    p = o.problem
    r = sample_arguments(o, "low_rank", None)["rank"]
    ggn = ours._ggn(p.model, p.X_train, p.likelihood, p.noise_var, p.prior_precision)
    low = LowRankLaplace.from_ggn(ggn, r, rng=0)
    T = np.vstack(
        [
            low.draws(np.eye(p.p), np.zeros((p.p, r))),
            low.draws(np.zeros((r, p.p)), np.eye(r)),
        ]
    ).T
    exact = np.linalg.inv(o.low_rank_omega(r))
    np.testing.assert_allclose(T @ T.T, exact, rtol=0, atol=1e-7 * np.abs(exact).max())


def _wrong_covariances(o: DenseOracle, args: dict) -> dict[str, np.ndarray]:
    """The posteriors a target could confuse with the case's: the full one, and per
    structure diag(Ω⁻¹), the other KFAC convention, ranks r ± 1, an isotropic V."""
    wrong = {"full": np.linalg.inv(o.omega)}
    if args["structure"] == "diag":
        wrong["diag(Ω⁻¹)"] = np.diag(np.diag(np.linalg.inv(o.omega)))
    elif args["structure"] == "kron":
        other = {"joint": "separate", "separate": "joint"}[args["convention"]]
        wrong["other convention"] = np.linalg.inv(KFACOracle(o, other).precision)
    else:
        r = args["rank"]
        wrong["rank r − 1"] = np.linalg.inv(o.low_rank_omega(r - 1))
        wrong["rank r + 1"] = np.linalg.inv(o.low_rank_omega(r + 1))
        if np.ptp(o.V) > 0:
            lam, U = o.ggn_spectrum
            isotropic = (U[:, :r] * lam[:r]) @ U[:, :r].T + np.mean(o.V) * np.eye(o.V.size)
            wrong["isotropic V"] = np.linalg.inv(isotropic)
    return wrong


def test_every_case_is_far_from_the_wrong_posteriors_beside_it():
    # n (tr C − log det C − k) for the draws of a wrong posterior, against the critical
    # excess of the corrected statistic over its mean: at least 4.9 times it on every case
    # (the binary KFAC conventions are the nearest pair), so a wrong sampler fails
    margins = {}
    for name, case in STRUCTURED.items():
        o = _oracle(case.problem)
        structure = name.split("/")[1].replace("-", "_")
        convention = name.rsplit("-", 1)[1] if structure == "kron" else None
        args = sample_arguments(o, structure, convention)
        P = structured_precision(o, structure, convention=args["convention"], rank=args["rank"])
        k = P.shape[0]
        df = k * (k + 1) // 2
        critical = stats.chi2.isf(LEVEL, df) / bartlett_factor(k, N_SAMPLES) - df
        for what, cov in _wrong_covariances(o, args).items():
            margins[name, what] = expected_statistic(P, cov, N_SAMPLES) / critical
        assert expected_statistic(P, np.linalg.inv(P), N_SAMPLES) < 1e-6
    assert len(margins) >= 2 * len(STRUCTURED)
    assert min(margins.values()) > 4.5, min(margins.items(), key=lambda kv: kv[1])


def test_the_low_rank_cases_have_a_clear_eigengap():
    for case in (c for n, c in STRUCTURED.items() if "/low-rank/" in n):
        o = _oracle(case.problem)
        r = sample_arguments(o, "low_rank", None)["rank"]
        lam = o.ggn_spectrum[0]
        assert lam[r - 1] / lam[r] > 1.4 and (lam[r - 1] - lam[r]) / lam[0] > 0.14
