"""The SQLite store: exact round trip, unique rows, and clear refusals."""

from __future__ import annotations

import sqlite3

import pytest

from laplace_lab.studies.store import SCHEMA_VERSION, Store, StoreError


def _open(path, **kw):
    args = dict(study="s", code_version="1+abc", seed=0)
    args.update(kw)
    return Store(path, **args)


def test_metrics_round_trip_bit_for_bit_and_duplicates_are_ignored(tmp_path):
    path = tmp_path / "s.sqlite"
    values = {"a": 0.1 + 0.2, "b": 5e-324, "c": -0.0, "d": float("inf"), "e": 1 / 3}
    with _open(path) as db:
        assert db.add('{"N":10}', 0, values, 0.5) is True
        assert db.add('{"N":10}', 0, {"a": 1.0}, 0.1) is False  # same key: not written
        assert db.add('{"N":10}', 1, {"a": True}, 0.1) is True
    with _open(path) as db:
        rows = list(db.rows())
        assert len(db) == 2 and db.done() == {('{"N":10}', 0), ('{"N":10}', 1)}
    got = rows[0].metrics
    assert {k: v.hex() for k, v in got.items()} == {k: v.hex() for k, v in values.items()}
    assert rows[0].params == {"N": 10} and rows[1].metrics == {"a": 1.0}


def test_bad_metrics_are_refused(tmp_path):
    with _open(tmp_path / "s.sqlite") as db:
        with pytest.raises(ValueError, match="'x' is NaN"):
            db.add("{}", 0, {"x": float("nan")}, 0.0)
        with pytest.raises(TypeError, match="'x' must be a real number"):
            db.add("{}", 0, {"x": "high"}, 0.0)
        assert len(db) == 0


def test_a_corrupt_file_is_refused(tmp_path):
    path = tmp_path / "s.sqlite"
    path.write_bytes(b"this is not a database, it is an impostor" * 100)
    with pytest.raises(StoreError, match="corrupt or not SQLite"):
        _open(path)


def test_a_store_with_a_damaged_page_is_refused(tmp_path):
    path = tmp_path / "s.sqlite"
    with _open(path) as db:
        for i in range(2000):
            db.add(f'{{"i":{i}}}', 0, {"x": float(i)}, 0.0)
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    data = bytearray(path.read_bytes())
    assert len(data) > 11 * 4096
    data[10 * 4096 : 11 * 4096] = b"\xff" * 4096  # one page of the rows, header intact
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError, match="corrupt"):
        with _open(path) as db:
            list(db.rows())


def test_a_foreign_sqlite_database_is_refused(tmp_path):
    path = tmp_path / "other.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="not a laplace-lab study store"):
        _open(path)


def test_another_study_schema_code_version_or_seed_is_refused(tmp_path):
    path = tmp_path / "s.sqlite"
    _open(path).close()
    with pytest.raises(StoreError, match="belongs to study 's', not 't'"):
        _open(path, study="t")
    with pytest.raises(StoreError, match="code version 1\\+abc"):
        _open(path, code_version="2+def")
    with pytest.raises(StoreError, match="seed 0"):
        _open(path, seed=1)
    con = sqlite3.connect(path)
    con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    with pytest.raises(
        StoreError, match=f"schema version 99.*reads schema version {SCHEMA_VERSION}"
    ):
        _open(path)


def test_reading_a_missing_store_is_an_error(tmp_path):
    with pytest.raises(StoreError, match="no store for study 's'"):
        Store(tmp_path / "nothing.sqlite", study="s", create=False)
