"""Measured cost exponents of Algorithms 1–2 of Raha, Khare & Patra (arXiv:2605.09075).

§3, "Computational Complexity" after Alg. 1: Gradient-Laplace costs O(max{|D|p, p log p,
Nk²}) (scores and top-k sort, then Ω_SS); after Alg. 2: Greedy-Laplace costs
O(max{Np, p log p, Nk², k³}) (scores and top-2k, Ω⁽¹⁾ = Ω_KK, then the k Schur steps). Each
claim sweeps one of p, N, k at a time (≥ 8× span) in a regime where one term of the bound
dominates and fits the exponent of the CPU time of every stage and of the whole algorithm
(``paper_checks.subnetwork_laplace_optimality._scaling``), next to the exponent of the operation
count of the same shapes. The reference set is the training set (|D| = N), as in the experiments.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping
from functools import partial
from typing import NamedTuple

import numpy as np

from laplace_lab._progress import step
from laplace_lab._random import keyed_generator
from laplace_lab.numerics import GGN, gradient_laplace, greedy_laplace, greedy_laplace_reference
from laplace_lab.paper_checks.subnetwork_laplace_optimality._greedy import require_literal_greedy
from laplace_lab.paper_checks.subnetwork_laplace_optimality._mutants import GREEDY_TOP_K_DIAGONAL
from laplace_lab.paper_checks.subnetwork_laplace_optimality._scaling import (
    gram_macs,
    literal_greedy_macs,
)
from laplace_lab.paper_checks.verification import (
    Context,
    Kind,
    Mutant,
    Setting,
    Status,
    Verdict,
    cached,
    claim,
    require,
)
from laplace_lab.paper_checks.verification.timing import (
    MAX_EXPONENT_CI,
    StageClock,
    best_stage_times,
    single_thread,
)
from laplace_lab.theory.rates import fit_rate

PAPER = "subnetwork-laplace-optimality"
#: Round-robin passes over a sweep's sizes (the minimum per size and stage is kept).
ROUNDS = 2
#: A measured exponent may exceed the bound's by at most TOL (the bound is an upper bound) and,
#: where the probed term dominates, fall short of it by at most TOL (else it was not probed).
TOL = 0.3
#: The operation counts of the chosen shapes must show the bound's exponent within OP_TOL:
#: the check that each sweep sits in the regime of its term (deterministic).
OP_TOL = 0.1

Shape = tuple[int, int, int]  # (N, p, k)
Terms = Mapping[str, Callable[[int, int, int], float]]


class Sweep(NamedTuple):
    """One axis varied at fixed others; ``probed``: the stages whose term the sweep tests."""

    axis: str
    sizes: tuple[int, ...]
    shape: Callable[[int], Shape]
    probed: tuple[str, ...]


def _plogp(p: int) -> float:
    return p * math.log2(p)


#: The paper's itemised terms per stage (constants 1) and the operation counts of our stages.
ALG1_TERMS: Terms = {
    "scores + top-k": lambda n, p, k: max(n * p, _plogp(p)),
    "Ω_SS": lambda n, p, k: n * k * k,
}
ALG1_OPS: Terms = {
    "scores + top-k": lambda n, p, k: n * p + _plogp(p),
    "Ω_SS": lambda n, p, k: gram_macs(n, k),
}
ALG2_TERMS: Terms = {
    "scores + top-2k": lambda n, p, k: max(n * p, _plogp(p)),
    "Ω⁽¹⁾ = Ω_KK": lambda n, p, k: n * k * k,
    "greedy loop": lambda n, p, k: k**3,
}
ALG2_OPS: Terms = {
    "scores + top-2k": lambda n, p, k: n * p + _plogp(p),
    "Ω⁽¹⁾ = Ω_KK": lambda n, p, k: gram_macs(n, 2 * k),
    "greedy loop": lambda n, p, k: literal_greedy_macs(2 * k, k),
}


class Jacobians:
    """Random N × p Jacobians as views of one buffer of uniform(0, 1) entries (drawn once).

    The costs timed here do not depend on the values (the scores, the Gram and the literal
    loop not at all). Up to 512 MiB in quick mode: the Np sweeps must stream from main
    memory at every size (J ≥ 64 MiB, twice the 32 MiB L3), or the exponent would measure
    the cache hierarchy.
    """

    def __init__(self, rng: np.random.Generator, sweeps: list[Sweep]) -> None:
        largest = max(math.prod(s.shape(x)[:2]) for s in sweeps for x in s.sizes)
        self.buffer = rng.random(largest)

    def ggn(self, n: int, p: int) -> GGN:
        """The regression GGN (σ0² = 1, V = I) of the first N·p entries as an N × p J."""
        return GGN(self.buffer[: n * p].reshape(n, p), 1.0, noise_var=1.0, likelihood="regression")


def _sizes(start: int, full: bool) -> tuple[int, ...]:
    """Four sizes, each twice the last (an 8× span), in quick mode; five (16×) with --full."""
    return tuple(start * 2**i for i in range(5 if full else 4))


def _gradient_laplace_run(ggn: GGN, k: int) -> Callable[[StageClock], object]:
    def run(clock: StageClock) -> object:
        with clock("scores + top-k"):
            S = gradient_laplace(ggn.scores(), k)
        with clock("Ω_SS"):
            return ggn.submatrix(S)

    return run


def _greedy_laplace_run(ggn: GGN, k: int) -> Callable[[StageClock], object]:
    def run(clock: StageClock) -> object:
        with clock("scores + top-2k"):
            s = ggn.scores()
            K = gradient_laplace(s, 2 * k)
        with clock("Ω⁽¹⁾ = Ω_KK"):
            omega = ggn.submatrix(K)
        with clock("greedy loop"):
            return K[greedy_laplace_reference(omega, s[K], k)]

    return run


class Measured(NamedTuple):
    """CPU times, operation counts and bound terms of one sweep (series by stage)."""

    sweep: Sweep
    times: dict[str, list[float]]
    ops: dict[str, list[float]]
    terms: dict[str, list[float]]


#: The best CPU time of every stage at each size of a sweep.
Times = list[dict[str, float]]


def _time_sweep(
    sweep: Sweep,
    make_run: Callable[[GGN, int], Callable[[StageClock], object]],
    jacobians: Jacobians,
    extra: Callable[[GGN, int, object], Mapping[str, float]] | None = None,
    what: str = "",
) -> Times:
    """Time ``make_run(ggn, k)`` by stage at every size of ``sweep`` (one BLAS thread), the
    best of :data:`ROUNDS` round-robin passes; ``extra(ggn, k, result)`` adds further timings
    (not part of the total). ``what`` names the sweep on the progress bar."""
    shapes = [sweep.shape(size) for size in sweep.sizes]
    best_at: Times = [{} for _ in shapes]
    total, done = ROUNDS * len(shapes), 0
    step(0, total, what)
    for _ in range(ROUNDS):  # round-robin over the sizes: a change of load hits all alike
        for best, (n, p, k) in zip(best_at, shapes, strict=True):
            ggn = jacobians.ggn(n, p)
            with single_thread():
                timing = best_stage_times(make_run(ggn, k), repeats=1, budget=0.1 / ROUNDS)
                found = dict(timing.best)
                if extra is not None:
                    found.update(extra(ggn, k, timing.result))
            for stage, t in found.items():
                best[stage] = min(best.get(stage, math.inf), t)
            done += 1
            step(done, total, what)
    return best_at


def _measure(sweep: Sweep, best_at: Times, terms: Terms, ops: Terms) -> Measured:
    """The sweep's stage times ``best_at`` (from :func:`_time_sweep`) with the operation
    counts ``ops`` and the paper's terms ``terms`` of its shapes."""
    times: dict[str, list[float]] = {}
    counts: dict[str, list[float]] = {s: [] for s in [*ops, "total"]}
    bound: dict[str, list[float]] = {s: [] for s in [*terms, "total"]}
    shapes = [sweep.shape(size) for size in sweep.sizes]
    for best, (n, p, k) in zip(best_at, shapes, strict=True):
        for stage, t in best.items():
            times.setdefault(stage, []).append(t)
        for stage, f in ops.items():
            counts[stage].append(float(f(n, p, k)))
        counts["total"].append(sum(float(f(n, p, k)) for f in ops.values()))
        for stage, f in terms.items():
            bound[stage].append(float(f(n, p, k)))
        bound["total"].append(max(float(f(n, p, k)) for f in terms.values()))
    return Measured(sweep, times, counts, bound)


class Check(NamedTuple):
    """One fitted exponent against the bound's.

    ``probed``: the stage of the sweep's dominant term; its time exponent must also not fall
    short of the bound's by more than TOL. ``regime``: the probed stages and the total, whose
    operation-count exponent must equal the bound's within OP_TOL (the sizes sit in the
    term's regime). Every time exponent must stay ≤ the bound's + TOL.
    """

    axis: str
    series: str
    expected: float
    time_exponent: float
    time_ci: tuple[float, float]
    op_exponent: float
    probed: bool
    regime: bool

    @property
    def status(self) -> Status:
        """Decided by the operation counts, which no load can move; the clock corroborates.

        REFUTED when the counted work grows faster than the bound (exponent > bound's +
        OP_TOL); NOT_REPRODUCIBLE_HERE when the sizes are not in the term's regime (counts off
        by more than OP_TOL), or when the clock clearly contradicts the counts — the time
        exponent's whole 95% interval above the bound's + TOL, or for the probed term below
        the bound's − TOL. A time interval wider than MAX_EXPONENT_CI corroborates nothing and
        decides nothing (it is reported).
        """
        if self.op_exponent > self.expected + OP_TOL:
            return Status.REFUTED
        if self.regime and abs(self.op_exponent - self.expected) > OP_TOL:
            return Status.NOT_REPRODUCIBLE_HERE
        low, high = self.time_ci
        if high - low > MAX_EXPONENT_CI:
            return Status.CONFIRMED
        above = low > self.expected + TOL
        short = self.probed and high < self.expected - TOL
        return Status.NOT_REPRODUCIBLE_HERE if above or short else Status.CONFIRMED

    @property
    def reason(self) -> str:
        """Why the check is not CONFIRMED, in one line ("" when it is)."""
        where = f"{self.axis}/{self.series}"
        low, high = self.time_ci
        status = self.status
        if status is Status.REFUTED:
            return (
                f"{where}: the counted work grows with exponent {self.op_exponent:.2f}, "
                f"above the bound's {self.expected:g}"
            )
        if status is Status.NOT_REPRODUCIBLE_HERE:
            if self.regime and abs(self.op_exponent - self.expected) > OP_TOL:
                return (
                    f"{where}: the counted exponent {self.op_exponent:.2f} is off the bound's "
                    f"{self.expected:g} (the sizes are not in the term's regime)"
                )
            return (
                f"{where}: the clock's exponent {self.time_exponent:.2f} [{low:.2f}, "
                f"{high:.2f}] contradicts the counted {self.op_exponent:.2f}"
            )
        return ""

    @property
    def corroborated(self) -> bool:
        """Whether the clock was precise enough to corroborate the counts."""
        return self.time_ci[1] - self.time_ci[0] <= MAX_EXPONENT_CI


def _checks(m: Measured) -> list[Check]:
    """A check for every stage whose term grows along the sweep (bound exponent ≥ 0.5) and
    for the total (see :class:`Check`)."""
    out = []
    for series, term in m.terms.items():
        expected = round(fit_rate(m.sweep.sizes, term).slope, 2)
        if expected < 0.5:
            continue  # constant along this axis: reported, not checked
        t = fit_rate(m.sweep.sizes, m.times[series])
        probed = series in m.sweep.probed
        out.append(
            Check(
                m.sweep.axis,
                series,
                expected,
                t.slope,
                (t.ci_low, t.ci_high),
                fit_rate(m.sweep.sizes, m.ops[series]).slope,
                probed,
                probed or series == "total",
            )
        )
    return out


def _reason(checks: list[Check]) -> str:
    """The reason of the first check that decides the verdict ("" when all confirm)."""
    status = _verdict_status(checks)
    return next((c.reason for c in checks if c.status is status and c.reason), "")


def _verdict_status(checks: list[Check]) -> Status:
    statuses = {c.status for c in checks}
    for s in (Status.REFUTED, Status.NOT_REPRODUCIBLE_HERE):
        if s in statuses:
            return s
    return Status.CONFIRMED


def _figure(ctx: Context, measured: list[Measured], name: str, title: str) -> tuple[str, ...]:
    """Log-log CPU time against size, one panel per sweep: every stage, the total and the
    bound's slope (dotted, through the total's first point), each with its fitted slope."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = list(dict.fromkeys(s for m in measured for s in m.times))
    colour = {s: f"C{i}" for i, s in enumerate(series)}
    fig, axes = plt.subplots(1, len(measured), figsize=(4.4 * len(measured), 3.8))
    for ax, m in zip(np.atleast_1d(axes), measured, strict=True):
        x = np.asarray(m.sweep.sizes, dtype=float)
        for s, y in m.times.items():
            fit = fit_rate(x, y)
            ax.loglog(x, y, "o", color=colour[s], label=f"{s}: slope {fit.slope:.2f}")
            ax.loglog(x, np.exp(fit.intercept) * x**fit.slope, "--", color=colour[s], lw=1)
        e = fit_rate(x, m.terms["total"]).slope
        ax.loglog(
            x, m.times["total"][0] * (x / x[0]) ** e, ":", color="k", label=f"bound: {e:.2f}"
        )
        n, p, k = m.sweep.shape(m.sweep.sizes[0])
        fixed = {"N": n, "p": p, "k": k}
        fixed.pop(m.sweep.axis)
        ax.set_xlabel(f"{m.sweep.axis}  ({', '.join(f'{a} = {v}' for a, v in fixed.items())})")
        ax.set_xticks(x, [str(v) for v in m.sweep.sizes])
        ax.minorticks_off()
        ax.set_ylabel("thread CPU time, min over repeats [s]")
        ax.legend(fontsize=7)
    fig.suptitle(f"{title}: cost exponents (one BLAS thread)", fontsize=10)
    fig.tight_layout()
    caption = (
        f"{title}: measured CPU seconds (points, one BLAS thread) against each swept size "
        "(log–log), with the fitted slope (the time exponent) in the legend; the dotted line "
        "has the exponent of the paper's bound. The verdict rests on the operation counts; "
        "the clock only corroborates them (a time exponent whose interval lies wholly above "
        f"the bound's + {TOL} would contradict it)."
    )
    return ctx.save_figure(fig, name, caption=caption)


def _summary(checks: list[Check]) -> str:
    return "; ".join(
        f"{c.axis}/{c.series}: {c.time_exponent:.2f} [{c.time_ci[0]:.2f}, {c.time_ci[1]:.2f}] "
        f"(ops {c.op_exponent:.2f}, bound {c.expected:g}) {c.status.value}"
        + ("" if c.corroborated else " (clock too noisy to corroborate)")
        for c in checks
    )


def _details(measured: list[Measured], checks: list[Check]) -> dict:
    return {
        "sweeps": [
            {
                "axis": m.sweep.axis,
                "sizes": list(m.sweep.sizes),
                "shapes_N_p_k": [m.sweep.shape(s) for s in m.sweep.sizes],
                "cpu_s": m.times,
                "op_counts": m.ops,
            }
            for m in measured
        ],
        "checks": [
            {**c._asdict(), "time_ci": list(c.time_ci), "status": c.status.value} for c in checks
        ],
        "tolerance": TOL,
        "op_tolerance": OP_TOL,
    }


TOLERANCE_TEXT = (
    f"decided by the operation counts: every count exponent ≤ bound exponent + {OP_TOL}, and "
    f"the probed stage's and the total's within ±{OP_TOL} of the bound's (else the term was "
    f"not probed); the clock corroborates: no time exponent's 95% interval wholly above the "
    f"bound's + {TOL} or, for the probed stage, below the bound's − {TOL} (an interval wider "
    f"than {MAX_EXPONENT_CI} is too noisy to corroborate and is reported as such)"
)
HOW = (
    "Thread CPU time (time.thread_time, BLAS pinned to one thread, minimum over "
    f"{ROUNDS} round-robin passes over the sizes, ≥ 0.1 s per size in all), exponent = OLS "
    "slope of log time on log size with a 95% t-interval "
    "over sizes spanning 8× (4 sizes; 16×, 5 sizes with --full); the operation count of the "
    "same shapes (multiply-adds N'p for the scores, p log₂p for the sort, N'Σt_it_j of the "
    "tiled Gram, Σ_t(m−t)² for the Schur updates) gives the noise-free exponent of the "
    f"regime. Tolerance ±{TOL}: a factor 8^{TOL} ≈ {8**TOL:.1f} over the span, the size of "
    "BLAS-efficiency, cache-level and per-call-overhead effects; one power more would be a "
    "factor 8. The p log p term is never the dominant one at the sizes probed (N'p is), so "
    "it is covered only by the upper bound."
)
MEMORY = (
    "Sizes avoid two machine artefacts that are not the algorithm's cost: power-of-two "
    "leading dimensions (cache-set aliasing slowed the Gram by up to 1.9× per multiply-add "
    "at k = 4096 against 2896) and arrays above glibc's 32 MiB mmap ceiling, which are "
    "mapped fresh on every call (page zeroing: 92 ms instead of 57 ms for Ω_SS at k = 2896, "
    "N = 256); the Np sweeps stream J of 67–537 MB from main memory at every size."
)


_MODULE = sys.modules[__name__]


def _alg1_sweeps(full: bool) -> list[Sweep]:
    """The p, N and k sweeps of Alg. 1 (k ≤ 1920: Ω_SS below 32 MiB, see MEMORY)."""
    ks = _sizes(120 if full else 240, full)
    return [
        Sweep("p", _sizes(11584, full), lambda p: (724, p, 32), ("scores + top-k",)),
        Sweep("N", _sizes(1448, full), lambda n: (n, 5792, 32), ("scores + top-k",)),
        Sweep("k", ks, lambda k: (256, ks[-1], k), ("Ω_SS",)),
    ]


@cached
def _alg1_times(seed: int, full: bool) -> list[Times]:
    """The stage times of Alg. 1 along each of :func:`_alg1_sweeps` (the claim's stream
    ``gradient-laplace-complexity`` under base seed ``seed``), shared with the mutants
    that change only the bound."""
    sweeps = _alg1_sweeps(full)
    jac = Jacobians(keyed_generator("claim", "gradient-laplace-complexity", seed=seed), sweeps)
    return [
        _time_sweep(s, _gradient_laplace_run, jac, what=f"Alg. 1, {s.axis} sweep") for s in sweeps
    ]


@claim(
    paper=PAPER,
    name="gradient-laplace-complexity",
    kind=Kind.COST,
    setting=Setting.paper(),
    timed=True,
    location="§3, Computational Complexity after Alg. 1",
    statement=(
        "Gradient-Laplace (scores, top-k sort, then Ω_SS) costs O(max{|D|p, p log p, Nk²})."
    ),
    mutants=(
        Mutant(
            "bound-with-nk",
            "the bound's Ω_SS term read as Nk instead of Nk²",
            {(_MODULE, "ALG1_TERMS"): {**ALG1_TERMS, "Ω_SS": lambda n, p, k: n * k}},
            reuses=(_alg1_times,),  # the bound is applied to the same measured times
        ),
    ),
)
def gradient_laplace_complexity(ctx: Context) -> Verdict:
    """§3: "the total computational complexity of this approach is O(max{|D|p, p log p,
    Nk²})"."""
    sweeps = _alg1_sweeps(ctx.full)
    times = _alg1_times(ctx.seed, ctx.full)
    measured = [_measure(s, t, ALG1_TERMS, ALG1_OPS) for s, t in zip(sweeps, times, strict=True)]
    checks = [c for m in measured for c in _checks(m)]
    figs = _figure(ctx, measured, "gradient_laplace_complexity.png", "Alg. 1 (Gradient-Laplace)")
    totals = {c.axis: round(c.time_exponent, 2) for c in checks if c.series == "total"}
    k_sweep = measured[-1]
    t, o = k_sweep.times, k_sweep.ops
    share = t["Ω_SS"][0] / t["total"][0]
    ratio = (t["scores + top-k"][0] / o["scores + top-k"][0]) / (t["Ω_SS"][-1] / o["Ω_SS"][-1])
    return Verdict(
        _verdict_status(checks),
        measured=f"time exponents of the whole algorithm: {totals}",
        expected="p: 1 (|D|p ≥ p log p), N: 1, k: 2 (Nk²)",
        tolerance=TOLERANCE_TEXT,
        evidence=(
            f"{HOW} {MEMORY} Fits (exponent [95% CI]): {_summary(checks)}. In time the Nk² "
            f"term is {share:.0%} of the total at k = {k_sweep.sweep.sizes[0]} (the scores cost "
            f"{ratio:.0f}× more per operation than the BLAS-3 Gram), hence a total exponent "
            "in k below that of its operation count."
        ),
        details=_details(measured, checks),
        figures=figs,
        summary=_reason(checks),
    )


PIVOTED = "pivoted Cholesky"
LOOP, GRAM2 = "greedy loop", "Ω⁽¹⁾ = Ω_KK"
#: N of the second k sweep of the pivoted form, where its own N'·m·k-type terms dominate its
#: per-pivot overhead.
N_BIG = 1024


def _alg2_sweeps(full: bool) -> list[Sweep]:
    """The p, N and k sweeps of Alg. 2 (the k sweep at N = 8: the k³ loop dominates)."""
    ks = _sizes(64, full)
    return [
        Sweep("p", _sizes(11584, full), lambda p: (724, p, 16), ("scores + top-2k",)),
        Sweep("N", _sizes(1448, full), lambda n: (n, 5792, 16), ("scores + top-2k",)),
        Sweep("k", ks, lambda k: (8, 3 * ks[-1], k), ("greedy loop",)),
    ]


@cached
def _alg2_times(seed: int, full: bool) -> tuple[list[Times], list[bool], list[float]]:
    """The stage times of Alg. 2 along each of :func:`_alg2_sweeps` (the claim's stream
    ``greedy-complexity`` under base seed ``seed``), with the pivoted-Cholesky form timed
    beside the literal loop in the k sweep; whether it returned the literal loop's S at each
    k; and its times along the k sweep at N = :data:`N_BIG`. Shared with the mutants that
    change only the bound."""
    sweeps = _alg2_sweeps(full)
    identical: list[bool] = []

    def pivoted(ggn: GGN, k: int, literal: object) -> dict[str, float]:
        timing = best_stage_times(partial(_timed, stage=PIVOTED, fn=greedy_laplace, args=(ggn, k)))
        identical.append(bool(np.array_equal(timing.result, literal)))
        return {PIVOTED: timing.best[PIVOTED]}

    jac = Jacobians(keyed_generator("claim", "greedy-complexity", seed=seed), sweeps)
    times = [
        _time_sweep(
            s,
            _greedy_laplace_run,
            jac,
            pivoted if s.axis == "k" else None,
            what=f"Alg. 2, {s.axis} sweep",
        )
        for s in sweeps
    ]
    ks = sweeps[-1].sizes
    g_big = jac.ggn(N_BIG, 3 * ks[-1])
    big = []
    what = f"pivoted Cholesky at N = {N_BIG}"
    step(0, len(ks), what)
    with single_thread():
        for i, k in enumerate(ks):
            timing = best_stage_times(
                partial(_timed, stage=PIVOTED, fn=greedy_laplace, args=(g_big, k))
            )
            big.append(timing.best[PIVOTED])
            step(i + 1, len(ks), what)
    return times, identical, big


@claim(
    paper=PAPER,
    name="greedy-complexity",
    kind=Kind.COST,
    setting=Setting.paper(),
    timed=True,
    location="§3, Computational Complexity after Alg. 2",
    statement=(
        "Greedy-Laplace (scores, top-2k, Ω⁽¹⁾ = Ω_KK, then k Schur-complement steps) costs "
        "O(max{Np, p log p, Nk², k³})."
    ),
    mutants=(
        GREEDY_TOP_K_DIAGONAL,
        Mutant(
            "bound-with-k2",
            "the bound's loop term read as k² instead of k³",
            {(_MODULE, "ALG2_TERMS"): {**ALG2_TERMS, LOOP: lambda n, p, k: k**2}},
            reuses=(_alg2_times,),  # the bound is applied to the same measured times
        ),
    ),
)
def greedy_complexity(ctx: Context) -> Verdict:
    """§3: "the overall computational complexity of the *Greedy–Laplace* method is therefore
    O(max{Np, p log p, Nk², k³})"."""
    self_check = require_literal_greedy(ctx.rng("greedy-self-check"))
    sweeps = _alg2_sweeps(ctx.full)
    ks = sweeps[-1].sizes
    times, identical, big = _alg2_times(ctx.seed, ctx.full)
    measured = [_measure(s, t, ALG2_TERMS, ALG2_OPS) for s, t in zip(sweeps, times, strict=True)]
    checks = [c for m in measured for c in _checks(m)]
    figs = _figure(ctx, measured, "greedy_laplace_complexity.png", "Alg. 2 (Greedy-Laplace)")
    totals = {c.axis: round(c.time_exponent, 2) for c in checks if c.series == "total"}
    k_sweep = measured[-1]
    fast = fit_rate(k_sweep.sweep.sizes, k_sweep.times[PIVOTED])
    fast_big = fit_rate(ks, big)
    # time per multiply-add: the literal loop at the largest k, the Gram at the largest N
    c_loop = k_sweep.times[LOOP][-1] / k_sweep.ops[LOOP][-1]
    c_gram = measured[1].times[GRAM2][-1] / measured[1].ops[GRAM2][-1]
    require(
        all(identical),
        f"the pivoted-Cholesky Greedy-Laplace differs from the literal loop in "
        f"{identical.count(False)} of {len(identical)} comparisons of the k sweep",
    )
    return Verdict(
        _verdict_status(checks),
        measured=f"time exponents of the whole algorithm: {totals}",
        expected="p: 1 (Np ≥ p log p), N: 1, k: 3 (k³ of the loop, N ≪ k)",
        tolerance=TOLERANCE_TEXT,
        evidence=(
            f"{HOW} {MEMORY} Fits (exponent [95% CI]): {_summary(checks)}. The k sweep runs "
            f"at N = 8: the literal loop takes {1e9 * c_loop:.2g} ns per multiply-add of its "
            f"≈ 7k³/3, the Gram of Ω_KK {1e9 * c_gram:.2g} ns of its 4Nk² (N = "
            f"{measured[1].sweep.sizes[-1]}), so the Nk² term would dominate the total only "
            f"for N ≳ {7 * c_loop / (12 * c_gram):.1f}k; its k-exponent is that of the Ω_KK "
            "stage here and two-sided in Alg. 1 (the same Gram). "
            "The pivoted-Cholesky form (numerics.greedy_laplace) returned the "
            f"identical S at all {len(identical)} k: {all(identical)}; its time exponent in k "
            f"is {fast.slope:.2f} [{fast.ci_low:.2f}, {fast.ci_high:.2f}] (times "
            f"{_ms(k_sweep.times[PIVOTED])} ms against {_ms(k_sweep.times[LOOP])} ms "
            "for the literal loop), where its per-pivot overhead (∝ k) dominates; at N = "
            f"{N_BIG}: {fast_big.slope:.2f} [{fast_big.ci_low:.2f}, {fast_big.ci_high:.2f}] "
            f"(times {_ms(big)} ms), between that overhead and its Gram of Ω_KK (4Nk²); its "
            "cost stays within the stated bound's Nk² term, as its O(mk²) flop count implies. "
            + self_check
        ),
        details={
            **_details(measured, checks),
            "pivoted_cholesky_k_exponent": fast._asdict(),
            f"pivoted_cholesky_k_exponent_N{N_BIG}": fast_big._asdict(),
            f"pivoted_cholesky_cpu_s_N{N_BIG}": big,
            "identical_S": identical,
        },
        figures=figs,
        summary=_reason(checks),
    )


def _ms(times: list[float]) -> list[float]:
    return [float(f"{1e3 * t:.3g}") for t in times]


def _timed(clock: StageClock, *, stage: str, fn: Callable, args: tuple) -> object:
    with clock(stage):
        return fn(*args)
