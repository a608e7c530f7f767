"""Study outputs: CSV export of replications and summaries, and PNG plots of summaries.

Plots use ``matplotlib.figure.Figure`` directly (no pyplot, no global figure state), so they
work headless and in worker processes.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from matplotlib.figure import Figure

from laplace_lab.studies.spec import Study
from laplace_lab.studies.store import Row
from laplace_lab.studies.summary import SummaryRow
from laplace_lab.theory.rates import RateFit, fit_rate

__all__ = ["export_rows_csv", "export_summary_csv", "plot_rate", "plot_summary"]


@contextmanager
def _csv_writer(target: str | Path | IO[str]) -> Iterator[Any]:
    """A csv.writer on an open text stream (left open) or on a new file at a path (a file
    left half-written by an error is removed)."""
    if hasattr(target, "write"):
        yield csv.writer(target)
        return
    path = Path(target)
    with _cannot_write(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fh = path.open("w", newline="")
    try:
        with fh:
            yield csv.writer(fh)
    except BaseException:
        path.unlink(missing_ok=True)
        raise


@contextmanager
def _cannot_write(path: Path) -> Iterator[None]:
    """Report an OSError while creating ``path`` as "cannot write PATH: reason"."""
    try:
        yield
    except OSError as exc:
        raise OSError(f"cannot write {path}: {exc.strerror or exc}") from exc


def export_rows_csv(study: Study, rows: Iterable[Row], path: str | Path | IO[str]) -> Any:
    """One CSV line per replication: grid parameters, ``rep``, metrics, ``seconds``.

    ``path`` is a file name or an open text stream (e.g. ``sys.stdout``); returns it (as a
    Path for a name). Floats are written with ``repr`` (round-trip exact).
    """
    rows = list(rows)
    keys = list(study.grid)
    extra = sorted({k for r in rows for k in r.params} - set(keys))
    metrics = sorted({m for r in rows for m in r.metrics})
    with _csv_writer(path) as writer:
        writer.writerow([*keys, *extra, "rep", *metrics, "seconds"])
        for r in rows:
            writer.writerow(
                [
                    *(r.params.get(k, "") for k in keys + extra),
                    r.rep,
                    *(repr(r.metrics[m]) if m in r.metrics else "" for m in metrics),
                    repr(r.seconds),
                ]
            )
    return path if hasattr(path, "write") else Path(path)


def export_summary_csv(
    study: Study, summary: Sequence[SummaryRow], path: str | Path | IO[str]
) -> Any:
    """One CSV line per (grid point, metric): n, mean, se, low, high, interval kind.

    ``path`` is a file name or an open text stream; low and high are empty where one
    replication leaves the interval undefined.
    """
    keys = list(study.grid)
    with _csv_writer(path) as writer:
        writer.writerow([*keys, "metric", "n", "mean", "se", "low", "high", "interval"])
        for s in summary:
            writer.writerow(
                [
                    *(s.params.get(k, "") for k in keys),
                    s.metric,
                    s.n,
                    repr(s.mean),
                    *(repr(v) if math.isfinite(v) else "" for v in (s.se, s.low, s.high)),
                    s.interval,
                ]
            )
    return path if hasattr(path, "write") else Path(path)


def plot_rate(
    ax: Any,
    items: Sequence[SummaryRow],
    x: str,
    *,
    label: str,
    expected: float | None = None,
    floor: float = 0.0,
    color: str | None = None,
) -> RateFit | None:
    """One metric's mean against grid key ``x`` on log–log axes, with its intervals as
    error bars, the fitted exponent in the legend and the ``expected`` slope dashed.

    Points whose mean is ≤ ``floor`` (roundoff) are left out; the exponent is fitted
    (:func:`laplace_lab.theory.rates.fit_rate`, log–log OLS with a 95% interval) when at
    least 3 points remain. The dashed line of slope ``expected`` goes through the first
    point. An interval reaching below 0 is drawn to the bottom of the axis.
    """
    items = sorted((s for s in items if s.mean > floor), key=lambda s: s.params[x])
    if not items:
        return None
    xs = [float(s.params[x]) for s in items]
    ys = [s.mean for s in items]
    lo = [s.mean - s.low if math.isfinite(s.low) else 0.0 for s in items]
    hi = [s.high - s.mean if math.isfinite(s.high) else 0.0 for s in items]
    fit = fit_rate(xs, ys) if len(items) >= 3 else None
    if fit is not None:
        label += f": {x}^{fit.slope:.2f} [{fit.ci_low:.2f}, {fit.ci_high:.2f}]"
    bars = ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o-", ms=3, capsize=2, color=color, label=label)
    if expected is not None:
        ref = [ys[0] * (v / xs[0]) ** expected for v in xs]
        ax.plot(xs, ref, "--", lw=0.8, color=bars[0].get_color())
    ax.set_xscale("log")
    ax.set_yscale("log", nonpositive="clip")
    return fit


def _label(params: dict, keys: Sequence[str]) -> str:
    return ", ".join(f"{k}={params[k]}" for k in keys) or "all"


def plot_summary(
    study: Study,
    summary: Sequence[SummaryRow],
    path: str | Path,
    *,
    metrics: Sequence[str] | None = None,
) -> Path:
    """One panel per metric: mean and interval against ``study.x``, one line per other setting.

    A study with its own ``plot`` callable is drawn by it instead: ``study.plot(summary, path)``.
    """
    path = Path(path)
    with _cannot_write(path):
        path.parent.mkdir(parents=True, exist_ok=True)
    if study.plot is not None:
        with _cannot_write(path):
            study.plot(summary, path)
        return path
    if metrics is None:
        metrics = study.plot_metrics or sorted({s.metric for s in summary})
    names = list(metrics)
    if not names:
        raise ValueError(f"nothing to plot for study {study.name!r}: the summary is empty")
    x = study.x or next(iter(study.grid))
    # Legend keys: the grid parameters (other than x) that vary within this summary.
    varying = [
        k for k in study.grid if k != x and len({repr(s.params.get(k)) for s in summary}) > 1
    ]
    cols = min(3, len(names))
    nrows = math.ceil(len(names) / cols)
    fig = Figure(figsize=(5.0 * cols, 3.6 * nrows), layout="constrained")
    axes = fig.subplots(nrows, cols, squeeze=False).ravel()
    for ax, name in zip(axes, names, strict=False):
        series: dict[str, list[SummaryRow]] = {}
        for s in summary:
            if s.metric == name:
                series.setdefault(_label(s.params, varying), []).append(s)
        numeric = all(isinstance(s.params[x], int | float) for v in series.values() for s in v)
        for label, items in series.items():
            items = sorted(items, key=lambda s: s.params[x]) if numeric else items
            xs = [s.params[x] for s in items]
            ys = [s.mean for s in items]
            lo = [max(s.mean - s.low, 0.0) if math.isfinite(s.low) else 0.0 for s in items]
            hi = [max(s.high - s.mean, 0.0) if math.isfinite(s.high) else 0.0 for s in items]
            ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", ms=3, capsize=2, label=label)
        if numeric and all(s.params[x] > 0 for s in summary if s.metric == name):
            ax.set_xscale("log")
        means = [s.mean for s in summary if s.metric == name]
        if means and min(means) > 0 and max(means) > 100 * min(means):
            ax.set_yscale("log")
        ax.set_xlabel(x)
        ax.set_title(name)
        ax.grid(alpha=0.3)
    for ax in axes[len(names) :]:
        ax.set_visible(False)
    axes[0].legend(fontsize=7)
    fig.suptitle(study.name)
    with _cannot_write(path):
        fig.savefig(path, dpi=110)
    return path
