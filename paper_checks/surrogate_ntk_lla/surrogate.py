"""Ortega et al., arXiv:2601.21835, §2.2–2.3: the trained surrogate against the exact LLA.

On the toy of :mod:`._toy` (p = 371, exact LLA dense), ScaLLA's surrogates are trained by
JVP matching (:func:`laplace_lab.numerics.train_surrogate`) and compared with the NTK and the
exact LLA:

- the learned kernel approaches J Jᵀ as m and training grow (the measured curve, with the
  Eckart–Young floor of a rank-m Gram);
- with context points, ScaLLA's predictive variances approximate the LLA's in and out of
  distribution (§2.2), and context points make the kernel generalise to the OOD region;
- the biased target (eq. 9) makes the learned kernel block-diagonal between training and
  context inputs, and moves the posterior variance back to the prior away from the data
  (§2.3).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import numpy as np

from laplace_lab.numerics import SurrogateFit, draw_probes, kernel_matching_loss, train_surrogate
from laplace_lab.paper_checks.surrogate_ntk_lla import _mutants
from laplace_lab.paper_checks.surrogate_ntk_lla._toy import (
    ALPHA,
    CENTRES,
    STEPS,
    _far,
    exact_variance,
    learned,
    relative_error,
    surrogate,
    toy,
    toy_ntk,
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
    decisions,
    step,
)

PAPER = "surrogate-ntk-lla"
#: Features per output of the toy's surrogates (the rank of the toy's NTK Grams is ≈ 10).
M = 32
#: Independent toys (data, MAP, surrogate training) a comparison is replicated over (quick,
#: full); each toy's statistic is one replicate of a one-sided Student-t test.
REPLICATES = {False: 5, True: 10}
TOY = Setting.substitute(
    "data: three Gaussian blobs in the plane (3 classes) for FMNIST, OOD and context drawn "
    "uniformly away from the blobs; architecture: a tanh MLP 2 → 16 → 16 → 3 (p = 371) for "
    "the CNN, so that the exact LLA is dense; size: m = 32 features per class, 300 "
    "surrogate steps (quick)"
)
COMMAND = "laplace-lab check --full --claim surrogate-ntk-lla/{name}"
#: The arms of the convergence comparison: the fewest features, and the fraction of the
#: training steps of the early arm.
FEWEST = 1
EARLY = 4
#: "Approaches the NTK": a relative kernel error at m = M after full training below this.
CLOSE = 0.5
#: "Approximates the LLA predictive variances": a median relative variance error below this.
TOL = 0.25
#: "Effectively block-diagonal": the paper gives no number, so the reading is ours — the
#: learned train–context block below this fraction of the NTK's (an order of magnitude
#: smaller) confirms ...
CROSS = 0.1
#: ... and only a block significantly above this more lenient fraction (a quarter of the NTK's)
#: refutes: between the two readings the verdict would rest on our choice of threshold, so it
#: is INCONCLUSIVE.
CROSS_LENIENT = 0.25


def _toys(n: int) -> Iterator[int]:
    """The replicates 0..n−1, each reported to the progress bar before it runs."""
    for r in range(n):
        step(r, n, "toys")
        yield r
    step(n, n, "toys")


@cached(maxsize=20)
def without_context(seed: int, full: bool, replicate: int = 0) -> object:
    """:func:`surrogate` at m = M, unbiased, without context: an experiment of its own so that a
    mutant that changes only the context's part of the training can reuse its true result."""
    return surrogate(seed, full, M, False, False, replicate=replicate)


@cached(maxsize=20)
def unbiased_with_context(seed: int, full: bool, replicate: int = 0) -> object:
    """:func:`surrogate` at m = M, unbiased, with context: an experiment of its own so that a
    mutant that changes only the biased loss can reuse its true result."""
    return surrogate(seed, full, M, True, False, replicate=replicate)


@cached(maxsize=20)
def held_out_ntk(seed: int, replicate: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The NTK Gram of one toy's held-out inputs and its eigenvalues, largest first (read-only):
    they depend on the toy alone, so that a mutant of the surrogates' training reuses them."""
    K = toy_ntk(seed, replicate, "X_test")
    lam = np.linalg.eigvalsh(K)[::-1]
    lam.flags.writeable = False
    return K, lam


def _uniform_probes(num_probes: int, p: int, *, rng: object, dtype: object = None, **_: object):
    """Probes uniform on (−1, 1): zero mean but covariance I/3, not I."""
    import torch

    from laplace_lab._random import as_generator

    gen = torch.Generator().manual_seed(int(as_generator(rng).integers(2**63 - 1)))
    return torch.rand((num_probes, p), generator=gen, dtype=dtype) * 2.0 - 1.0


UNIFORM_PROBES = Mutant(
    "probes-covariance-third",
    "probes uniform on (−1, 1) (covariance I/3): eq. (4) fails, the target is K/3",
    {draw_probes: _uniform_probes},
    # only the surrogate's training draws probes: the toy (MAP and exact LLA), its NTK Grams
    # and the exact LLA's variances are the true ones
    reuses=(toy, toy_ntk, held_out_ntk, exact_variance),
)


NULL_CONVERGENCE = Mutant(
    "same-m-and-steps",
    f"both arms with m = {M} features and the full training (no effect)",
    {(sys.modules[__name__], "FEWEST"): M, (sys.modules[__name__], "EARLY"): 1},
    expect=Status.INCONCLUSIVE,
    reuses=(toy, surrogate, toy_ntk, held_out_ntk),
)


@claim(
    paper=PAPER,
    name="surrogate-kernel-convergence",
    location="§2.2, eqs. (3)-(4)",
    statement=(
        "Trained by JVP matching, the surrogate kernel g(x)g(x')ᵀ approaches the NTK "
        "J(x)J(x')ᵀ as the number of features m and the training grow."
    ),
    kind=Kind.SUPERIORITY,
    setting=TOY,
    mutants=(UNIFORM_PROBES, NULL_CONVERGENCE),
)
def surrogate_kernel_convergence(ctx: Context) -> Verdict:
    """§2.2: eq. (3) "encourages K̃(x, x') to approximate K_NTK(x, x') in expectation over
    random projections v"; "The goal is to ensure that the surrogate kernel g_φ(x)g_φ(x')ᵀ
    closely matches the NTK kernel". Per toy: the kernel error falls from m = 1 to m = 32 and
    from a quarter of the training to all of it, and ends below 0.5.
    """
    seed, full = ctx.seed, ctx.full
    n = REPLICATES[full]
    early = STEPS[full] // EARLY
    rows = []
    for r in _toys(n):
        t = toy(seed, r)
        K, lam = held_out_ntk(seed, r)

        def error(m: int, steps: int = 0, t=t, K=K, r=r) -> float:
            # steps named only when set: the full training is the call of without_context,
            # one cached result for both
            more = {"steps": steps} if steps else {}
            fit = surrogate(seed, full, m, False, False, replicate=r, **more)
            return relative_error(learned(fit, t.X_test), K)

        final = error(M)
        rows.append(
            {
                "fewest": error(FEWEST),
                "early": final if early == STEPS[full] else error(M, early),
                "final": final,
                "floor": float(np.sqrt(np.sum(lam[FEWEST:] ** 2) / np.sum(lam**2))),
            }
        )
    col = {k: np.array([row[k] for row in rows]) for k in rows[0]}
    tests = [
        decisions.test(f"kernel error at m = {FEWEST} − at m = {M}", col["fewest"] - col["final"]),
        decisions.test(
            f"kernel error after {early} − after {STEPS[full]} steps", col["early"] - col["final"]
        ),
        decisions.test(
            f"kernel error at m = {M}, {STEPS[full]} steps", col["final"], threshold=CLOSE, side=-1
        ),
    ]
    d = decisions.superiority(tests, command=COMMAND.format(name="surrogate-kernel-convergence"))
    mean = {k: float(v.mean()) for k, v in col.items()}
    return Verdict(
        d.status,
        measured=mean["final"],
        expected=f"decreasing in m and steps; < {CLOSE} at m = {M}, {STEPS[full]} steps",
        summary=(
            f"kernel error {mean['fewest']:.2f} at m = {FEWEST} → {mean['final']:.2f} at "
            f"m = {M}, {mean['early']:.2f} after {early} steps → {mean['final']:.2f} after "
            f"{STEPS[full]} (mean over {n} toys)"
        ),
        tolerance=(
            f"one-sided t over {n} toys at α = 0.05: both decreases > 0 and the final error "
            f"< {CLOSE} (relative Frobenius error on held-out inputs)"
        ),
        evidence=[
            f"{n} independent toys (p = 371, 60 held-out in-distribution inputs, 180 × 180 NTK "
            "Gram), no context. Relative Frobenius error of the learned kernel per toy "
            f"(m = {FEWEST}; m = {M} after {early} steps; m = {M} after {STEPS[full]} steps; "
            f"Eckart–Young floor of rank {FEWEST}): "
            + "; ".join(
                f"{row['fewest']:.3f}, {row['early']:.3f}, {row['final']:.3f}, {row['floor']:.3f}"
                for row in rows
            )
            + ".",
            "The error falls to a level set by the training, not by m, once m exceeds the "
            "Gram's effective rank.",
        ],
        details={"per_toy": rows},
        decision=d,
    )


def _variance_errors(
    seed: int, full: bool, context: bool, replicate: int = 0
) -> tuple[float, float]:
    """Median relative error of ScaLLA's marginal variances against the exact LLA's."""
    t = toy(seed, replicate)
    fit = surrogate(seed, full, M, context, False, replicate=replicate)
    out = []
    for name in ("X_test", "X_ood"):
        X, exact = getattr(t, name), exact_variance(seed, replicate, name)
        out.append(float(np.median(np.abs(fit.predictive(X).variance() / exact - 1.0))))
    return out[0], out[1]


def _at_threshold(threshold: float, replicate: int, full: bool, shift: float = 0.0) -> float:
    """A statistic held at ``threshold`` on average over the replicates: threshold × (1 + 0.05
    cos(2π(r + shift)/n)), whose mean over r = 0..n−1 is the threshold (a null mutant)."""
    n = REPLICATES[full]
    return threshold * (1.0 + 0.05 * np.cos(2.0 * np.pi * (replicate + shift) / n))


def _variance_errors_at_tolerance(
    seed: int, full: bool, context: bool, replicate: int = 0
) -> tuple[float, float]:
    """Variance errors held at :data:`TOL` on average (no effect either way)."""
    return _at_threshold(TOL, replicate, full), _at_threshold(TOL, replicate, full, 0.5)


@claim(
    paper=PAPER,
    name="scalla-variance-vs-exact-lla",
    location="§2.1 (last paragraph) and §2.2 (context points)",
    statement=(
        "With context points, the surrogate approximates the LLA predictive variances across "
        "both in-distribution and OOD regions."
    ),
    kind=Kind.SUPERIORITY,
    setting=TOY,
    mutants=(
        UNIFORM_PROBES,
        Mutant(
            "variance-error-at-tolerance",
            f"median variance errors at the tolerance {TOL} on average over the toys (no "
            "effect): the rule must answer INCONCLUSIVE",
            {_variance_errors: _variance_errors_at_tolerance},
            expect=Status.INCONCLUSIVE,
        ),
    ),
)
def scalla_variance_vs_exact_lla(ctx: Context) -> Verdict:
    """§2.2: "This enforces the surrogate model to approximate the LLA predictive variances
    across both in-distribution and OOD regions." — per toy, the median relative variance
    error in and out of distribution, each tested below a tolerance of ours (the paper states
    no number)."""
    n = REPLICATES[ctx.full]
    errors = np.array(
        [sys.modules[__name__]._variance_errors(ctx.seed, ctx.full, True, r) for r in _toys(n)]
    )
    d = decisions.superiority(
        [
            decisions.test(
                f"median |v_ScaLLA/v_LLA − 1| {where}", errors[:, i], threshold=TOL, side=-1
            )
            for i, where in enumerate(("in distribution", "OOD"))
        ],
        command=COMMAND.format(name="scalla-variance-vs-exact-lla"),
    )
    inside, outside = (float(x) for x in errors.mean(axis=0))
    return Verdict(
        d.status,
        measured=f"median relative variance error: in {inside:.3f}, OOD {outside:.3f}",
        expected=f"< {TOL}",
        tolerance=(
            f"one-sided t over {n} toys at α = 0.05 against {TOL} (a 25% variance error is a "
            "≤ 12% error in the predictive s.d.)"
        ),
        summary=(
            f"median |v_ScaLLA/v_LLA − 1|: {inside:.3f} in distribution, {outside:.3f} OOD "
            f"(mean over {n} toys)"
        ),
        evidence=(
            f"{n} independent toys (p = 371), ScaLLA with m = {M}, context points, "
            f"{STEPS[ctx.full]} steps, α = {ALPHA}, against the dense exact LLA: median over 60 "
            "inputs × 3 classes of |v_ScaLLA / v_LLA − 1| per toy (in distribution, OOD): "
            + "; ".join(f"{a:.3f}, {b:.3f}" for a, b in errors)
            + "."
        ),
        details={"per_toy": errors.tolist()},
        decision=d,
    )


def _train_without_context(
    model: object, X_train: object, *, _true=train_surrogate, **kw: object
) -> SurrogateFit:
    """JVP matching that drops the context inputs (and the bias that needs them)."""
    kw["context"], kw["biased"] = None, False
    return _true(model, X_train, **kw)


#: "Match the NTK beyond the training data": the OOD kernel error with context at most this
#: fraction of the error without.
RATIO = 0.75


def _ood_kernel_errors(seed: int, full: bool, replicate: int) -> dict[str, float]:
    """Relative Frobenius error of the learned kernel on one toy's OOD inputs, without and
    with context points."""
    t = toy(seed, replicate)
    K = toy_ntk(seed, replicate, "X_ood")
    fits = {
        "without": without_context(seed, full, replicate),
        "with": unbiased_with_context(seed, full, replicate),
    }
    return {name: relative_error(learned(fit, t.X_ood), K) for name, fit in fits.items()}


def _ood_errors_at_ratio(seed: int, full: bool, replicate: int) -> dict[str, float]:
    """OOD kernel errors whose ratio is held at :data:`RATIO` on average (no effect)."""
    return {"without": 1.0, "with": _at_threshold(RATIO, replicate, full)}


@claim(
    paper=PAPER,
    name="context-points-generalise",
    location="§2.2, eq. (7)",
    statement=(
        "Context points make the surrogate kernel match the NTK beyond the training data "
        "(in the OOD region they represent): the OOD kernel error with context at most "
        "three quarters of that without."
    ),
    kind=Kind.SUPERIORITY,
    setting=TOY,
    mutants=(
        Mutant(
            "context-dropped",
            "JVP matching on training inputs only, whatever context is passed",
            {train_surrogate: _train_without_context},
            expect=Status.REFUTED,
            # the arm without context trains exactly as the true one does; the NTK is the toy's
            reuses=(toy, without_context, toy_ntk),
        ),
        Mutant(
            "ratio-at-three-quarters",
            f"OOD kernel errors with context at {RATIO} of those without on average over the "
            "toys (no effect): the rule must answer INCONCLUSIVE",
            {(sys.modules[__name__], "_ood_kernel_errors"): _ood_errors_at_ratio},
            expect=Status.INCONCLUSIVE,
        ),
        Mutant(
            "ood-inputs-in-context",
            "the far-region sampler ignoring its random stream: the OOD inputs repeat the "
            "first context inputs",
            {_far: _mutants.far_from_one_stream},
            expect=Status.ERROR,
        ),
    ),
)
def context_points_generalise(ctx: Context) -> Verdict:
    """§2.2: "To ensure that the surrogate model generalizes beyond the training data [...] we
    introduce a collection of context points"; "This enforces the surrogate model to
    approximate the LLA predictive variances across both in-distribution and OOD regions."
    """
    seed, full = ctx.seed, ctx.full
    n = REPLICATES[full]
    rows = [sys.modules[__name__]._ood_kernel_errors(seed, full, r) for r in _toys(n)]
    without = np.array([row["without"] for row in rows])
    with_ = np.array([row["with"] for row in rows])
    d = decisions.superiority(
        decisions.test(
            "OOD kernel error with / without context", with_ / without, threshold=RATIO, side=-1
        ),
        command=COMMAND.format(name="context-points-generalise"),
    )
    return Verdict(
        d.status,
        measured=float(np.mean(with_ / without)),
        expected=f"< {RATIO}",
        tolerance=(
            f"one-sided t over {n} toys at α = 0.05 of the paired ratio against {RATIO} (a "
            "material gain: the two trainings also differ in their random streams)"
        ),
        summary=(
            f"OOD kernel error {without.mean():.3f} without context, {with_.mean():.3f} with "
            f"(mean over {n} toys)"
        ),
        evidence=[
            f"{n} independent toys, m = {M}, {STEPS[full]} steps. Relative Frobenius error of "
            "the learned kernel on 60 OOD inputs per toy (trained on the training inputs only; "
            "with 300 context inputs from the OOD region, not the OOD test inputs): "
            + "; ".join(f"{row['without']:.3f} → {row['with']:.3f}" for row in rows)
            + ".",
        ],
        details={"per_toy": rows},
        decision=d,
    )


def _block_features(self: SurrogateFit, X: object, _true=SurrogateFit.features) -> object:
    """Features split by region: the first m/2 for inputs near the data, the rest far away."""
    F = _true(self, X)
    far = np.min(np.linalg.norm(np.asarray(X)[:, None] - CENTRES[None], axis=2), axis=1) >= 3.0
    F = F.clone()
    half = F.shape[2] // 2
    F[far, :, :half] = 0.0
    F[~far, :, half:] = 0.0
    return F


@cached(maxsize=20)
def _cross_ratios(seed: int, full: bool, replicate: int = 0) -> dict[str, float]:
    """One toy's train–context block of the learned kernel relative to the NTK's, and the
    relative error of the training block, for the unbiased and the biased surrogate."""
    t = toy(seed, replicate)
    K_tc = toy_ntk(seed, replicate, "X_train", "X_context")
    out = {}
    for name, biased in (("unbiased", False), ("biased", True)):
        fit = surrogate(seed, full, M, True, biased, replicate=replicate)
        out[name] = float(
            np.linalg.norm(learned(fit, t.X_train, t.X_context)) / np.linalg.norm(K_tc)
        )
        out[f"{name}_train_error"] = relative_error(
            learned(fit, t.X_train), toy_ntk(seed, replicate, "X_train")
        )
    return out


@claim(
    paper=PAPER,
    name="biased-kernel-block-diagonal",
    location="§2.3, eq. (9)",
    statement=(
        "Zeroing the train–context cross-covariances of the target effectively enforces a "
        "block-diagonal structure in the covariance given by the learned kernel."
    ),
    kind=Kind.SUPERIORITY,
    setting=TOY,
    expected=Status.REFUTED,
    mutants=(
        Mutant(
            "features-split-by-region",
            "a feature map that puts training-region and far inputs in orthogonal halves",
            {(SurrogateFit, "features"): _block_features},
            expect=Status.CONFIRMED,
            # training never calls SurrogateFit.features (only the fitted posterior does, which
            # this claim does not read): the trained surrogates are the true ones, and the NTK
            # Grams never call it
            reuses=(surrogate, toy, toy_ntk),
        ),
        Mutant(
            "half-the-block-reads-as-block-diagonal",
            "a reading under which a cross block up to half the NTK's is 'effectively "
            "block-diagonal': the measured 0.4 then lies between the two readings, and the "
            "verdict must not rest on the choice",
            {(sys.modules[__name__], "CROSS_LENIENT"): 0.5},
            expect=Status.INCONCLUSIVE,
            # the ratios do not read the threshold: only the decision after them does
            reuses=(surrogate, toy, _cross_ratios),
        ),
    ),
)
def biased_kernel_block_diagonal(ctx: Context) -> Verdict:
    """§2.3: "This operation effectively enforces a block-diagonal structure in the covariance
    matrix given by the approximate kernel" — a stated property whose tolerance the paper does
    not give: over toys, the cross block below :data:`CROSS` of the NTK's confirms, above
    :data:`CROSS_LENIENT` refutes, and a verdict that would depend on the choice between the
    two readings is INCONCLUSIVE."""
    n = REPLICATES[ctx.full]
    rows = [_cross_ratios(ctx.seed, ctx.full, r) for r in _toys(n)]
    col = {k: np.array([row[k] for row in rows]) for k in rows[0]}
    command = COMMAND.format(name="biased-kernel-block-diagonal")
    label = "‖Q_tc‖_F / ‖K_tc‖_F of the biased kernel"
    strict, lenient = (
        decisions.superiority(
            decisions.test(label, col["biased"], threshold=at, side=-1), command=command
        )
        for at in (CROSS, sys.modules[__name__].CROSS_LENIENT)
    )
    lenient_at = sys.modules[__name__].CROSS_LENIENT
    if strict.status is Status.CONFIRMED or lenient.status is Status.REFUTED:
        d = strict if strict.status is Status.CONFIRMED else lenient
    elif Status.INCONCLUSIVE in (strict.status, lenient.status):
        d = strict if strict.status is Status.INCONCLUSIVE else lenient
    else:
        d = decisions.tie(
            Kind.SUPERIORITY,
            f"above {CROSS} but below {lenient_at} of the NTK's block: the verdict rests on "
            "the threshold, which the paper does not give",
            command=command,
        )
    mean = {k: float(v.mean()) for k, v in col.items()}
    return Verdict(
        d.status,
        measured=mean["biased"],
        expected=f"< {CROSS}",
        tolerance=(
            f"one-sided t over {n} toys at α = 0.05: ‖Q_tc‖_F < {CROSS} ‖K_tc‖_F confirms (an "
            f"order of magnitude smaller), > {CROSS_LENIENT} ‖K_tc‖_F refutes (thresholds of "
            "ours: the paper gives none)"
        ),
        summary=(
            f"the biased kernel keeps {mean['biased']:.2f} of the NTK's train–context block "
            f"({mean['unbiased']:.2f} unbiased; mean over {n} toys): smaller, not zero"
        ),
        evidence=(
            f"{n} independent toys, m = {M}, {STEPS[ctx.full]} steps, 90 training × 300 context "
            "inputs. Norm of the learned train–context block relative to the NTK's per toy "
            "(biased, unbiased): "
            + "; ".join(f"{row['biased']:.3f}, {row['unbiased']:.3f}" for row in rows)
            + ". The bias shrinks the cross block but does not remove it, and costs accuracy "
            f"on the training block (relative error {mean['biased_train_error']:.3f} biased, "
            f"{mean['unbiased_train_error']:.3f} unbiased, means): a continuous surrogate "
            "cannot make every training input orthogonal to every context input while "
            "matching both diagonal blocks."
        ),
        details={"per_toy": rows},
        decision=d,
    )


def _loss_ignoring_bias(G: object, Z: object, *, n_first: int | None = None) -> object:
    """The unbiased loss of eq. (3), whatever ``n_first`` says."""
    R = G.shape[0]
    return (
        (G.T @ G).square().sum() - 2 * (G.T @ Z).square().sum() + (Z.T @ Z).square().sum()
    ) / R**2


def _prior_ratio(fit: object, X: np.ndarray) -> float:
    """Median posterior / prior variance at X under the fit's own kernel (prior α⁻¹ g gᵀ)."""
    post = fit.predictive(X).variance()
    prior = np.einsum("ncm,ncm->nc", fit.features(X), fit.features(X)) / ALPHA
    return float(np.median(post / prior))


@claim(
    paper=PAPER,
    name="biased-back-to-prior",
    location="§2.3",
    statement=(
        "The biased kernel enforces a stronger back-to-the-prior behaviour away from the "
        "training data: higher posterior variance relative to the prior at OOD inputs."
    ),
    mutants=(
        Mutant(
            "bias-ignored",
            "the biased run trained on the unbiased loss of eq. (3)",
            {kernel_matching_loss: _loss_ignoring_bias},
            expect=Status.INCONCLUSIVE,
            # the unbiased arm's loss is eq. (3) under both: it trains as the true one does; the
            # exact LLA's variances and the NTK are the toy's
            reuses=(toy, unbiased_with_context, toy_ntk, exact_variance),
        ),
    ),
    kind=Kind.SUPERIORITY,
    setting=TOY,
)
def biased_back_to_prior(ctx: Context) -> Verdict:
    """§2.3: "the resulting kernel is expected to enforce a stronger back-to-the-prior behavior
    between known and unknown regions of the input space [...] predictions for inputs far from
    the training manifold are expected to yield higher posterior variance"."""
    seed, full = ctx.seed, ctx.full
    rows, gains = [], []
    for r in _toys(REPLICATES[full]):
        t = toy(seed, r)
        fits = {
            "ScaLLA": unbiased_with_context(seed, full, r),
            "ScaLLA biased": surrogate(seed, full, M, True, True, replicate=r),
        }
        ratios = {name: _prior_ratio(fit, t.X_ood) for name, fit in fits.items()}
        exact = exact_variance(seed, r, "X_ood")
        K = toy_ntk(seed, r, "X_ood")
        ratios["exact LLA"] = float(np.median(exact / (np.diag(K).reshape(-1, 3) / ALPHA)))
        gains.append(ratios["ScaLLA biased"] - ratios["ScaLLA"])
        rows.append(ratios)
    n = len(gains)
    d = decisions.superiority(
        decisions.test("OOD posterior/prior variance, biased − unbiased", gains),
        command=COMMAND.format(name="biased-back-to-prior"),
    )
    mean, se = d.tests[0].mean, d.tests[0].se
    mean_of = {k: float(np.mean([row[k] for row in rows])) for k in rows[0]}
    return Verdict(
        d.status,
        measured=round(mean, 4),
        expected="> 0",
        tolerance=f"one-sided t over {n} toys at α = 0.05 of the mean gain",
        summary=(
            f"OOD posterior/prior variance {mean_of['ScaLLA']:.2f} → "
            f"{mean_of['ScaLLA biased']:.2f} with the bias (exact LLA "
            f"{mean_of['exact LLA']:.2f}), mean over {n} toys"
        ),
        evidence=(
            f"{n} independent toys (data, MAP, surrogate training), m = {M}, {STEPS[full]} "
            "steps, context from the OOD region. Median over 60 OOD inputs × 3 classes of the "
            "posterior / prior variance (1 = back to the prior), per toy (ScaLLA, ScaLLA "
            "biased, exact LLA): "
            + "; ".join(
                f"{row['ScaLLA']:.3f}, {row['ScaLLA biased']:.3f}, {row['exact LLA']:.3f}"
                for row in rows
            )
            + f". Gain with the bias {mean:.3f} ± {se:.3f} (s.e.); per toy "
            + ", ".join(f"{g:.3f}" for g in gains)
            + ". The gain varies between toys and trainings about as much as its size, so "
            "one toy cannot decide it."
        ),
        details={"gains": gains, "ratios": rows},
        decision=d,
    )
