"""Errata of this paper: where it is wrong or inconsistent, what is right, and the claims
that give the evidence (printed in the report's errata section, linked both ways)."""

from laplace_lab.paper_checks.verification import Erratum, register_errata

register_errata(
    Erratum(
        "fsp-laplace",
        "eq. (3.9)",
        "The posterior covariance approximation drops the cross terms PΛP₀.",
        "The dropped terms are not zero in general; their size relative to ‖Λ‖ is measured "
        "beside the paper's Table C.2 ratios ‖P₀ΛP₀‖_F/‖Λ‖_F, and it exceeds them in every "
        "configuration.",
        ("lambda-decomposition-eq-3-9", "p0-lambda-p0-negligible"),
    ),
    Erratum(
        "fsp-laplace",
        "Algorithm 2, step 3 and §3.2",
        "Lanczos on Σ(C, C) gives a rank r ≪ min(n_C d', p) factor with L Lᵀ ≈ Σ(C, C)†.",
        "In the paper's App. B.1 settings (n_C d' = 100, 500-step cap) Lanczos does not break "
        "down before n_C d' steps for three of the four priors and tasks, so Algorithm 2 runs "
        "at full rank there; stopped at n_C d'/2 it misplaces the predictive variances by up "
        "to 100 %.",
        ("lanczos-factor",),
    ),
    Erratum(
        "fsp-laplace",
        "App. A.1, remark after Assumption A.2",
        "Assumption A.2 holds if ℓ⁽ⁱ⁾(f⁽ⁱ⁾) > K(f⁽ⁱ⁾) + η‖f⁽ⁱ⁾‖² for all f⁽ⁱ⁾ and every η > 0; "
        "'for instance, this is true for a Gaussian likelihood'.",
        "The sign of η‖f‖² is that of Assumption A.2 flipped, and K(f⁽ⁱ⁾) stands for K(η): "
        "as printed the condition fails for the Gaussian likelihood at every η ≥ 1/(2λ²) "
        "(the infimum is −∞); with A.2's sign, ℓ(f) ≥ K(η) − η‖f‖², it holds, and "
        "Propositions 1–2 are unaffected.",
        ("assumption-a2-gaussian-example",),
    ),
)
