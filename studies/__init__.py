"""Monte Carlo studies: a parameter grid × replications of a pure ``run_one(params, rng)``.

Studies own the loops, not the mathematics: the formulas live in :mod:`laplace_lab.theory`
and :mod:`laplace_lab.numerics`, and a study only declares what to vary and what to
measure. A :class:`Study` declares its grids,
replications and metrics; :func:`run_study` seeds every replication from
(study, parameters, replication), runs it serially, in a process pool or on Dask, and
commits it to an SQLite :class:`Store` as it finishes (resumable, no duplicates);
:func:`summarise` gives means, standard errors and Wilson intervals;
:mod:`laplace_lab.studies.output` plots and exports. The CLI is ``laplace-lab study list | run |
status | plot | export``.
"""

from laplace_lab.studies.output import export_rows_csv, export_summary_csv, plot_summary
from laplace_lab.studies.registry import get_study, register, studies
from laplace_lab.studies.runner import RunReport, default_store_path, run_study
from laplace_lab.studies.seeding import replication_rng, replication_seed
from laplace_lab.studies.spec import Study, expand_grid
from laplace_lab.studies.store import SCHEMA_VERSION, Row, Store, StoreError
from laplace_lab.studies.summary import SummaryRow, summarise

__all__ = [
    "SCHEMA_VERSION",
    "Row",
    "RunReport",
    "Store",
    "StoreError",
    "Study",
    "SummaryRow",
    "default_store_path",
    "expand_grid",
    "export_rows_csv",
    "export_summary_csv",
    "get_study",
    "plot_summary",
    "register",
    "replication_rng",
    "replication_seed",
    "run_study",
    "studies",
    "summarise",
]
