"""The vocabulary of a verdict: its status, the kind of statement a claim checks, its setting.

A claim declares, where it is registered, what kind of statement it checks (:class:`Kind`) and
in which setting it checks it (:class:`Setting`); the decision rules of
:mod:`~laplace_lab.paper_checks.verification.decisions` and the report read both. The kinds:

- ``exact``: an identity or a stated value, decided against a tolerance from rounding and
  conditioning;
- ``superiority``: "better", "lower", "beats" — a one-sided test; REFUTED only when the reverse
  ordering is significant, INCONCLUSIVE when neither is;
- ``equivalence``: "comparable", "matches", "almost as", "near" — two one-sided tests (TOST)
  against a margin fixed before measuring and taken from the paper's own numbers; a
  non-significant difference never confirms;
- ``existence``: a witness (or a counterexample) found exactly;
- ``cost``: operation counts, memory, complexity exponents;
- ``erratum``: an inconsistency of the text (an index, a sign, a symbol, a label, a name, a count
  that contradicts the paper's own architecture), decided by code but counted apart from the
  claims about the methods: CONFIRMED means the text is consistent, REFUTED that it has the
  erratum.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["DECIDED", "Kind", "Setting", "Status"]


class Status(enum.StrEnum):
    """The verdict on one claim.

    CONFIRMED and REFUTED are decisions; INCONCLUSIVE: the check ran here and its data cannot
    decide at this budget (the verdict states the interval, the smallest effect it could have
    detected and the replicates that would decide); NOT_REPRODUCIBLE_HERE: the check cannot run
    here (data not shipped, a cost of thousands of CPU-hours, a specific number of a table on
    substitute data); ERROR: our own code failed a self-check, or the check crashed.
    """

    CONFIRMED = "CONFIRMED"
    REFUTED = "REFUTED"
    INCONCLUSIVE = "INCONCLUSIVE"
    NOT_REPRODUCIBLE_HERE = "NOT_REPRODUCIBLE_HERE"
    ERROR = "ERROR"


#: The statuses a decision rule returns when the check ran.
DECIDED = frozenset({Status.CONFIRMED, Status.REFUTED, Status.INCONCLUSIVE})


class Kind(enum.StrEnum):
    """What kind of statement a claim checks (module docstring)."""

    EXACT = "exact"
    SUPERIORITY = "superiority"
    EQUIVALENCE = "equivalence"
    EXISTENCE = "existence"
    COST = "cost"
    ERRATUM = "erratum"

    @property
    def statistical(self) -> bool:
        """Decided by a test on replicates, through a rule of the decisions module."""
        return self in (Kind.SUPERIORITY, Kind.EQUIVALENCE)


@dataclass(frozen=True)
class Setting:
    """Where a claim is checked: the paper's own setting, or a substitute and what differs.

    Parameters
    ----------
    differs : str
        Empty for the paper's setting (its data, model and sizes, or its own mathematical
        setting); else what differs from it (data, architecture, size, optimiser budget).
    specific : bool
        The claim is a specific number of a table or figure. On a substitute it cannot be
        REFUTED: a refutation there becomes NOT_REPRODUCIBLE_HERE with the reason.
    """

    differs: str = ""
    specific: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "differs", " ".join(str(self.differs).split()))

    @classmethod
    def paper(cls, *, specific: bool = False) -> Setting:
        """The paper's own setting."""
        return cls("", specific)

    @classmethod
    def substitute(cls, differs: str, *, specific: bool = False) -> Setting:
        """A substitute setting; ``differs`` says what differs from the paper's."""
        if not str(differs).strip():
            raise ValueError("a substitute setting must say what differs; got differs=''")
        return cls(differs, specific)

    @property
    def label(self) -> str:
        """``"paper"`` or ``"substitute"``."""
        return "substitute" if self.differs else "paper"

    def as_json(self) -> dict[str, object]:
        """The ``setting`` object of ``verdicts.json``."""
        return {"label": self.label, "differs": self.differs, "specific": self.specific}
