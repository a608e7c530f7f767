"""Run conformance cases on a target: ``validate(target)`` → results, each with a reproducer."""

from __future__ import annotations

import functools
import sys
import time
import traceback
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from laplace_lab._checks import integer
from laplace_lab.conformance.contract import NotOffered, Target, load_target
from laplace_lab.conformance.diagnosis import FLOAT32_SIZED, Recording, float32_sized
from laplace_lab.conformance.named_bugs import named_bug
from laplace_lab.conformance.oracle import DenseOracle
from laplace_lab.conformance.problems import Problem, build_problem
from laplace_lab.conformance.registry import Case, CaseResult, Check, Outcome, cases, get_case

__all__ = [
    "NotOfferedError",
    "TargetError",
    "Validation",
    "call_expression",
    "call_target",
    "import_block",
    "reproducer",
    "validate",
]


class TargetError(Exception):
    """The target raised, changed its model, or returned something outside the contract.

    ``reproducer`` is the call that did it (as in :func:`call_expression`).
    """

    def __init__(self, message: str, reproducer: str = "") -> None:
        super().__init__(message)
        self.reproducer = reproducer


class NotOfferedError(TargetError):
    """The target refused the call before calling its library: it raised
    :class:`~laplace_lab.conformance.contract.NotOffered` (reported N/A, not ERROR)."""


@dataclass(frozen=True)
class Validation:
    """Every case's result on one target."""

    target: str
    seed: int
    results: tuple[CaseResult, ...]

    @property
    def passed(self) -> bool:
        """No FAIL and no ERROR (SKIPs are capabilities the target does not declare, N/As
        requests of a declared capability that it does not offer)."""
        return not any(r.outcome in (Outcome.FAIL, Outcome.ERROR) for r in self.results)

    def counts(self) -> dict[str, int]:
        """Number of results per outcome."""
        c = Counter(r.outcome for r in self.results)
        return {o.value: c.get(o, 0) for o in Outcome}

    def summary(self) -> str:
        """One line: target, seed and the outcome counts."""
        counts = ", ".join(f"{n} {o}" for o, n in self.counts().items())
        return f"target {self.target}; seed {self.seed}; {len(self.results)} cases: {counts}."


def _parameters(model: Any) -> np.ndarray:
    import torch

    return torch.nn.utils.parameters_to_vector(model.parameters()).detach().cpu().numpy().copy()


def _expr(value: Any, problem: Problem) -> str:
    return "problem.subset" if value is problem.subset and value is not None else repr(value)


def call_expression(
    capability: str,
    problem: Problem,
    *,
    rows: slice | None = None,
    method: str | None = None,
    **extra: Any,
) -> str:
    """The Python call of ``capability`` on ``problem`` (for reproducers).

    ``rows`` selects test inputs (``None``: the capability takes none); ``extra`` are the
    further keyword arguments.
    """
    if capability == "predictive_variance":
        fn = "target"
    elif capability == "subset_masks":
        fn = f"target.subset_masks[{method!r}]"
    else:
        fn = f"target.{capability}"
    args = "problem.model, problem.X_train, problem.y_train"
    if rows is not None:
        whole = rows == slice(None)
        args += ", problem.X_test" if whole else f", problem.X_test[{rows.start}:{rows.stop}]"
    extras = "".join(f", {k}={_expr(v, problem)}" for k, v in extra.items())
    return f"{fn}({args}, **kw{extras})"


def call_target(
    target: Target,
    capability: str,
    problem: Problem,
    *,
    rows: slice | None = None,
    method: str | None = None,
    **extra: Any,
) -> Any:
    """Call ``capability`` of ``target`` on ``problem`` (a fresh copy of its model).

    ``rows`` selects the test inputs passed after ``y_train`` (``None`` for capabilities
    without test inputs); ``extra`` keywords (``subset``, ``k``, ``rank``, ``n_samples``,
    ``seed``) follow the contract. Anything the target raises, and a change of the model's
    parameters, becomes a :class:`TargetError` carrying the call; a
    :class:`~laplace_lab.conformance.contract.NotOffered` refusal a :class:`NotOfferedError`.
    """
    model = problem.fresh_model()
    before = _parameters(model)
    args = [model, problem.X_train, problem.y_train]
    if rows is not None:
        args.append(problem.X_test[rows])
    expr = call_expression(capability, problem, rows=rows, method=method, **extra)
    try:
        out = target.call(capability, *args, method=method, **problem.target_kwargs(), **extra)
    except NotOffered as exc:
        raise NotOfferedError(str(exc), expr) from exc
    except Exception as exc:
        message = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        raise TargetError(message, expr) from exc
    if not np.array_equal(before, _parameters(model)):
        raise TargetError("the target changed the model's parameters (it must not)", expr)
    return out


def _target_lines(target: Target) -> list[str]:
    module, _, attr = target.name.partition(":")
    head, _, rest = attr.partition(".")
    line = f"from {module} import {head}" + ("" if rest else " as target")
    return [line] + ([f"target = {head}.{rest}"] if rest else [])


def _name_order(name: str) -> tuple[int, str]:
    """isort's order of imported names: constants, then classes, then the rest."""
    kind = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
    return kind, name


def import_block(lines: list[str]) -> list[str]:
    """``lines`` (``import …`` and ``from … import …``) merged and ordered as isort orders
    them: the standard library, third-party, then laplace_lab (a blank line between), in each
    ``import`` before ``from``, modules sorted, one ``from`` line per module (an ``as``
    import on a line of its own)."""
    sections: dict[int, tuple[set[str], dict[tuple[str, str], set[str]]]] = {}
    for line in lines:
        words = line.split()
        top = words[1].split(".")[0]
        section = 2 if top == "laplace_lab" else 0 if top in sys.stdlib_module_names else 1
        plain, froms = sections.setdefault(section, (set(), {}))
        if words[0] == "import":
            plain.add(line)
        else:
            module, names = words[1], line.split(" import ", 1)[1]
            for name in names.split(","):
                name = name.strip()
                key = (module, name if " as " in name else "")
                froms.setdefault(key, set()).add(name)
    out: list[str] = []
    for section in sorted(sections):
        plain, froms = sections[section]
        if out:
            out.append("")
        out += sorted(plain)
        for module, alias in sorted(froms):
            names = sorted(froms[(module, alias)], key=_name_order)
            out.append(f"from {module} import {', '.join(names)}")
    return out


def reproducer(target: Target, case: Case, seed: int, body: str) -> str:
    """A self-contained Python snippet: build the case's problem, call the target.

    The body's leading imports join the snippet's own at the top, in isort's order.
    """
    code = body.strip().splitlines()
    starts = (i for i, line in enumerate(code) if not line.startswith(("from ", "import ")))
    n = next(starts, len(code))
    target_import, *target_rest = _target_lines(target)
    imports = [*code[:n], "from laplace_lab.conformance import build_problem", target_import]
    lines = [
        *import_block(imports),
        *target_rest,
        "",
        f"problem = build_problem({case.problem!r}, seed={seed})",
        "kw = problem.target_kwargs()",
        *code[n:],
    ]
    return "\n".join(lines) + "\n"


@functools.lru_cache(maxsize=32)
def _prepared(name: str, seed: int) -> tuple[Problem, DenseOracle]:
    """A problem and its oracle, built once per (name, seed): cases sharing a problem share
    its MAP training and its oracle (targets always get a fresh copy of the model)."""
    problem = build_problem(name, seed=seed)
    return problem, DenseOracle(problem)


def _run_case(target: Target, case: Case, seed: int) -> CaseResult:
    start = time.perf_counter()
    if not target.has(case.capability, case.method):
        what = case.capability + (f"[{case.method!r}]" if case.method else "")
        return CaseResult(case, Outcome.SKIP, f"the target does not declare {what}", {}, "", 0.0)
    problem, oracle = _prepared(case.problem, seed)
    recording = Recording.of(target)
    try:
        check = case.run(recording, problem, oracle, seed=seed)
    except NotOfferedError as err:
        seconds = time.perf_counter() - start
        return CaseResult(case, Outcome.NA, str(err), {}, "", seconds)
    except TargetError as err:
        seconds = time.perf_counter() - start
        text = reproducer(target, case, seed, err.reproducer)
        return CaseResult(case, Outcome.ERROR, str(err), {}, text, seconds)
    outcome = Outcome.PASS if check.passed else Outcome.FAIL
    text = "" if check.passed else reproducer(target, case, seed, check.reproducer)
    summary, details = check.summary, dict(check.details)
    if not check.passed and _float32_sized(case, recording, problem, oracle, seed):
        summary, details["float32_sized"] = FLOAT32_SIZED + summary, True
    elif not check.passed:

        def judged(replay: Target, alt: Problem, alt_oracle: DenseOracle) -> Check:
            try:
                return case.run(replay, alt, alt_oracle, seed=seed)
            except TargetError as err:
                return Check(False, str(err), {}, "")

        bug = named_bug(recording, case, problem, oracle, judged)
        if bug is not None:
            details["diagnosis"] = bug[0]
            summary = f"consistent with {bug[1]} [{bug[0]}]: {summary}"
    seconds = time.perf_counter() - start
    return CaseResult(case, outcome, summary, details, text, seconds)


def _float32_sized(
    case: Case, recording: Recording, problem: Problem, oracle: DenseOracle, seed: int
) -> bool:
    """Whether a failure's answers pass the case at float32's unit roundoff (.diagnosis)."""

    def run(replay: Target) -> Any:
        return case.run(replay, problem, oracle, seed=seed)

    try:
        return float32_sized(recording, problem.dtype, case.capability, run)
    except TargetError:
        return False


def validate(
    target: Target | str | Any,
    *,
    only: Iterable[str] | None = None,
    seed: int = 0,
    progress: Any = None,
) -> Validation:
    """Run the registered conformance cases on ``target``.

    Parameters
    ----------
    target : Target, str or callable
        ``"MODULE:CALLABLE"``, a callable following the contract
        (:mod:`laplace_lab.conformance.contract`), or a :class:`Target`.
    only : iterable of str, optional
        Case names or name prefixes (``"predictive/"``; a single string is one name); all
        cases when None.
    seed : int
        ≥ 0: rebuilds every problem (data, model, MAP, subsets) and the sampling seeds.
    progress : callable, optional
        Called with each :class:`CaseResult` as it finishes (the command line prints it).

    Returns
    -------
    Validation
        ``.passed`` is False on any FAIL or ERROR.
    """
    if isinstance(target, str):
        target = load_target(target)
    elif not isinstance(target, Target):
        target = Target.from_callable(target)
    seed = integer(seed, "seed", low=0)
    selected = _select(only)
    results = []
    for case in selected:
        result = _run_case(target, case, seed)
        results.append(result)
        if progress is not None:
            progress(result)
    return Validation(target.name, seed, tuple(results))


def _select(only: Iterable[str] | None) -> Sequence[Case]:
    known = cases()
    if only is None:
        return list(known.values())
    if isinstance(only, str):
        only = [only]
    chosen: dict[str, Case] = {}
    for name in only:
        exact = [known[name]] if name in known else []
        hits = exact or [c for n, c in known.items() if n.startswith(name)]
        if not hits:
            get_case(name)  # the ValueError listing the known names
        chosen.update((c.name, c) for c in hits)
    return list(chosen.values())
