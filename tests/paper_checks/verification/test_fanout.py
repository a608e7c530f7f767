"""A replicate task computes only while its process computes nothing else: its function is
looked up and run under the process's lock (a mutant of another unit never leaks into it)."""

from __future__ import annotations

import sys
import threading
import time

import cloudpickle

from laplace_lab.paper_checks.verification import fanout


def statistic(i: int) -> float:
    """The true statistic of replicate i."""
    return 1.0 + i


def test_a_replicate_is_unpickled_and_run_only_under_the_process_lock(monkeypatch):
    blob = cloudpickle.dumps(lambda i: statistic(i) * 2.0)  # names `statistic` by reference
    got, started = [], []
    with fanout.UNIT:  # another unit computes here, and applies a mutant meanwhile
        monkeypatch.setattr(sys.modules[__name__], "statistic", lambda i: -100.0)
        worker = threading.Thread(target=lambda: got.append(fanout._draw(blob, 3)))
        worker.start()
        time.sleep(0.2)
        started.append(bool(got))
        monkeypatch.undo()  # the mutant is undone before the unit lets the lock go
    worker.join(timeout=10)
    assert started == [False]  # it waited for the lock
    assert got == [8.0]  # the true statistic, looked up after the mutant was undone
    assert not fanout.UNIT.locked()
