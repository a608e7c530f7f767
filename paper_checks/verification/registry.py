"""The claim registry: every checkable paper claim as a function returning a `Verdict`.

A paper's claim modules (``paper_checks/<paper>/*.py``) register their claims with the
:func:`claim` decorator at import time; :mod:`laplace_lab.papers` finds the paper folders and
imports them, so a new paper or claim needs no central edit. This registry imports no paper.

A claim function takes a :class:`Context` (quick or full mode, a seed, a folder for its
figures) and returns a :class:`Verdict`. A refuted claim is a result, not a failure: the
verdict carries the counterexample as evidence. Each claim records the verdict it is
expected to earn; the test suite compares the two, so a change of verdict fails loudly.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from laplace_lab._checks import integer
from laplace_lab._random import keyed_generator
from laplace_lab.paper_checks.verification.decisions import Decision
from laplace_lab.paper_checks.verification.full_record import attach
from laplace_lab.paper_checks.verification.kinds import DECIDED, Kind, Setting, Status
from laplace_lab.paper_checks.verification.mutants import Mutant, applied, clear_caches
from laplace_lab.paper_checks.verification.recorded import Recorded

__all__ = [
    "Claim",
    "Context",
    "Decision",
    "FigurePath",
    "ImplementationError",
    "Kind",
    "Mutant",
    "MutantOutcome",
    "Setting",
    "Status",
    "Verdict",
    "all_claims",
    "claim",
    "load_note",
    "nonfinite",
    "papers",
    "require",
    "run_claim",
    "run_mutant",
]


class FigurePath(str):
    """The path of a saved figure (relative to the report folder) carrying its caption.

    A plain ``str`` everywhere a path is expected; the report prints ``caption`` under the
    figure. :meth:`Context.save_figure` makes them.
    """

    caption: str

    def __new__(cls, path: str, caption: str = "") -> FigurePath:
        obj = super().__new__(cls, path)
        obj.caption = str(caption)
        return obj


@dataclass(frozen=True)
class Verdict:
    """What a claim check found.

    Parameters
    ----------
    status : Status
        CONFIRMED, REFUTED (with the counterexample in ``evidence``),
        NOT_REPRODUCIBLE_HERE (with the reason) or ERROR (the check itself failed).
    measured, expected : float, str or None
        The measured quantity and the value the paper states or implies.
    tolerance : float, str or None
        How far ``measured`` may be from ``expected`` and still confirm the claim.
    evidence : str or sequence of str
        How it was measured, and any counterexample. A sequence is a list of short points
        (one fact each: the set-up, the tolerance and why, the numbers, the counterexample),
        printed as a bulleted list; a string is one paragraph.
    details : Mapping
        Extra JSON-serialisable numbers (e.g. the counterexample matrix).
    figures : tuple of str
        Paths of figures (relative to the report folder) that illustrate the verdict, as
        returned by :meth:`Context.save_figure` (which attaches their captions).
    recorded : tuple of Recorded
        Evidence of costly runs stored in the repository (:mod:`.recorded`), shown beside
        what this run measured.
    summary : str
        The verdict's reason in one line (≤ ~120 characters), printed in the report's
        table beside every REFUTED, NOT_REPRODUCIBLE_HERE and ERROR, e.g. ``"Λ's cross
        terms are 7.9e-3·‖Λ‖, not 0"``. Empty: :attr:`reason` falls back to the first
        sentence of the evidence.
    decision : Decision or None
        The rule that decided ``status``
        (:mod:`~laplace_lab.paper_checks.verification.decisions`). Required for a
        superiority or an equivalence claim whose status is CONFIRMED, REFUTED or
        INCONCLUSIVE; its points are appended to the evidence and it is audited in the run.
    """

    status: Status
    measured: float | str | None = None
    expected: float | str | None = None
    tolerance: float | str | None = None
    evidence: str | Sequence[str] = ""
    details: Mapping[str, Any] = field(default_factory=dict)
    figures: tuple[str, ...] = ()
    recorded: tuple[Recorded, ...] = ()
    summary: str = ""
    decision: Decision | None = None

    @property
    def points(self) -> tuple[str, ...]:
        """The evidence as a tuple of points (a string is one point)."""
        if isinstance(self.evidence, str):
            return (self.evidence.strip(),) if self.evidence.strip() else ()
        return tuple(str(p).strip() for p in self.evidence if str(p).strip())

    @property
    def evidence_text(self) -> str:
        """The evidence as one string: the paragraph, or the points as ``- point`` lines."""
        if isinstance(self.evidence, str):
            return self.evidence.strip()
        return "\n".join(f"- {p}" for p in self.points)

    @property
    def full_reason(self) -> str:
        """``summary``, or else the first sentence of the evidence, whole (the report's)."""
        text = " ".join((self.summary.strip() or next(iter(self.points), "")).split())
        if not self.summary.strip():
            cut = text.find(". ")
            text = text[: cut + 1] if 0 < cut else text
        return text

    @property
    def reason(self) -> str:
        """:attr:`full_reason` cut to at most 160 characters (the terminal's line)."""
        text = self.full_reason
        return text if len(text) <= 160 else text[:159].rstrip() + "…"


@dataclass(frozen=True)
class Context:
    """How to run a claim: quick or full mode, the base seed, where figures go.

    ``mutant`` names the mutant the claim runs under (None for the true code); a claim may
    read it to label its evidence but must not change its logic on it.
    """

    full: bool = False
    seed: int = 0
    figure_dir: Path | None = None
    mutant: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "seed", integer(self.seed, "seed", low=0))

    def rng(self, key: str) -> np.random.Generator:
        """The generator of the stream ``key`` under the base seed: independent across keys.

        Seeded by :func:`laplace_lab._random.keyed_seed` (``("claim", key)``), the same
        function that seeds the study replications.
        """
        return keyed_generator("claim", key, seed=self.seed)

    def save_figure(self, fig: Any, name: str, *, caption: str = "") -> tuple[FigurePath, ...]:
        """Save a matplotlib figure as ``figure_dir/name`` and close it.

        Returns ``("figures/<name>",)``, the path relative to the report folder (the parent
        of ``figure_dir``) carrying ``caption``, ready for ``Verdict.figures``; ``()`` when
        ``figure_dir`` is None. The caption says what is plotted and how to read the decision
        from it: which drawn line or region is the criterion (e.g. "dashed: the 5 % tolerance;
        a curve above it refutes").
        """
        import matplotlib.pyplot as plt

        try:
            if self.figure_dir is None:
                return ()
            self.figure_dir.mkdir(parents=True, exist_ok=True)
            fig.savefig(self.figure_dir / name, dpi=110, bbox_inches="tight")
            return (FigurePath(f"{self.figure_dir.name}/{name}", caption),)
        finally:
            plt.close(fig)


class ImplementationError(RuntimeError):
    """Our own implementation failed a self-check: an ERROR verdict, never one on the paper.

    For example, the fast Greedy-Laplace differs from the literal Algorithm 2.
    """


def require(condition: bool, message: str) -> None:
    """Raise :class:`ImplementationError` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise ImplementationError(message)


@dataclass(frozen=True)
class Claim:
    """A registered paper claim and its mutants.

    The mutants are deliberately wrong variants, each with the verdict it must produce
    (:mod:`laplace_lab.paper_checks.verification.mutants`).
    """

    paper: str
    name: str
    location: str
    statement: str
    expected: Status
    func: Callable[[Context], Verdict]
    mutants: tuple[Mutant, ...] = ()
    timed: bool = False
    kind: Kind = Kind.EXACT
    setting: Setting = field(default_factory=Setting.paper)
    margin: str = ""

    @property
    def key(self) -> str:
        """``paper/name``: unique across the registry."""
        return f"{self.paper}/{self.name}"

    @property
    def unit(self) -> str:
        """``paper/unit``: the claims that share cached experiments run in one process.

        The unit is the module that defines the claim, or the ``WORK_UNIT`` string that
        modules sharing cached experiments declare alike; a claim's verdict does not depend
        on its unit (its streams are keyed by its name), only the time spent recomputing.
        """
        module = sys.modules.get(self.func.__module__)
        unit = getattr(module, "WORK_UNIT", None) or self.func.__module__.rsplit(".", 1)[-1]
        return f"{self.paper}/{unit}"


_REGISTRY: dict[str, Claim] = {}


def claim(
    *,
    paper: str,
    name: str,
    location: str,
    statement: str,
    expected: Status = Status.CONFIRMED,
    mutants: Sequence[Mutant] = (),
    timed: bool = False,
    kind: Kind | str | None = None,
    setting: Setting | None = None,
    margin: str = "",
) -> Callable[[Callable[[Context], Verdict]], Callable[[Context], Verdict]]:
    """Register a claim check.

    Parameters
    ----------
    paper : str
        The paper's file stem, e.g. ``"subnetwork-laplace-optimality"``.
    name : str
        A short identifier, unique within the paper.
    location : str
        Where the claim stands in the paper, e.g. ``"Theorem 2"``, ``"eq. (18)"``.
    statement : str
        The claim in one sentence.
    expected : Status
        The verdict this check is recorded to earn; the test suite compares.
    mutants : sequence of Mutant
        Deliberately wrong variants of what the check relies on, each with the verdict it
        must then give; the test suite proves every one changes the verdict.
    timed : bool
        A clock decides the verdict (a cost exponent measured in CPU time). It must then give
        NOT_REPRODUCIBLE_HERE, with the reason, when the clock was too noisy — never another
        verdict — and its evidence says when the machine's load exceeded its cores.
    kind : Kind or str
        What kind of statement the claim checks (:class:`~.kinds.Kind`: exact, superiority,
        equivalence, existence, cost, erratum). Required.
    setting : Setting
        The paper's setting (``Setting.paper()``) or a substitute and what differs
        (``Setting.substitute("...")``); ``specific=True`` for a specific number of a table
        or figure, which a substitute cannot refute. Required.
    margin : str
        For an equivalence claim: the margin and where it comes from in the paper's own
        numbers. Required for that kind.
    """
    where = f"{paper}/{name}"
    if kind is None:
        raise ValueError(f"claim {where} must declare its kind (one of {[k.value for k in Kind]})")
    kind = Kind(kind)
    if not isinstance(setting, Setting):
        raise ValueError(
            f"claim {where} must declare its setting: Setting.paper() or "
            f"Setting.substitute('what differs'); got setting={setting!r}"
        )
    if kind is Kind.EQUIVALENCE and not str(margin).strip():
        raise ValueError(f"equivalence claim {where} must name its margin and its source")

    def register(func: Callable[[Context], Verdict]) -> Callable[[Context], Verdict]:
        for m in mutants:
            if not isinstance(m, Mutant):
                raise TypeError(f"mutants must be Mutant objects; got {type(m).__name__}")
            if Status(m.expect) is Status(expected):
                raise ValueError(
                    f"mutant {m.name!r} of {paper}/{name} must expect another verdict than "
                    f"the claim's own {Status(expected).value}"
                )
        names = [m.name for m in mutants]
        if len(set(names)) != len(names):
            raise ValueError(f"mutant names of {paper}/{name} must be distinct; got {names}")
        item = Claim(
            paper,
            name,
            location,
            statement,
            Status(expected),
            func,
            tuple(mutants),
            bool(timed),
            kind,
            setting,
            " ".join(str(margin).split()),
        )
        if item.key in _REGISTRY and _REGISTRY[item.key].func is not func:
            raise ValueError(f"claim {item.key!r} is registered twice")
        _REGISTRY[item.key] = item
        return func

    return register


def all_claims(paper: str | None = None) -> list[Claim]:
    """Every registered claim, optionally of one paper, in registration order."""
    claims = list(_REGISTRY.values())
    if paper is not None:
        known = papers()
        if paper not in known:
            raise ValueError(f"paper must be one of {known}; got paper={paper!r}")
        claims = [c for c in claims if c.paper == paper]
    return claims


def papers() -> list[str]:
    """The names of the papers that have registered claims, sorted."""
    return sorted({c.paper for c in _REGISTRY.values()})


def _jsonable(value: Any) -> Any:
    """``value`` made JSON-serialisable: NumPy to Python, non-finite floats to strings."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | str):
        return value
    return str(value)


def _scalar(value: Any) -> float | int | str | None:
    """A number, string or None for the report's measured/expected/tolerance columns;
    structured values become compact JSON text."""
    value = _jsonable(value)
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return value


def _error(message: str, trace: str) -> Verdict:
    return Verdict(Status.ERROR, evidence=trace, summary=" ".join(message.split())[:160])


def load_note() -> str:
    """A sentence for the evidence of a timed claim when the machine's load average (1 min)
    exceeds its cores ("" otherwise, or where the system does not say)."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return ""
    cores = os.cpu_count() or 1
    if load <= cores:
        return ""
    return (
        f"These timings were taken under load: load average {load:.2f} on {cores} cores "
        "(thread CPU time, which the check measures, is far less affected than wall time)."
    )


def nonfinite(value: Any, where: str = "") -> str | None:
    """Where a NaN or an infinity sits in ``value`` (a number, an array, or mappings and
    sequences of them), e.g. ``"['ratio'][2] = inf"``; None when every number is finite."""
    if isinstance(value, bool | str | bytes) or value is None:
        return None
    if isinstance(value, np.ndarray) and value.dtype.kind in "fc":
        bad = np.argwhere(~np.isfinite(value))
        if not len(bad):
            return None
        at = tuple(int(i) for i in bad[0])
        return f"{where}{list(at)} = {value[at]}"
    if isinstance(value, float | np.floating | complex | np.complexfloating):
        return None if np.isfinite(value) else f"{where} = {value}"
    if isinstance(value, Mapping):
        items = value.items()
    elif isinstance(value, list | tuple):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = nonfinite(item, f"{where}[{key!r}]")
        if found is not None:
            return found
    return None


def run_claim(item: Claim, ctx: Context) -> Verdict:
    """Run one claim; an exception becomes an ERROR verdict carrying the traceback.

    An :class:`ImplementationError` (a self-check of our own code failed) becomes an ERROR
    whose evidence starts with its message; its summary is the message. So does a NaN or an
    infinity in the measured evidence (``measured``, ``expected``, ``tolerance``,
    ``details``): a number the check could not compute is never read as a verdict (a
    reduction such as ``max`` would skip a NaN silently).
    """
    try:
        verdict = item.func(ctx)
        if not isinstance(verdict, Verdict):
            raise TypeError(f"claim {item.key} returned {type(verdict).__name__}, not Verdict")
        for name in ("measured", "expected", "tolerance", "details"):
            found = nonfinite(getattr(verdict, name), name)
            if found is not None:
                raise ImplementationError(f"a non-finite number in the evidence: {found}")
        if not ctx.full and ctx.mutant is None:
            recorded = attach(item.func.__module__, item.name, tuple(verdict.recorded))
            verdict = replace(verdict, recorded=recorded)
        verdict = _through_rules(item, verdict)
    except ImplementationError as err:
        message = f"Our implementation failed a self-check: {err}"
        return _error(message, f"{message}\n{traceback.format_exc()}")
    except Exception as err:
        return _error(f"{type(err).__name__}: {err}", traceback.format_exc())
    evidence = verdict.evidence
    if not isinstance(evidence, str):
        evidence = tuple(str(p) for p in evidence)
    if item.timed:
        note = load_note()
        if note:
            evidence = (*evidence, note) if isinstance(evidence, tuple) else f"{evidence} {note}"
    return Verdict(
        verdict.status,
        _scalar(verdict.measured),
        _scalar(verdict.expected),
        _scalar(verdict.tolerance),
        evidence,
        _jsonable(verdict.details),
        tuple(verdict.figures),
        tuple(verdict.recorded),
        str(verdict.summary),
        verdict.decision,
    )


def _through_rules(item: Claim, verdict: Verdict) -> Verdict:
    """``verdict`` held to the decision rules of its claim's kind and setting.

    - A superiority or equivalence claim decides through a rule of
      :mod:`~laplace_lab.paper_checks.verification.decisions`: a decided status without a
      :class:`Decision` of the claim's kind, or with another status, is an error of ours.
    - Every decision, the run's and a recorded run's, is audited on its own data
      (:meth:`Decision.audit`); the run's decision's rule and points join the evidence.
    - A specific number of a table or figure measured on a substitute can be neither refuted
      nor confirmed: REFUTED and CONFIRMED become NOT_REPRODUCIBLE_HERE, with what differs and
      what was measured.
    """
    d = verdict.decision
    if item.kind.statistical and verdict.status in DECIDED:
        require(
            d is not None and d.kind is item.kind,
            f"a {item.kind.value} claim must decide through the decisions module's "
            f"{item.kind.value} rule; its verdict carries "
            + (f"a {d.kind.value} decision" if d is not None else "no decision"),
        )
    for decision in (d, *(r.decision for r in verdict.recorded)):
        if decision is None:
            continue
        problem = decision.audit()
        require(problem is None, f"the decision rule failed its audit: {problem}")
    if d is not None:
        require(
            d.status is verdict.status or verdict.status not in DECIDED,
            f"the verdict says {verdict.status.value} where its decision says {d.status.value}",
        )
        points = (
            (verdict.evidence,) if isinstance(verdict.evidence, str) else tuple(verdict.evidence)
        )
        extra = tuple(p for p in (f"Rule: {d.rule}.", *d.points) if p not in points)
        verdict = replace(verdict, evidence=(*points, *extra))
    if (
        verdict.status in (Status.REFUTED, Status.CONFIRMED)
        and item.setting.specific
        and item.setting.label == "substitute"
    ):
        verdict = replace(
            verdict,
            status=Status.NOT_REPRODUCIBLE_HERE,
            summary=(
                f"would read {verdict.status.value} on a substitute, which can neither refute "
                f"nor confirm a specific number of the paper ({item.setting.differs}): "
                f"{verdict.reason}"
            ),
        )
    return verdict


@dataclass(frozen=True)
class MutantOutcome:
    """The verdict a claim gave under one of its mutants."""

    mutant: Mutant
    status: Status
    seconds: float
    reason: str = ""

    @property
    def caught(self) -> bool:
        """The mutant produced the verdict it must produce."""
        return self.status is Status(self.mutant.expect)


def run_mutant(item: Claim, mutant: Mutant, ctx: Context) -> MutantOutcome:
    """Run ``item`` under ``mutant`` (its cached results apart from the true ones; figures not
    saved)."""
    clear_caches()
    start = time.perf_counter()
    try:
        own = sys.modules.get(item.func.__module__)
        with applied(mutant, *(m for m in (own,) if m is not None)):
            verdict = run_claim(item, replace(ctx, figure_dir=None, mutant=mutant.name))
    finally:
        clear_caches()
    return MutantOutcome(mutant, verdict.status, time.perf_counter() - start, verdict.full_reason)
