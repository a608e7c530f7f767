"""A claim runs on one BLAS and torch thread in this process too (``--jobs 1``), as in a worker:
the same arithmetic, hence the same verdicts, for any number of workers."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import torch
from threadpoolctl import threadpool_info

from laplace_lab.paper_checks.verification.registry import _REGISTRY, Context
from laplace_lab.paper_checks.verification.runs import Plan, run_claims

THREADS = """
import torch
from threadpoolctl import threadpool_info

from laplace_lab.paper_checks.verification import Context, Setting, Status, Verdict, claim

SEEN = []


@claim(paper="threads", name="seen", location="1", statement="s", kind="exact",
       setting=Setting.paper())
def seen(ctx: Context) -> Verdict:
    SEEN.append((torch.get_num_threads(), [p["num_threads"] for p in threadpool_info()]))
    return Verdict(Status.CONFIRMED, measured=1.0)
"""


def no_catalog(paper: str | None, names: Sequence[str]) -> None:
    """The claim is registered here."""


def test_a_claim_in_this_process_runs_on_one_thread_and_the_limits_come_back(
    tmp_path, monkeypatch
):
    (tmp_path / "threads_claims.py").write_text(THREADS)
    monkeypatch.syspath_prepend(str(tmp_path))
    import threads_claims

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        plan = Plan(Context(seed=0), "none", no_catalog)
        [out] = run_claims([_REGISTRY["threads/seen"]], plan, jobs=1, echo=lambda line: None)
        assert out.verdict.status.value == "CONFIRMED"
        [(torch_threads, pools)] = threads_claims.SEEN
        assert torch_threads == 1 and pools and set(pools) == {1}
        assert torch.get_num_threads() == 2  # restored after the run
        assert threadpool_info()  # the pools are still there, their limits restored
    finally:
        torch.set_num_threads(before)
        _REGISTRY.pop("threads/seen", None)
        sys.modules.pop("threads_claims", None)
