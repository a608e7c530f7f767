"""Errata of this paper: where it is wrong or inconsistent, what is right, and the claims
that give the evidence (printed in the report's errata section, linked both ways)."""

from laplace_lab.paper_checks.verification import Erratum, register_errata

register_errata(
    Erratum(
        "surrogate-ntk-lla",
        "eqs. (5)–(6)",
        "Var(z zᵀ) = 2 tr(JᵀJ)² (Gaussian), minus 2‖diag(JᵀJ)‖² (Rademacher), for J ∈ ℝ^{C×P}.",
        "Ambiguous for C > 1 outputs. Read as the variance of the scalar ‖z‖² = tr(z zᵀ) with "
        "tr((JᵀJ)²), they hold for every C. Read entrywise (or summed over entries) they fail "
        "with either reading of tr(·)²: the entry (a, b) has variance (J_a·J_b)² + "
        "‖J_a‖²‖J_b‖² (Gaussian probes), minus 2Σ_i J_ai²J_bi² (Rademacher).",
        ("jvp-variance-multi-output", "jvp-variance-multi-output-trace"),
    ),
    Erratum(
        "surrogate-ntk-lla",
        "§3 and Table 1",
        "The full LLA (and LLA-KFAC) is intractable for the FMNIST network, so last-layer LLA "
        "(LLLA) is among the compared methods.",
        'Table 1 prints an "LLA" row and no LLLA row; by the text\'s own argument the row '
        "can only be the last-layer LLA, mislabelled.",
        ("table1-lla-row",),
    ),
)
