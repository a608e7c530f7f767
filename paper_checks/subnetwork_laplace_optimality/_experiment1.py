"""Shared verdict logic of the Experiment-1 claims of Raha, Khare & Patra (arXiv:2605.09075).

Every setup (§5.1 Setups A/B, App. C.5 Setup C, App. C.6 Setup D) states the same ordering:
Gradient- and Greedy-Laplace give a lower W2 to the full linearized-Laplace predictive than
Subnet-Diagonal and Last-k. All methods of one replication share its MAP, so the ordering is judged
on *paired* per-seed differences; NeuralLinear (a fixed k, the last layer) is compared with the
better proposed method along the k-grid. The helpers take an
:class:`laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.experiment1.ExperimentResult`
and return verdicts or their parts.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from laplace_lab.paper_checks.verification import Context, Status, Verdict

PROPOSED = ("gradient_laplace", "greedy_laplace")
BASELINES = ("subnet_diagonal", "last_k")


def _paired(res: Any, a: str, b: str) -> np.ndarray:
    """(n_seeds, n_k) per-seed differences W2_a − W2_b (same MAP within a seed)."""
    return np.array([r.w2[a] - r.w2[b] for r in res.seeds])


def _mean_se(diffs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = diffs.mean(axis=0)
    if len(diffs) < 2:
        return mean, np.full_like(mean, np.inf)
    return mean, diffs.std(axis=0, ddof=1) / np.sqrt(len(diffs))


def ordering_verdict(
    res: Any,
    *,
    label: str,
    figures: tuple[str, ...] = (),
    k_min: int = 200,
    alpha: float = 0.05,
) -> Verdict:
    """Gradient/Greedy below Subnet-Diagonal/Last-k at every k ≥ ``k_min`` (paired seeds).

    Per seed the difference (worse of Gradient/Greedy) − (better of Subnet-Diagonal/Last-k)
    is formed at each k. Each k ≥ ``k_min`` gets two one-sided tests at level
    ``alpha / n_k`` (Bonferroni over the n_k grid points, family-wise ``alpha``): the paired
    Student-t test (mean beyond t_{1 − alpha/n_k, n − 1} standard errors) and, for the
    settling direction only, the exact sign test (negative in all n seeds, p = 2⁻ⁿ). REFUTED
    where the t-test shows the reverse ordering; CONFIRMED where every k is settled;
    NOT_REPRODUCIBLE_HERE (inconclusive) otherwise.
    """
    ks = np.asarray(res.seeds[0].ks)
    m = res.w2_mean
    ours = np.maximum(m[PROPOSED[0]], m[PROPOSED[1]])
    base = np.minimum(m[BASELINES[0]], m[BASELINES[1]])
    sel = ks >= k_min
    if not np.any(sel):
        raise ValueError(f"the k-grid {ks.tolist()} has no k ≥ {k_min}")
    diffs = np.array(
        [
            np.maximum(r.w2[PROPOSED[0]], r.w2[PROPOSED[1]])
            - np.minimum(r.w2[BASELINES[0]], r.w2[BASELINES[1]])
            for r in res.seeds
        ]
    )
    mean, se = _mean_se(diffs)
    n, level = len(diffs), alpha / int(sel.sum())
    crit = float(stats.t.ppf(1 - level, n - 1)) if n > 1 else np.inf
    reversed_ = mean > crit * se
    settled = (mean < -crit * se) | (np.all(diffs < 0, axis=0) & (0.5**n <= level))
    fails = [int(k) for k in ks[sel & reversed_]]
    unclear = [int(k) for k in ks[sel & ~settled & ~reversed_]]
    ratio = float(np.max(ours[sel] / base[sel]))
    ev = (
        f"{label}; mean W2 per k: "
        + "; ".join(f"{name} " + ", ".join(f"{v:.3g}" for v in vals) for name, vals in m.items())
        + f" at k = {ks.tolist()}. Max ratio (worse of Grad/Greedy)/(better of "
        f"SubnetDiag/Last-k) over k ≥ {k_min}: {ratio:.3f}."
    )
    sign = "allowed" if 0.5**n <= level else "too few seeds"
    ev += (
        f" Paired one-sided tests over {n} seeds at level {alpha:g}/{int(sel.sum())} per k: "
        f"t critical value {crit:.2f}; sign test {sign}."
    )
    if fails:
        ev += f" Ordering reversed (t-test) at k = {fails}."
    if unclear:
        ev += f" Neither direction significant (inconclusive) at k = {unclear}."
    details: dict[str, Any] = {name: [float(v) for v in vals] for name, vals in m.items()}
    details["se"] = {name: [float(v) for v in vals] for name, vals in res.w2_se.items()}
    details["ks"] = ks.tolist()
    details["paired_difference_mean"] = mean.tolist()
    status = (
        Status.REFUTED if fails else Status.NOT_REPRODUCIBLE_HERE if unclear else Status.CONFIRMED
    )
    return Verdict(
        status,
        measured=ratio,
        expected=f"< 1 at every k ≥ {k_min}",
        tolerance=f"paired one-sided t / sign tests, family-wise level {alpha:g} over k ≥ {k_min}",
        evidence=ev,
        details=details,
        figures=figures,
    )


def greedy_minus_gradient(res: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per k: paired mean and standard error over seeds of W2(Greedy) − W2(Gradient), and
    the number of seeds in which Greedy is worse (§5.1: Greedy refines Gradient's screen)."""
    diffs = _paired(res, "greedy_laplace", "gradient_laplace")
    return (*_mean_se(diffs), np.sum(diffs > 0, axis=0))


def neural_linear_match(res: Any) -> dict[str, float]:
    """NeuralLinear's k and W2 against the better proposed method along the k-grid.

    ``w2_best_at_k``: min(Gradient, Greedy) mean W2 interpolated linearly in log k at
    k = k_NL (NaN when k_NL lies outside the grid: ``np.interp`` would clamp);
    ``k_match``: the smallest k (same interpolation) at which that curve reaches W2_NL
    (NaN when it never does on the grid).
    """
    ks = np.asarray(res.seeds[0].ks, dtype=float)
    k_nl = res.reference_mean["neural_linear"]["k"]
    w_nl = res.reference_mean["neural_linear"]["w2"]
    best = np.minimum(res.w2_mean[PROPOSED[0]], res.w2_mean[PROPOSED[1]])
    inside = ks.min() <= k_nl <= ks.max()
    at = _at_k(ks, best, k_nl) if inside else float("nan")
    below = np.flatnonzero(best <= w_nl)
    k_match = float("nan")
    if below.size:
        i = int(below[0])
        if i == 0:
            k_match = float(ks[0])
        else:  # crossing inside [ks[i-1], ks[i]], linear in log k
            t = (best[i - 1] - w_nl) / (best[i - 1] - best[i])
            k_match = float(np.exp(np.log(ks[i - 1]) + t * np.log(ks[i] / ks[i - 1])))
    return {
        "k_neural_linear": float(k_nl),
        "w2_neural_linear": float(w_nl),
        "w2_best_at_k": at,
        "k_match": k_match,
        "best_curve": [float(v) for v in best],
        "ks": [int(k) for k in ks],
    }


def _at_k(ks: np.ndarray, curve: np.ndarray, k: float) -> float:
    """``curve`` interpolated linearly in log k at ``k`` (inside the grid)."""
    return float(np.interp(np.log(k), np.log(ks), curve))


def neural_linear_paired(res: Any, *, alpha: float = 0.05) -> dict[str, Any]:
    """Per seed, min(Gradient, Greedy) W2 at NeuralLinear's k minus NeuralLinear's W2.

    Each seed's better proposed curve is interpolated linearly in log k at k_NL (all methods
    of a seed share its MAP, so the differences are paired). Two readings of "matched or
    surpassed", each a one-sided paired Student-t test at level ``alpha``: *surpassed* — the
    mean difference is significantly below 0; *not worse* — it is not significantly above
    0. ``inside`` is False (and no test is made) when k_NL lies outside the k-grid.
    """
    ks = np.asarray(res.seeds[0].ks, dtype=float)
    k_nl = float(res.seeds[0].reference["neural_linear"]["k"])
    if not ks.min() <= k_nl <= ks.max():
        return {"inside": False, "k_neural_linear": k_nl}
    d = np.array(
        [
            _at_k(ks, np.minimum(r.w2[PROPOSED[0]], r.w2[PROPOSED[1]]), k_nl)
            - r.reference["neural_linear"]["w2"]
            for r in res.seeds
        ]
    )
    n = d.size
    mean, se = float(d.mean()), (float(d.std(ddof=1) / np.sqrt(n)) if n > 1 else np.inf)
    crit = float(stats.t.ppf(1 - alpha, n - 1)) if n > 1 else np.inf
    return {
        "inside": True,
        "k_neural_linear": k_nl,
        "differences": d.tolist(),
        "mean": mean,
        "se": se,
        "critical": crit,
        "seeds_better": int(np.sum(d < 0)),
        "surpassed": bool(mean < -crit * se),
        "not_worse": bool(not mean > crit * se),
    }


def w2_figure(ctx: Context, panels: dict[str, Any], filename: str) -> tuple[str, ...]:
    """Mean W2 ± one standard error against k (log axis), one panel per result.

    ``panels`` maps a panel title to an ExperimentResult; NeuralLinear is a hollow diamond
    at its fixed k (as in the paper's figures).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 3.6), squeeze=False)
    for ax, (title, res) in zip(axes[0], panels.items(), strict=True):
        ks = np.asarray(res.seeds[0].ks)
        for name, mean in res.w2_mean.items():
            se = res.w2_se[name]
            ax.plot(ks, mean, marker="o", ms=3, label=name)
            ax.fill_between(ks, mean - se, mean + se, alpha=0.2)
        nl = res.reference_mean.get("neural_linear")
        if nl is not None:
            ax.plot([nl["k"]], [nl["w2"]], "D", mfc="none", color="k", label="neural_linear")
        ax.set_xscale("log")
        ax.set_xticks(ks, [str(k) for k in ks], minor=False)
        ax.minorticks_off()
        ax.set_xlabel("subset size k")
        ax.set_ylabel("mean W2 to full Laplace")
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7)
    return ctx.save_figure(fig, filename)
