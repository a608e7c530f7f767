"""IPV as the idealisation of the empirical predictive variance (Raha, Khare & Patra, App. A.1).

The appendix bounds |E_x*[PV(S)] − IPV(S)| by O_P(√(k³ log p / N)) uniformly over |S| = k and
concludes that IPV idealises PV as N → ∞. IPV itself is at most kσ0²/N, so the bound exceeds
IPV by a factor of order √(k log p · N): it is met by E PV = 0 and by E PV = 3·IPV alike and
does not say that one approximates the other. The claim is checked under both readings: the
literal bound, and the relative error |E PV − IPV| / IPV → 0 that "idealises" needs.
"""

from __future__ import annotations

import numpy as np

from laplace_lab.paper_checks.subnetwork_laplace_optimality.studies import ipv_vs_pv
from laplace_lab.paper_checks.verification import (
    Context,
    Kind,
    Mutant,
    Setting,
    Status,
    Verdict,
    claim,
)
from laplace_lab.studies.runner import replicate
from laplace_lab.theory import fit_rate

__all__ = ["RELATIVE_TOLERANCE", "relative_reading"]

PAPER = "subnetwork-laplace-optimality"

#: The largest mean relative error |E PV − IPV| / IPV allowed at the largest N. Fixed before
#: measuring: for Gaussian gradients N·(E PV − IPV) = tr(W⁻¹) − k with W ~ Wishart_k(N, I/N),
#: so the relative error is about (k+1)/N + √(2/(kN)): 0.015 (k = 2) and 0.006 (k = 8) at
#: N = 3,000. A tenth leaves six times that room; an IPV off by more would misstate the
#: predictive variance it stands for by more than the gaps between subsets it ranks.
RELATIVE_TOLERANCE = 0.1


def _expected_pv_zero(gram_ss: np.ndarray, lam_ss: np.ndarray, n: int) -> float:
    return 0.0


def _expected_pv_tripled(
    gram_ss: np.ndarray, lam_ss: np.ndarray, n: int, original=ipv_vs_pv.expected_pv
) -> float:
    return 3.0 * original(gram_ss, lam_ss, n)


def relative_reading(
    ns: list[int], relative: dict[str, list[float]], tolerance: float = RELATIVE_TOLERANCE
) -> tuple[bool, dict[str, dict]]:
    """Whether the mean relative error of every series tends to 0 along ``ns``.

    A series passes when its fitted exponent in N (log-log OLS, 95% interval) has an upper
    end below 0 and its value at the largest N is at most ``tolerance``. Returns the overall
    outcome and, per series, the fit and the last value.
    """
    out = {}
    for name, values in relative.items():
        fit = fit_rate(ns, values)
        last = float(values[-1])
        out[name] = {
            "slope": fit.slope,
            "ci": [fit.ci_low, fit.ci_high],
            "at_largest_N": last,
            "passes": bool(fit.ci_high < 0 and last <= tolerance),
        }
    return all(s["passes"] for s in out.values()), out


@claim(
    paper=PAPER,
    name="ipv-approximates-expected-pv",
    kind=Kind.EXACT,
    setting=Setting.paper(),
    location="App. A.1, final display",
    statement=(
        "|E_x*[PV(S)] − IPV(S)| = O_P(√(k³ log p / N)) uniformly over |S| = k, so IPV "
        "idealises the empirical predictive variance as N → ∞."
    ),
    mutants=(
        Mutant(
            "expected-pv-zero",
            "E_x*[PV(S)] replaced by 0",
            {ipv_vs_pv.expected_pv: _expected_pv_zero},
        ),
        Mutant(
            "expected-pv-tripled",
            "E_x*[PV(S)] replaced by three times its value",
            {ipv_vs_pv.expected_pv: _expected_pv_tripled},
        ),
    ),
)
def ipv_approximates_expected_pv(ctx: Context) -> Verdict:
    """App. A.1, final display: |E_x*[PV(S)] − IPV(S)| = O_P(√(k³ log p / N)) uniformly over
    |S| = k, IPV being the "idealized/population version of the predictive variance metric
    PV(S)" (§4)."""
    ns = [30, 100, 300, 1000, 3000] + ([10_000, 30_000] if ctx.full else [])
    reps = 200 if ctx.full else 40
    inside, total, slack = 0, 0, np.inf
    relative: dict[str, list[float]] = {}
    n_ipv: dict[str, list[float]] = {}
    for k, p in ((2, 20), (8, 200)):
        for N in ns:
            params = {"N": N, "p": p, "k": k, "n_test": 10}
            runs = replicate(ipv_vs_pv.STUDY, params, reps, seed=ctx.seed)
            bound = np.sqrt(k**3 * np.log(p) / N)
            inside += sum(r[f"error_{s}"] <= bound for r in runs for s in ("fixed", "selected"))
            total += 2 * reps
            slack = min(slack, bound / max(r["ipv_selected"] for r in runs))
            for s in ("fixed", "selected"):
                key = f"k={k}, p={p}, S {s}"
                relative.setdefault(key, []).append(
                    float(np.mean([r[f"relative_error_{s}"] for r in runs]))
                )
                n_ipv.setdefault(key, []).append(float(N * np.mean([r[f"ipv_{s}"] for r in runs])))
    literal = inside == total
    vanishes, fits = relative_reading(ns, relative)
    fit_text = "; ".join(
        f"{key}: {f['at_largest_N']:.3g} at N = {ns[-1]}, exponent {f['slope']:.2f} "
        f"[{f['ci'][0]:.2f}, {f['ci'][1]:.2f}]"
        for key, f in fits.items()
    )
    readings = {
        "literal bound |E PV − IPV| ≤ √(k³ log p / N)": "holds" if literal else "fails",
        "relative error |E PV − IPV| / IPV → 0": "holds" if vanishes else "fails",
    }
    return Verdict(
        Status.CONFIRMED if literal and vanishes else Status.REFUTED,
        measured=max(f["at_largest_N"] for f in fits.values()),
        expected="relative error → 0 (and inside the bound)",
        tolerance=(
            f"mean relative error ≤ {RELATIVE_TOLERANCE} at N = {ns[-1]} and the upper end of "
            "the 95% CI of its exponent in N below 0, for every (k, p, S)"
        ),
        evidence=(
            "The ipv-vs-pv study's replications (random PSD Λ of condition 10, Gaussian "
            f"gradients, σ0² = 1, V = I; S fixed and chosen by Gradient-Laplace; {reps} "
            f"replications per N in {ns}).\n"
            f"- Literal reading: {inside}/{total} replications inside √(k³ log p / N). The "
            f"bound is at least {slack:.0f}× IPV itself at every N: it is met by E PV = 0 "
            "or 3·IPV too, so it does not constrain how well IPV approximates E PV.\n"
            f"- Relative reading (what 'idealises' needs): mean |E PV − IPV| / IPV {fit_text}. "
            "N·IPV → kσ0² (N·IPV at the largest N: "
            + ", ".join(f"{key}: {v[-1]:.2f}" for key, v in n_ipv.items())
            + "), while N·|E PV − IPV| → 0 like the Wishart bias k(k+1)/(N − k − 1) plus "
            "fluctuations of order √(2k/N).\n"
            "- The paper's rate is true but loose by a factor of order N; the statement holds "
            "in the relative reading."
        ),
        details={"readings": readings, "relative_error": relative, "fits": fits, "N": ns},
    )
