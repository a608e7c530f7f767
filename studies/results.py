"""The results of a study from Python: rows, summary, a text table, the figure and CSV.

::

    from laplace_lab.papers import get_study  # registers the papers' studies
    from laplace_lab.studies import load_results, run_study

    report = run_study(get_study("ipv-vs-pv"), grid={"N": [30, 100]}, replications=5)
    report.summary()       # list of SummaryRow: mean, s.e., 95% interval per point and metric
    print(report.table())  # what `laplace-lab study status` prints
    report.plot()          # results/ipv-vs-pv.png

    res = load_results("ipv-vs-pv")  # a store written earlier (by the CLI or run_study)

Summaries, plots and CSV pull in SciPy, statsmodels and matplotlib, so they are imported
only when used.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from laplace_lab.studies.registry import get_study
from laplace_lab.studies.spec import Study
from laplace_lab.studies.store import Row, Store, default_store_path

__all__ = ["StudyResults", "format_interval", "load_results"]


def format_interval(low: float, high: float, n: int) -> str:
    """``[low, high]``, or a note when one replication leaves the interval undefined."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return f"(no interval from n={n})"
    return f"[{low:.4g}, {high:.4g}]"


@dataclass(frozen=True)
class StudyResults:
    """The replications stored for ``study`` at ``store``, and what is computed from them."""

    study: Study
    store: Path

    def _open(self) -> Store:
        return Store(self.store, study=self.study.name, create=False)

    def rows(self) -> list[Row]:
        """Every stored replication."""
        with self._open() as db:
            return list(db.rows())

    def summary(self, *, confidence: float = 0.95) -> list[Any]:
        """:func:`laplace_lab.studies.summary.summarise` of the stored rows."""
        from laplace_lab.studies.summary import summarise

        return summarise(self.study, self.rows(), confidence=confidence)

    def table(self) -> str:
        """One line per grid point and metric (mean, interval, n), then the study's report."""
        summary = self.summary()
        lines = []
        for s in summary:
            point = ", ".join(f"{k}={s.params[k]}" for k in self.study.grid if k in s.params)
            interval = format_interval(s.low, s.high, s.n)
            lines.append(
                f"  {point} | {s.metric}: {s.mean:.6g} {interval} ({s.interval}, n={s.n})"
            )
        if self.study.report is not None and summary:
            lines.append(self.study.report(summary))
        return "\n".join(lines)

    def plot(self, path: str | Path | None = None) -> Path:
        """The study's figure as PNG (default: the store's path with ``.png``)."""
        from laplace_lab.studies.output import plot_summary

        out = self.store.with_suffix(".png") if path is None else Path(path)
        return plot_summary(self.study, self.summary(), out)

    def to_csv(self, path: str | Path | IO[str] | None = None, *, summary: bool = False) -> Any:
        """The replications (or, with ``summary``, one line per point and metric) as CSV.

        ``path`` is a file name (default next to the store: ``NAME.csv`` or
        ``NAME-summary.csv``), ``"-"`` for standard output, or an open text file. Returns
        the path written (the file object for streams).
        """
        from laplace_lab.studies.output import export_rows_csv, export_summary_csv

        if path is None:
            stem = self.store.stem + ("-summary" if summary else "")
            path = self.store.with_name(stem + ".csv")
        elif path == "-":
            path = sys.stdout
        if summary:
            return export_summary_csv(self.study, self.summary(), path)
        return export_rows_csv(self.study, self.rows(), path)


def load_results(
    study: Study | str, *, store: str | Path | None = None, full: bool = False
) -> StudyResults:
    """The results of a study run earlier (a StoreError when there is no store yet).

    Parameters
    ----------
    study : Study or str
        The study or its registered name.
    store : path, optional
        Its store (default ``results/NAME.sqlite``, ``results/NAME-full.sqlite`` with
        ``full``).
    """
    study = get_study(study) if isinstance(study, str) else study
    if not isinstance(study, Study):
        raise TypeError(f"study must be a Study or a study name; got {type(study).__name__}")
    path = Path(store) if store is not None else default_store_path(study, full=full)
    Store(path, study=study.name, create=False).close()  # refuse a missing or foreign store
    return StudyResults(study, path)
