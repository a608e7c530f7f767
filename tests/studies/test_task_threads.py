"""A study's replications run with every BLAS pool on one thread, the limits restored after."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from laplace_lab.studies.executors import Task, run_task
from tests.studies.toy import TOY

SEEN: list[list[int]] = []


def _threads(params: dict, *, rng: np.random.Generator) -> dict[str, float]:
    SEEN.append([p["num_threads"] for p in threadpool_info()])
    return {"estimate": 0.0, "error": 0.0, "covered": 1.0}


def test_every_replication_sees_one_thread_and_the_limits_come_back():
    study = replace(TOY, run_one=_threads, run_batch=None)
    params = {"n": 10, "scale": 1.0, "pause": 0.0}
    SEEN.clear()
    with threadpool_limits(limits=2):
        before = [p["num_threads"] for p in threadpool_info()]
        for rep in range(3):  # the pools found once, then reused
            run_task(Task(study, params, rep, seed=0))
        assert [p["num_threads"] for p in threadpool_info()] == before
    assert len(SEEN) == 3 and all(seen and set(seen) == {1} for seen in SEEN)
    assert 2 in before  # the limit inside the task was not already in place
