"""The suite catches classic bugs: each wrong target fails exactly the cases it should, and
the reproducer of a failure, run on its own, reproduces it."""

from __future__ import annotations

import io
from contextlib import redirect_stdout

import pytest

from laplace_lab.conformance import Outcome, cases, validate

MUTANTS = "tests.conformance.mutant_targets"
#: Every case but the heavy ones (the many-outputs case: a fresh process and a streamed oracle
#: per run, tested on its own in test_many_outputs.py).
LIGHT = [n for n, c in cases().items() if not c.heavy]
PREDICTIVE = [n for n in cases() if n.startswith("predictive/")]
REGRESSION = {n for n in PREDICTIVE if "linear" in n or "regression" in n}
SUBSET = {
    "predictive/linear-gaussian-subset",
    "predictive/mlp-regression-subset",
    "predictive/mlp-regression-diagonal-prior",
    "predictive/mlp-regression-subset-float32",
    "predictive/mlp-binary-subset",
    "predictive/mlp-multiclass-subset",
}


def _failed(name: str, only) -> set[str]:
    v = validate(f"{MUTANTS}:{name}", only=only)
    assert not any(r.outcome is Outcome.ERROR for r in v.results), v.summary()
    return {r.case.name for r in v.results if r.outcome is Outcome.FAIL}


@pytest.mark.parametrize(
    ("mutant", "expected"),
    [
        ("forgotten_noise", REGRESSION),  # σ0² = 0.3 in every regression case, 1 otherwise
        ("sorted_test_columns", SUBSET),  # every case with an unsorted subset
        ("prior_twice", set(PREDICTIVE)),  # N′ < p: the prior matters everywhere
        ("prior_as_variance", set(PREDICTIVE)),  # no case has α = 1, where 1/α = α
        # a 1e-6 jitter on the softmax Hessian: every float64 multiclass case (in float32
        # the jitter lies below the rounding the tolerance allows)
        ("jittered_softmax", {n for n in PREDICTIVE if "multiclass" in n and "32" not in n}),
    ],
)
def test_predictive_bugs_fail_exactly_their_cases(mutant, expected):
    assert len(PREDICTIVE) == 17
    assert _failed(mutant, ["predictive/"]) == expected


@pytest.mark.parametrize(
    ("mutant", "prefix"),
    [
        ("wrong_samples", "samples/mlp-regression"),
        ("wrong_evidence", "evidence/"),
        ("wrong_low_rank", "low-rank/"),
        ("wrong_greedy", "masks/greedy_laplace"),
    ],
)
def test_wrong_capabilities_fail(mutant, prefix):
    selected = [n for n in cases() if n.startswith(prefix)]
    assert selected and _failed(mutant, selected) == set(selected)


def test_the_reproducer_of_a_failure_reproduces_it(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # the reproducer must not depend on the working directory
    (result,) = validate(
        f"{MUTANTS}:prior_twice", only=["predictive/mlp-regression-subset"]
    ).results
    assert result.outcome is Outcome.FAIL
    assert (
        "from tests.conformance.mutant_targets import prior_twice as target" in result.reproducer
    )
    namespace: dict = {}
    with redirect_stdout(io.StringIO()):
        exec(result.reproducer, namespace)
    got = float(namespace["got"].reshape(-1)[0])  # the worst test point alone
    assert got == pytest.approx(result.details["got"], rel=1e-12)
    assert abs(got - result.details["oracle"]) > result.details["tolerance"]


DIAGONAL = [n for n in cases() if n.startswith("diagonal/")]
#: The networks with Conv2d layers, whose KFAC cases pass ``approximation``.
CONV_PROBLEMS = ("cnn-multiclass", "conv-linear-gaussian")
CONV_KFAC = [n for n, c in cases().items() if n.startswith("kfac/") and c.problem in CONV_PROBLEMS]
KFAC = [n for n in cases() if n.startswith("kfac/") and n not in CONV_KFAC]
STRUCTURED_REGRESSION = {n for n in DIAGONAL + KFAC if "linear" in n or "regression" in n}


@pytest.mark.parametrize(
    ("mutant", "expected"),
    [
        # diag(Ω⁻¹) = diag(Ω)⁻¹ only where Ω is diagonal: the orthogonal design
        ("wrong_diagonal_inverse", set(DIAGONAL) - {"diagonal/linear-gaussian-orthogonal"}),
        ("wrong_kfac_convention", set(KFAC)),  # x̄ and the mean activations are not zero
        ("wrong_kfac_damping", set(KFAC)),  # (λ_G + √α)(λ_A + √α) ≠ λ_G λ_A + α
        ("structured_forgotten_noise", STRUCTURED_REGRESSION),  # σ0² = 0.3, 1 otherwise
        ("structured_prior_as_variance", set(DIAGONAL + KFAC)),  # no α = 1
    ],
)
def test_diagonal_and_kfac_bugs_fail_exactly_their_cases(mutant, expected):
    assert (len(DIAGONAL), len(KFAC)) == (8, 10)
    assert _failed(mutant, DIAGONAL + KFAC) == expected


@pytest.mark.parametrize(
    ("mutant", "approximation"),
    [
        # reduce answered by expand: the two agree on Linear layers, so only the Conv2d
        # reduce cases fail
        ("conv_reduce_as_expand", "reduce"),
        # expand's input factor R times too large on a Conv2d layer (R = 9 and 4)
        ("conv_expand_without_1_over_R", "expand"),
    ],
)
def test_conv_kfac_bugs_fail_exactly_their_approximations_cases(mutant, approximation):
    assert len(CONV_KFAC) == 6
    expected = {n for n in CONV_KFAC if n.endswith(f"-{approximation}")}
    assert _failed(mutant, CONV_KFAC + KFAC) == expected


def test_a_kfac_target_without_the_approximation_keyword_is_not_offered_the_conv_cases():
    v = validate(f"{MUTANTS}:wrong_kfac_convention", only=CONV_KFAC)
    assert {r.outcome for r in v.results} == {Outcome.NA}
    assert all("takes no keyword approximation" in r.summary for r in v.results)


EKFAC = [n for n in cases() if n.startswith("ekfac/")]


@pytest.mark.parametrize(
    ("mutant", "expected"),
    [
        # KFAC's eigenvalues: every MLP case; on one Linear layer they are the second moments
        ("wrong_ekfac_kfac_eigenvalues", {n for n in EKFAC if "mlp" in n}),
        # the second moments in the parameter basis (layer-wise diagonal): every case
        ("wrong_ekfac_parameter_basis", set(EKFAC)),
    ],
)
def test_ekfac_bugs_fail_exactly_their_cases(mutant, expected):
    assert len(EKFAC) == 10
    assert _failed(mutant, EKFAC) == expected


def test_the_softmax_hessians_diagonal_fails_exactly_the_multiclass_kronecker_cases():
    # diag(π_n) in place of diag(π_n) − π_nπ_nᵀ in G (KFAC, EKFAC, last-layer kron): the
    # one-output cases are untouched; every multiclass one fails (41–54% off)
    kronecker = KFAC + EKFAC + [n for n in cases() if n.startswith("last-layer/")]
    expected = {n for n in kronecker if "multiclass" in n and not n.endswith(("-full", "-diag"))}
    assert len(expected) == 6
    assert _failed("wrong_kfac_softmax_diagonal", kronecker) == expected


PROBABILITIES = [n for n in cases() if n.startswith("probabilities/")]


def _link(name: str) -> str:
    return name.split("/")[1]


@pytest.mark.parametrize(
    ("mutant", "expected"),
    [
        # μ/√(1 + Σ_kk) without π/8: every probit case (float32 by ≥ 1.2e3 tolerances)
        ("wrong_probit_scale", {n for n in PROBABILITIES if _link(n) == "probit"}),
        # 1 000 draws reported as the 100 000 asked for: 2.3–5.8 tolerances
        ("wrong_mc_few_samples", {n for n in PROBABILITIES if _link(n) == "mc"}),
        # σ(μ) or softmax(μ) for the Monte Carlo average: 12–16 tolerances
        ("wrong_mc_plug_in", {n for n in PROBABILITIES if _link(n) == "mc"}),
        # the logits' correlations dropped: both multiclass MC cases (one logit has none) and
        # the bridge (its zero-sum conditioning reads Σ1); the probit reads diag(Σ) only
        (
            "wrong_mc_diagonal",
            {n for n in PROBABILITIES if _link(n) != "probit" and "multi" in n},
        ),
        ("wrong_bridge_zero_sum", {n for n in PROBABILITIES if _link(n) == "bridge"}),
        ("wrong_bridge_norm", {n for n in PROBABILITIES if _link(n) == "bridge"}),
        # Σ doubled: probit and MC fail; the bridge's mean α/Σα is invariant to a scale of Σ
        (
            "wrong_probabilities_covariance_twice",
            {n for n in PROBABILITIES if _link(n) != "bridge"},
        ),
    ],
)
def test_class_probability_bugs_fail_exactly_their_cases(mutant, expected):
    assert len(PROBABILITIES) == 9
    assert _failed(mutant, PROBABILITIES) == expected


SBC = [n for n in cases() if n.startswith("sbc/")]


@pytest.mark.parametrize(
    "mutant",
    [
        "wrong_samples_covariance_twice",  # draws √2 too wide: ∩-shaped rank histogram
        "wrong_samples",  # σ0² = 1 in place of 0.3: 1.7–3.3× too wide
    ],
)
def test_simulation_based_calibration_fails_wrong_spreads(mutant):
    v = validate(f"{MUTANTS}:{mutant}", only=SBC)
    assert len(SBC) == 2
    for r in v.results:
        assert r.outcome is Outcome.FAIL, r.summary
        assert r.details["p_value"] < 1e-9 and r.details["outer_bins"] < 40, r.summary


LAST_LAYER = [n for n in cases() if n.startswith("last-layer/")]


@pytest.mark.parametrize(
    "mutant",
    [
        "last_layer_everything",  # the Laplace over every parameter, not the last layer
        "last_layer_without_bias",  # the last layer's weight only, its bias fixed
    ],
)
def test_last_layer_bugs_fail_every_case(mutant):
    assert len(LAST_LAYER) == 15
    assert _failed(mutant, LAST_LAYER) == set(LAST_LAYER)


STRUCTURED_SAMPLES = [n for n in cases() if n.startswith("structured-samples/")]


@pytest.mark.parametrize(
    ("mutant", "structure"),
    [
        # standard deviation 1/d for 1/√d: variances 1/d² (whitened covariance 0.02–2)
        ("wrong_diagonal_sample_scale", "diag"),
        # M = Q_G (z ⊙ s) Q_A for Q_G (z ⊙ s) Q_Aᵀ: a transposed square root of A's block
        ("wrong_kfac_sample_transposed", "kron"),
        # one eigenpair too many: λ_{r+1} is comparable to or above the prior's α
        ("wrong_low_rank_samples", "low-rank"),
    ],
)
def test_structured_sample_bugs_fail_exactly_their_structures_cases(mutant, structure):
    expected = {n for n in STRUCTURED_SAMPLES if n.split("/")[1] == structure}
    assert expected and _failed(mutant, STRUCTURED_SAMPLES) == expected


@pytest.mark.parametrize(
    ("mutant", "bug", "unnamed"),
    [
        ("prior_as_variance", "prior-as-variance", set()),
        ("structured_prior_as_variance", "prior-as-variance", set()),
        ("prior_twice", "prior-twice", set()),
        # one σ0² and the per-output σ_c² of multi-output regression alike
        ("forgotten_noise", "noise-left-out", set()),
        ("structured_forgotten_noise", "noise-left-out", set()),
        ("wrong_kfac_convention", "other-kfac-convention", set()),
        ("conv_reduce_as_expand", "other-kfac-approximation", set()),
        # the exact linear case is judged against Σ φφᵀ r²/σ0⁴ in closed form, not the oracle
        (
            "ef_is_ggn",
            "ggn-for-empirical-fisher",
            {"empirical-fisher/linear-gaussian-diagonal-prior-full"},
        ),
    ],
)
def test_each_classic_bug_is_named_on_every_case_it_fails(mutant, bug, unnamed):
    v = validate(f"{MUTANTS}:{mutant}", only=LIGHT)
    failed = [r for r in v.results if r.outcome is Outcome.FAIL]
    assert failed
    named = {r.case.name for r in failed if r.details.get("diagnosis") == bug}
    assert named == {r.case.name for r in failed} - unnamed, v.summary()
    assert all(f"[{bug}]" in r.summary for r in failed if r.case.name in named)


@pytest.mark.parametrize(
    "mutant",
    [
        "sorted_test_columns",
        "jittered_softmax",
        "dense_float32",
        "wrong_kfac_damping",
        "diagonal_of_inverse",
        "wrong_ekfac_parameter_basis",
        "wrong_samples",  # σ0² = 1 in the samples: a statistical test names nothing
        "wrong_samples_covariance_twice",
        "last_layer_without_bias",
    ],
)
def test_other_bugs_are_given_no_classic_name(mutant):
    v = validate(f"{MUTANTS}:{mutant}", only=LIGHT)
    named = {r.case.name: r.details["diagnosis"] for r in v.results if "diagnosis" in r.details}
    assert not named


HESSIAN = [n for n in cases() if n.startswith("hessian/")]


@pytest.mark.parametrize(
    "mutant",
    [
        "hessian_is_ggn",  # the GGN: right on the linear model only (its residual term is 0)
        "hessian_residual_sign",  # GGN − Σ r ∇²f: the same, wrong wherever the term is not 0
    ],
)
def test_true_hessian_bugs_fail_exactly_the_mlp_cases(mutant):
    assert len(HESSIAN) == 5
    assert _failed(mutant, HESSIAN) == set(HESSIAN) - {"hessian/linear-gaussian"}
