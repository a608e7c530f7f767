"""Shared test configuration: Hypothesis profiles selected by HYPOTHESIS_PROFILE, one share of
the CPUs per pytest-xdist worker, the cyclic garbage collector kept to each test's own objects,
and the docs site built once per session."""

from __future__ import annotations

import gc
import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=100,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=60, deadline=None)
settings.register_profile(
    "thorough", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def pytest_collection_modifyitems(config, items):
    """Skip tests marked ``slow`` unless LAPLACE_LAB_SLOW=1."""
    if os.environ.get("LAPLACE_LAB_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow: set LAPLACE_LAB_SLOW=1 to run")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def pytest_configure(config):
    """Under pytest-xdist, each worker's BLAS and torch pools get its share of the CPUs.

    Left alone, every worker's pools take every CPU: on 2 cores, two workers run four busy
    threads, which costs more time than the threads save on the suite's small matrices. The
    environment variables carry the limit to the subprocesses the tests start (the README
    examples), which read them when they load BLAS and torch. ``make check`` does the same
    per worker (``verification.timing.single_thread``).
    """
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    if workers < 1:
        return
    share = max(1, (os.cpu_count() or 1) // workers)
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(share)
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=share)
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a test dependency
        return
    torch.set_num_threads(share)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """After each test's teardown, collect its cyclic garbage, then freeze what survives.

    A worker's heap grows to about a million objects (the claims' cached experiments, the
    scoreboard's run), and left alone the collector walks all of them again and again: 8–9 s
    of full collections per worker over the suite, and 2–4 s at exit, where pytest collects
    five times in a row. Frozen objects (``gc.freeze``) are never walked again, so a
    collection sees only what the tests since the last freeze made, and the one here frees a
    test's cycles before they are frozen. Measured over the whole suite: full collections
    3–5 s per worker (this hook's included), about 1 s at exit; the two workers' peak memory
    7.3 GB together before, 7.1 GB after. A frozen object that becomes cyclic garbage later
    is freed only at exit.
    """
    gc.collect()
    gc.freeze()


@pytest.fixture(scope="session")
def built_site(tmp_path_factory):
    """``mkdocs build --strict`` of the repository's docs, once per session (per worker: the
    modules that read it share the xdist group ``"docs-site"``): (the finished process, the
    site folder). Read it, never write to it."""
    from tests.test_docs import ROOT, build

    site = tmp_path_factory.mktemp("docs") / "site"
    return build(ROOT / "mkdocs.yml", site), site
