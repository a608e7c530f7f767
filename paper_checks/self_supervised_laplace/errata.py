"""Errata of this paper: where it is wrong or inconsistent, what is right, and the claims
that give the evidence (printed in the report's errata section, linked both ways)."""

from laplace_lab.paper_checks.verification import Erratum, register_errata

register_errata(
    Erratum(
        "self-supervised-laplace",
        "Proof of Theorem 1, eqs. (19)–(20)",
        "ℓ_D(θ̃) = ℓ_D(θ̂) + O(n⁻²).",
        "J = −ℓ_D″ grows like n, so the gap is Θ(1/n); the theorem's O(1/n) conclusion holds.",
        ("theorem1-proof-eq19",),
    ),
    Erratum(
        "self-supervised-laplace",
        "§3, eq. (8)",
        "∫ exp[−½(θ − θ̃)ᵀ J̃(θ̃)(θ − θ̃)] dθ = (2π)^{q/2} |J(θ̃)|^{−1/2}.",
        "The Gaussian integral with Σ = [J̃(θ̃)]⁻¹ is (2π)^{q/2} |J̃(θ̃)|^{−1/2}, the Hessian of "
        "the augmented likelihood; eq. (9) and what follows use |J̃(θ̃)|.",
        ("eq8-gaussian-integral-determinant",),
    ),
    Erratum(
        "self-supervised-laplace",
        "Corollary 1",
        "Corollary 1 writes J̃(θ̃) = −ℓ̃''(θ̃)/n, with the 1/n factor that J̃ of eqs. (8)–(12) "
        "does not carry.",
        "Corollary 1 holds for the 1/n-normalised J̃, which is what is checked.",
        ("corollary1-rates",),
    ),
    Erratum(
        "self-supervised-laplace",
        "§5, conjugate experiments",
        "'Numerical instabilities emerged in our experiments for n ≥ 1000000 for ASSLA.'",
        "ASSLA (eq. 17) is stable at n = 10⁶ when evaluated in float64 on sufficient "
        "statistics (its divergence keeps falling like 1/n). The instability is reproduced by "
        "evaluating eq. (16) with float32 log-likelihood sums, which subtracts two O(n) "
        "numbers: an artefact of that arithmetic, not of the method.",
        ("assla-numerically-unstable-large-n",),
    ),
    Erratum(
        "self-supervised-laplace",
        "App. A.1, highest-density region",
        "The derivation integrates the L2 loss as a density and ends with {|y − f| ≥ c}.",
        "That set is the complement of an interval, not a highest-density region. Eq. (27) "
        "replaces the likelihood 𝓛 = exp ℓ̃ by the loss (y − f)², and six more displayed "
        "steps fail as algebra (eq. 28's extra −ℓ̃, |b*| for (b*)², the cube-root lines, "
        "the rewrite in 𝔠).",
        ("hdr-derivation-app-a1",),
    ),
)
