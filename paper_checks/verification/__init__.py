"""The verification machinery that turns each paper's claims into checks with verdicts.

It holds claims and verdicts, mutants, the experiment cache, recorded runs, errata and the
report. It imports no paper; each paper's modules import it.

A claim module of a paper needs only this package::

    from laplace_lab.paper_checks.verification import (
        Context, Kind, Setting, Status, Verdict, claim, decisions, require
    )

Modules
-------
kinds
    :class:`Status`, :class:`Kind` (what a claim states), :class:`Setting` (where it is checked).
decisions
    The decision rules: exact, superiority (one-sided t, intersection–union over tasks),
    equivalence (TOST against a margin from the paper), existence, cost, tie.
registry
    :func:`claim`, :class:`Claim`, :class:`Context`, :class:`Verdict`, :class:`Status`,
    :func:`require`; running a claim and a claim under a mutant.
mutants
    :class:`Mutant`: a deliberately wrong variant and the verdict it must produce.
cache
    :func:`cached`: experiments shared by claims, true and mutant results kept apart.
recorded
    :class:`Recorded`: evidence of costly runs stored beside the claims.
errata
    :class:`Erratum` and :func:`register_errata`.
outcome, report, report_html, run_info
    The report (``index.html``, ``report.md``, ``verdicts.json``) and the run's metadata.
cli
    ``laplace-lab check``.
"""

from laplace_lab._lazy import lazy_exports

#: Public name → the module that defines it, imported on first use: the command line imports
#: this package to build its parser and must not pay for NumPy there.
_HOME = {
    "cached": "cache",
    "Decision": "decisions",
    "Kind": "kinds",
    "Setting": "kinds",
    "Erratum": "errata",
    "register_errata": "errata",
    "Mutant": "mutants",
    "Recorded": "recorded",
    "load_recorded": "recorded",
    "Claim": "registry",
    "Context": "registry",
    "FigurePath": "registry",
    "ImplementationError": "registry",
    "Status": "kinds",
    "Verdict": "registry",
    "claim": "registry",
    "require": "registry",
    "step": "progress",
}


__all__ = [
    "Claim",
    "Context",
    "Decision",
    "Erratum",
    "FigurePath",
    "ImplementationError",
    "Kind",
    "Mutant",
    "Recorded",
    "Setting",
    "Status",
    "Verdict",
    "cached",
    "claim",
    "load_recorded",
    "register_errata",
    "require",
    "step",
]

__getattr__, __dir__ = lazy_exports(__name__, _HOME, __all__)
