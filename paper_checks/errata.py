"""Errata: internal inconsistencies and errors found in the five papers.

Each entry says where the paper is wrong or inconsistent, what is right, and which claim
check (if any) gives the evidence. The report prints them in its errata section.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ERRATA", "Erratum"]


@dataclass(frozen=True)
class Erratum:
    """One error or inconsistency in a paper."""

    paper: str
    location: str
    says: str
    correction: str
    evidence: str = ""


ERRATA: tuple[Erratum, ...] = (
    Erratum(
        "subnetwork-laplace-optimality",
        "§4, before Theorem 2",
        "Last k 'simply chooses the indices {1, 2, …, k}'.",
        "Appendix B and C define Last k as the final k indices of the flat parameter vector "
        "(first layer first); {1, …, k} would be the first layer. We follow Appendix B.",
    ),
    Erratum(
        "subnetwork-laplace-optimality",
        "§3, Greedy–Laplace prose vs Algorithm 2",
        "Greedy–Laplace retains 'those coordinates exhibiting the greatest variability'.",
        "Algorithm 2 picks the largest diagonal entry of the (Schur-complemented) precision, "
        "i.e. the smallest conditional variance. The algorithm box is what is implemented.",
        "claim greedy-retains-greatest-variability",
    ),
    Erratum(
        "subnetwork-laplace-optimality",
        "§3, Greedy–Laplace complexity paragraph",
        "'The resulting matrix Ω^(i+1) has dimension (2k − i + 1) × (2k − i + 1).'",
        "Ω^(1) is 2k × 2k and each step removes one coordinate, so Ω^(i+1) is "
        "(2k − i) × (2k − i); the stated per-step cost O((2k − i)²) agrees with the corrected "
        "size.",
        "claim greedy-iterate-dimension",
    ),
    Erratum(
        "subnetwork-laplace-optimality",
        "Theorem 3 (statement)",
        "The statement does not restrict the prior precision V.",
        "The proof (App. A.5) uses V = cI ('Since V is a multiple of identity'); the theorem "
        "holds under that assumption, which our check enforces.",
        "claims theorem-3a, theorem-3b",
    ),
    Erratum(
        "subnetwork-laplace-optimality",
        "App. A.2, proof of Theorem 1",
        "Uses A⁻¹ = (Λ_SS)⁻¹ and calls F⁻¹ and C − BᵀA⁻¹B positive definite.",
        "Λ_SS is singular whenever Λ is rank-deficient (always for a GGN with N < p), and "
        "C − BᵀA⁻¹B is only PSD. The identity and the non-negativity of both terms hold with "
        "the pseudo-inverse, since B lies in range(A) for PSD Λ; Theorem 1 stands.",
        "claim theorem-1-proof-identity",
    ),
    Erratum(
        "subnetwork-laplace-optimality",
        "App. D.3, Figure 7 vs Table 1 and Figure 3",
        "Figure 7 averages cumulative regret over 'twenty random seeds'.",
        "Table 1, Figure 3 and §5.2 report 25 seeds for the same experiment; one of the two "
        "counts is wrong.",
    ),
    Erratum(
        "subnetwork-laplace-optimality",
        "App. D.1, Wheel Bandit environment",
        "'We use the Wheel Bandit environment of Riquelme et al. [2018]' with the central "
        "arm and the non-matching outer arms all at mean μ_c = 1.0, σ0 = 0.01.",
        "In Riquelme et al.'s environment (and their public sampler) the central arm has "
        "mean 1.2 and the outer arms 1.0 (σ = 0.05 inside the disk), so that the central "
        "arm is optimal for ‖x‖ ≤ δ. With equal means every arm is optimal inside the disk "
        "and regret accrues only in the annulus: a different, easier-to-score problem.",
    ),
    Erratum(
        "subnetwork-laplace-optimality",
        "App. C.2 (Fig. 4) and C.5 (Fig. 5): parameter counts",
        "Binary ResNet-32 has 466,906 parameters, binary ResNet-56 855,930, and the ten-class "
        "ResNet-32 of Fig. 5 467,556.",
        "466,906 is the ten-class ResNet-32 (the binary one has 466,321 with projection "
        "shortcuts); no faithful reading gives 855,930 (binary ResNet-56: 855,185); 467,556 = "
        "466,906 + 650 counts the ten-class head twice.",
        "claims resnet32-binary-parameter-count, resnet56-binary-parameter-count, "
        "resnet32-10class-figure5-parameter-count",
    ),
    Erratum(
        "subnetwork-laplace-optimality",
        "App. A.4, display after (A5)",
        "sup_i |s_i − Λ_ii| = o_P(√(log p / N)).",
        "For sub-Gaussian gradients the maximum is Θ_P(√(log p / N)); the proof of Theorem 2 "
        "needs O_P and a constant in the separation (A6).",
        "claim score-concentration-rate",
    ),
    Erratum(
        "self-supervised-laplace",
        "Proof of Theorem 1, eqs. (19)–(20)",
        "ℓ_D(θ̃) = ℓ_D(θ̂) + O(n⁻²).",
        "J = −ℓ_D″ grows like n, so the gap is Θ(1/n); the theorem's O(1/n) conclusion holds.",
        "claim theorem1-proof-eq19",
    ),
    Erratum(
        "self-supervised-laplace",
        "eq. (8) and Corollary 1",
        "Eq. (8) uses |J(θ̃)|; Corollary 1 uses J̃ without the 1/n factor it later assumes.",
        "Eq. (8) needs |J̃(θ̃)|, the Hessian of the augmented likelihood; Corollary 1 holds for "
        "the 1/n-normalised J̃, which is what is checked.",
    ),
    Erratum(
        "self-supervised-laplace",
        "App. A.1, highest-density region",
        "The derivation integrates the L2 loss as a density and ends with {|y − f| ≥ c}.",
        "That set is the complement of an interval, not a highest-density region. Eq. (27) "
        "replaces the likelihood 𝓛 = exp ℓ̃ by the loss (y − f)², and six more displayed "
        "steps fail as algebra (eq. 28's extra −ℓ̃, |b*| for (b*)², the cube-root lines, "
        "the rewrite in 𝔠).",
        "claim hdr-derivation-app-a1",
    ),
    Erratum(
        "subnetwork-inference",
        "§5, eq. (23)",
        "Eq. (23) Σ_{d∉S} σ_d² is an approximation of (22) under an independence assumption.",
        "For the marginal covariance (Ω⁻¹)_SS, (23) equals (22) exactly for every Ω; for the "
        "conditional Ω_SS⁻¹ the method actually uses, (22) exceeds (23) in every case we "
        "sampled, so (23) is optimistic for the posterior that is built.",
        "claim w2-diagonal-identity",
    ),
    Erratum(
        "subnetwork-inference",
        "§4, prior rescaling λ_S = λ·S/D",
        "The rescaling is introduced to preserve the magnitude of the predictive variance.",
        "With a subnetwork-size-dependent prior, the subnetwork predictive variance is no "
        "longer monotone in nested subnetworks (the Theorem-1-type ordering needs a fixed "
        "prior); counterexamples are reported by the claim.",
        "claim prior-rescaling",
    ),
    Erratum(
        "surrogate-ntk-lla",
        "eqs. (5)–(6)",
        "Variance formulas of the JVP sketch of the NTK.",
        "They hold for a single output only; for C > 1 outputs the entrywise variance is "
        "(J_a·J_b)² + ‖J_a‖²‖J_b‖² (Gaussian probes), minus 2Σ_i J_ai²J_bi² (Rademacher).",
    ),
    Erratum(
        "fsp-laplace",
        "eq. (3.9)",
        "The posterior covariance approximation drops the cross terms PΛP₀.",
        "The dropped terms are not zero in general; their size relative to ‖Λ‖ is measured "
        "beside the paper's Table C.2 ratios ‖P₀ΛP₀‖_F/‖Λ‖_F.",
    ),
)
