"""The suite on laplace-lab's own adapter (every case passes), the report and the command line."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest

from laplace_lab.cli import main
from laplace_lab.conformance import (
    CAPABILITIES,
    DenseOracle,
    Outcome,
    build_problem,
    cases,
    write_validation_report,
)
from laplace_lab.conformance.report import VALIDATION_SCHEMA

OURS = "laplace_lab.conformance.adapters.numerics:predictive_variance"
#: The cases of the per-library runs (the heavy ones only run in the scoreboard's
#: regeneration).
LIGHT = {n: c for n, c in cases().items() if not c.heavy}


# one worker validates every installed library once (tests/conformance/conftest.py)
pytestmark = pytest.mark.xdist_group("scoreboard")


@pytest.fixture(scope="module")
def ours(validations):
    return validations["laplace-lab"]


def test_every_case_passes_on_laplace_labs_own_kernels(ours):
    bad = [
        f"{r.case.name}: {r.outcome.value} {r.summary}"
        for r in ours.results
        if r.outcome is not Outcome.PASS
    ]
    assert not bad, bad
    assert ours.passed


def test_the_registry_covers_every_capability_likelihood_dtype_and_subset_kind():
    by_capability = {
        c: [n for n, case in cases().items() if case.capability == c]
        for c in ("predictive_variance", *CAPABILITIES)
    }
    assert {c: len(v) >= 3 for c, v in by_capability.items()} == dict.fromkeys(by_capability, True)
    problems = {case.problem for case in cases().values()}
    for needed in (
        "mlp-binary",
        "mlp-multiclass-float32",
        "linear-gaussian-subset",
        "tiny-mlp-regression",
    ):
        assert needed in problems
    subset = build_problem("mlp-regression-subset", seed=0).subset
    assert np.any(np.diff(subset) < 0) and np.any(np.diff(np.sort(subset)) > 1)  # unsorted, gaps


def test_linear_gaussian_problem_is_at_the_exact_map():
    # gradient of the negative log joint at θ̂ vanishes: it is the Bayesian posterior mean
    import torch

    from laplace_lab.conformance.problems import negative_log_joint

    p = build_problem("linear-gaussian-diagonal-prior", seed=3)
    V = torch.as_tensor(p.prior_vector())
    loss = negative_log_joint(p.model, p.X_train, p.y_train, "regression", p.noise_var, V)
    grads = torch.autograd.grad(loss, list(p.model.parameters()))
    assert max(float(g.abs().max()) for g in grads) < 1e-10


def test_oracle_matches_the_closed_form_on_a_linear_model():
    # an independent check of the oracle itself: Ω = ΦᵀΦ/σ0² + V for f = wᵀx + b
    p = build_problem("linear-gaussian-diagonal-prior", seed=1)
    X = p.X_train.numpy()
    Phi = np.hstack([X, np.ones((len(X), 1))])
    expected = Phi.T @ Phi / p.noise_var + np.diag(p.prior_vector())
    np.testing.assert_allclose(DenseOracle(p).omega, expected, rtol=1e-13)


def test_report_and_json_schema(ours, tmp_path):
    paths = write_validation_report(ours, tmp_path)
    payload = json.loads(paths["json"].read_text())
    jsonschema.validate(payload, VALIDATION_SCHEMA)
    assert payload["passed"] is True and payload["counts"]["PASS"] == len(LIGHT)
    assert "laplace-lab conformance report" in paths["html"].read_text()
    assert "| predictive/mlp-binary |" in paths["markdown"].read_text()


def test_command_line_exit_codes(tmp_path, capsys):
    out = tmp_path / "ok"
    assert (
        main(["validate", "--target", OURS, "--case", "predictive/mlp-binary", "--out", str(out)])
        == 0
    )
    assert (out / "conformance.json").exists()
    wrong = "tests.conformance.mutant_targets:forgotten_noise"
    bad = tmp_path / "bad"
    assert (
        main(
            [
                "validate",
                "--target",
                wrong,
                "--case",
                "predictive/linear-gaussian",
                "--out",
                str(bad),
            ]
        )
        == 1
    )
    report = (bad / "report.md").read_text()
    assert "*Reproducer:*" in report and "build_problem('linear-gaussian', seed=0)" in report
    assert main(["validate", "--list"]) == 0
    assert "predictive/mlp-regression-subset:" in capsys.readouterr().out
    assert main(["validate", "--target", "no_such_module:f"]) == 2
    assert "cannot import target module 'no_such_module'" in capsys.readouterr().err
    assert main(["validate", "--target", OURS, "--case", "no/such-case"]) == 2


def test_the_documented_way_to_add_a_case_works(tmp_path):
    # docs/architecture.md, "A conformance case": its example registered through --plugin
    import re
    import subprocess
    import sys
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "architecture.md").read_text()
    section = doc[doc.index("### A conformance case") :]
    (tmp_path / "my_cases.py").write_text(
        re.findall(r"```python\n(.*?)```", section, re.DOTALL)[0]
    )
    root = Path(__file__).resolve().parents[2]
    env = {"PYTHONPATH": f"{tmp_path}:{root}", "PATH": "/usr/bin:/bin"}

    case = ("--case", "predictive/mlp-binary-first-point", "--plugin", "my_cases")
    targets = {"good": OURS, "bad": "tests.conformance.mutant_targets:prior_twice"}
    runs = [
        ["validate", "--target", target, "--out", str(tmp_path / name), *case]
        for name, target in targets.items()
    ]
    code = f"from laplace_lab.cli import main; print([main(a) for a in {runs!r}])"
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[0, 1]"  # exit codes: conformant, not
    assert "predictive/mlp-binary-first-point: PASS" in out.stdout
    assert "predictive/mlp-binary-first-point: FAIL" in out.stdout
