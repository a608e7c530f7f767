"""Errata: internal inconsistencies and errors found in the papers, registered by each paper.

A paper's ``errata.py`` registers its entries with :func:`register_errata`. Each says where
the paper is wrong or inconsistent, what is right, and the claim checks it rests on
(``claims``: names of claims of the same paper, or ``paper/name`` keys). The report prints
them in its errata section, links each to its claims, and links every claim's section back
to the errata that rest on it; the test suite checks that every named claim exists.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Erratum", "errata_of", "register_errata", "registered_errata"]


@dataclass(frozen=True)
class Erratum:
    """One error or inconsistency in a paper.

    Parameters
    ----------
    paper, location : str
        The paper's file stem and where in it.
    says, correction : str
        What the paper says, and what is right.
    claims : sequence of str
        The claim checks that give the evidence: names within ``paper`` or ``paper/name``
        keys (empty when it is read from the text alone). A string such as
        ``("a", "b")`` is accepted and split.
    """

    paper: str
    location: str
    says: str
    correction: str
    claims: Sequence[str] = ()

    def __post_init__(self) -> None:
        names = self.claims
        if isinstance(names, str):
            names = [n for n in re.split(r"[,\s]+", re.sub(r"^claims?\s+", "", names)) if n]
        keys = tuple(n if "/" in n else f"{self.paper}/{n}" for n in names)
        object.__setattr__(self, "claims", keys)

    @property
    def anchor(self) -> str:
        """The HTML anchor of this erratum in the report."""
        known = registered_errata()
        return f"erratum-{known.index(self) + 1}" if self in known else "errata"


_REGISTRY: list[Erratum] = []


def register_errata(*errata: Erratum) -> None:
    """Register a paper's errata (registering the same entry again changes nothing)."""
    for erratum in errata:
        if not isinstance(erratum, Erratum):
            raise TypeError(f"register_errata expects Erratum objects; got {erratum!r}")
        if erratum not in _REGISTRY:
            _REGISTRY.append(erratum)


def registered_errata() -> list[Erratum]:
    """Every registered erratum, grouped by paper (papers sorted, each in its own order)."""
    return sorted(_REGISTRY, key=lambda e: e.paper)


def errata_of(key: str) -> list[Erratum]:
    """The errata that rest on the claim ``paper/name``."""
    return [e for e in registered_errata() if key in e.claims]
