"""The SQLite result store: one row per replication, committed as it finishes.

Layout (``SCHEMA_VERSION`` 1)::

    meta(key TEXT PRIMARY KEY, value TEXT)          -- format, schema_version, study,
                                                       code_version, seed, created, and the
                                                       grid and replications of the last run
    replications(params TEXT, rep INTEGER, metrics TEXT, seconds REAL,
                 PRIMARY KEY (params, rep))

``params`` is the canonical JSON of the grid point
(:func:`laplace_lab.studies.seeding.params_key`); ``metrics`` is JSON whose floats are written with
``repr`` — the shortest text that round-trips, so float64 metrics come back bit for bit. The
primary key makes a resumed run skip what is done and makes a duplicate impossible. The journal is
in WAL mode and every replication is its own transaction, so a killed process loses at most the
replication it was writing.

Opening refuses — with a :class:`StoreError` saying why — a file that is not an SQLite
database (corrupt or foreign), a database without this layout, a store of another study,
of another schema version, of another code version of the study, or of another seed.
"""

from __future__ import annotations

import json
import math
import shlex
import sqlite3
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["SCHEMA_VERSION", "Row", "Store", "StoreError", "default_store_path"]

#: The layout version written into every store; bump it when the tables change.
SCHEMA_VERSION = 1
_FORMAT = "laplace-lab study store"


class StoreError(RuntimeError):
    """A store cannot be used for this run (corrupt, foreign, other study/schema/code)."""


@dataclass(frozen=True)
class Row:
    """One finished replication."""

    params: dict[str, Any]
    rep: int
    metrics: dict[str, float]
    seconds: float


def _encode_metrics(metrics: Mapping[str, float]) -> str:
    clean = {}
    for name, value in metrics.items():
        if not isinstance(name, str):
            raise TypeError(f"metric names must be strings; got {name!r}")
        if isinstance(value, bool):
            value = float(value)
        try:
            clean[name] = float(value)
        except (TypeError, ValueError):
            raise TypeError(f"metric {name!r} must be a real number; got {value!r}") from None
        if math.isnan(clean[name]):
            raise ValueError(f"metric {name!r} is NaN; run_one must not return NaN")
    return json.dumps(clean, sort_keys=True)


def _first_problem(check: list[tuple[str]], width: int = 80) -> str:
    """The first problem that ``PRAGMA quick_check`` reports, cut to ``width`` characters."""
    lines = (line.strip() for row in check for line in str(row[0]).splitlines())
    first = next((line for line in lines if line and not line.startswith("***")), "failed")
    return first if len(first) <= width else first[: width - 3] + "..."


class Store:
    """An open study store (use as a context manager, or call :meth:`close`).

    Parameters
    ----------
    path : str or Path
        The SQLite file; created (with its folder) if missing.
    study : str
        The study name the store must belong to.
    code_version : str
        The study's code version (:attr:`laplace_lab.studies.spec.Study.code_version`).
    seed : int
        The base seed of the run.
    create : bool
        If False, a missing file is an error (for ``status``, ``plot``, ``export``).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        study: str,
        code_version: str | None = None,
        seed: int | None = None,
        create: bool = True,
    ) -> None:
        self.path = Path(path)
        if not create and not self.path.is_file():
            raise StoreError(f"no store for study {study!r} at {self.path} (run it first)")
        #: Whether this Store created the file (and ``_new_dirs``): :meth:`discard_if_empty`
        #: removes only what it created.
        self.created = not self.path.exists()
        self._new_dirs = [
            d for d in (self.path.parent, *self.path.parent.parents) if not d.exists()
        ]
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            self._remove_created()
            raise StoreError(f"cannot open store {self.path}: {exc}") from exc
        try:
            self._meta = self._initialise(study, code_version, seed)
        except BaseException:
            self._db.close()
            self._remove_created()
            raise

    # -- opening -----------------------------------------------------------------------
    def _initialise(
        self, study: str, code_version: str | None, seed: int | None
    ) -> dict[str, str]:
        db = self._db
        try:
            query = "SELECT name FROM sqlite_master WHERE type='table'"
            tables = {r[0] for r in db.execute(query)}
            if not tables:
                if code_version is None or seed is None:
                    raise StoreError(f"store {self.path} is empty: run study {study!r} first")
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                db.execute("BEGIN IMMEDIATE")
                db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                db.execute(
                    "CREATE TABLE replications (params TEXT NOT NULL, rep INTEGER NOT NULL, "
                    "metrics TEXT NOT NULL, seconds REAL NOT NULL, PRIMARY KEY (params, rep))"
                )
                meta = {
                    "format": _FORMAT,
                    "schema_version": str(SCHEMA_VERSION),
                    "study": study,
                    "code_version": code_version,
                    "seed": str(seed),
                    "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                }
                db.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
                db.execute("COMMIT")
                return meta
            if not {"meta", "replications"} <= tables:
                raise StoreError(
                    f"{self.path} is an SQLite database but not a laplace-lab study store "
                    f"(tables {sorted(tables)}); refusing to reuse it"
                )
            check = db.execute("PRAGMA quick_check").fetchall()
            if check != [("ok",)]:
                raise self._corrupt(f"corrupt: sqlite quick_check says {_first_problem(check)}")
            meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
            db.execute("PRAGMA journal_mode=WAL")
            # WAL + NORMAL: a committed row survives the death of the process (SIGKILL).
            db.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.DatabaseError as exc:
            raise self._corrupt(f"corrupt or not SQLite: {exc}") from exc
        self._check(meta, study, code_version, seed)
        return meta

    def _corrupt(self, why: str) -> StoreError:
        """The error for a store file that cannot be read, with the way to start afresh."""
        path = shlex.quote(str(self.path))
        return StoreError(
            f"store {self.path} is not usable ({why}); move it aside (mv {path} "
            f"{path}.corrupt) and rerun to start a new store"
        )

    def _check(
        self, meta: dict[str, str], study: str, code_version: str | None, seed: int | None
    ) -> None:
        if meta.get("format") != _FORMAT:
            raise StoreError(f"{self.path} is not a laplace-lab study store (no format mark)")
        if meta.get("schema_version") != str(SCHEMA_VERSION):
            raise StoreError(
                f"store {self.path} has schema version {meta.get('schema_version')}; this "
                f"laplace-lab reads schema version {SCHEMA_VERSION}. Use a new --store path."
            )
        if meta.get("study") != study:
            raise StoreError(
                f"store {self.path} belongs to study {meta.get('study')!r}, not {study!r}; "
                "use a different --store path"
            )
        if code_version is not None and meta.get("code_version") != code_version:
            raise StoreError(
                f"store {self.path} was written by code version {meta.get('code_version')} of "
                f"{study!r}; the current code version is {code_version}. Its rows would mix "
                "two versions of run_one: use a new --store path."
            )
        if seed is not None and meta.get("seed") != str(seed):
            raise StoreError(
                f"store {self.path} was run with seed {meta.get('seed')}; this run asks for "
                f"seed {seed}. Use a new --store path."
            )

    # -- access ------------------------------------------------------------------------
    @property
    def meta(self) -> dict[str, str]:
        """The store's metadata (format, schema_version, study, code_version, seed, …)."""
        return dict(self._meta)

    def _execute(self, query: str, args: tuple = ()) -> sqlite3.Cursor:
        try:
            return self._db.execute(query, args)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"store {self.path} failed: {exc}") from exc

    def done(self) -> set[tuple[str, int]]:
        """The (params key, replication) pairs already stored."""
        return {(p, int(r)) for p, r in self._execute("SELECT params, rep FROM replications")}

    def add(self, key: str, rep: int, metrics: Mapping[str, float], seconds: float) -> bool:
        """Commit one replication; False (and nothing written) if it is already stored."""
        cur = self._execute(
            "INSERT OR IGNORE INTO replications VALUES (?, ?, ?, ?)",
            (key, int(rep), _encode_metrics(metrics), float(seconds)),
        )
        return cur.rowcount == 1

    def rows(self) -> Iterator[Row]:
        """All stored replications in key order (grid point text, then replication)."""
        query = "SELECT params, rep, metrics, seconds FROM replications ORDER BY params, rep"
        for params, rep, metrics, seconds in self._execute(query).fetchall():
            yield Row(json.loads(params), int(rep), json.loads(metrics), float(seconds))

    def __len__(self) -> int:
        return int(self._execute("SELECT COUNT(*) FROM replications").fetchone()[0])

    def record_run(self, grid: Mapping[str, Any], replications: int) -> None:
        """Remember the grid and replications of the latest run (``status`` counts against
        them)."""
        meta = {
            "grid": json.dumps({k: list(v) for k, v in grid.items()}),
            "replications": str(replications),
        }
        for key, value in meta.items():
            self._execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
        self._meta.update(meta)

    def last_run(self) -> tuple[dict[str, list[Any]], int] | None:
        """(grid, replications) of the latest run, or None for a store written before they
        were recorded."""
        if "grid" not in self._meta or "replications" not in self._meta:
            return None
        return json.loads(self._meta["grid"]), int(self._meta["replications"])

    def close(self) -> None:
        """Close the connection."""
        self._db.close()

    def discard_if_empty(self) -> bool:
        """Close; if this Store created the file and it holds no replication, delete it (and
        the folders it created). True when it was deleted."""
        empty = self.created and len(self) == 0
        self.close()
        if empty:
            self._remove_created()
        return empty

    def _remove_created(self) -> None:
        if not self.created:
            return
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        for folder in self._new_dirs:  # deepest first
            try:
                folder.rmdir()
            except OSError:
                break

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def default_store_path(study: Any, *, full: bool = False) -> Path:
    """The default store of a study: ``results/<name>.sqlite``.

    It is ``results/<name>-full.sqlite`` for the full grid; ``study`` is a
    :class:`~laplace_lab.studies.spec.Study` or its name.
    """
    name = study if isinstance(study, str) else study.name
    return Path("results") / f"{name}{'-full' if full else ''}.sqlite"
