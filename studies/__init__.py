"""Monte Carlo studies: a parameter grid × replications of a pure ``run_one(params, *, rng)``.

Studies own the loops, not the mathematics: the formulas live in :mod:`laplace_lab.theory`
and :mod:`laplace_lab.numerics`, and a study only declares what to vary and what to
measure. A :class:`Study` declares its grids,
replications and metrics; :func:`run_study` seeds every replication from
(study, parameters, replication), runs it serially, in a process pool or on Dask, and
commits it to an SQLite :class:`Store` as it finishes (resumable, no duplicates).
Its :class:`RunReport` — or :func:`load_results` for a store written earlier — gives the
results: ``summary()`` (means, standard errors, normal or Wilson intervals), ``table()``,
``plot()`` and ``to_csv()``. The CLI is ``laplace-lab study list | run | status | plot |
export``.

::

    from laplace_lab.papers import get_study
    from laplace_lab.studies import run_study

    report = run_study(get_study("ipv-vs-pv"), grid={"N": [30, 100]}, replications=5)
    print(report.table())
    report.plot("ipv-vs-pv.png")
"""

from laplace_lab._lazy import lazy_exports
from laplace_lab.studies.registry import get_study, register, studies
from laplace_lab.studies.results import StudyResults, load_results
from laplace_lab.studies.runner import RunReport, replicate, run_study
from laplace_lab.studies.seeding import replication_rng, replication_seed
from laplace_lab.studies.spec import Study, expand_grid
from laplace_lab.studies.store import SCHEMA_VERSION, Row, Store, StoreError, default_store_path

#: Names loaded on first use: summaries and plots pull in SciPy, statsmodels and matplotlib,
#: which the command line does not need to build its parser.
_LAZY = {
    "SummaryRow": "summary",
    "summarise": "summary",
    "export_rows_csv": "output",
    "export_summary_csv": "output",
    "plot_summary": "output",
}


__all__ = [
    "SCHEMA_VERSION",
    "Row",
    "RunReport",
    "Store",
    "StoreError",
    "Study",
    "StudyResults",
    "SummaryRow",
    "default_store_path",
    "expand_grid",
    "export_rows_csv",
    "export_summary_csv",
    "get_study",
    "load_results",
    "plot_summary",
    "register",
    "replicate",
    "replication_rng",
    "replication_seed",
    "run_study",
    "studies",
    "summarise",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
