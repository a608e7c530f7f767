"""Many outputs: C = 1,000 logits, the variances right and the memory within a stated budget.

With C logits the weighted Jacobian of the data is N·C × p: for ``mlp-multiclass-1000``
(N = 40, C = 1,000, p = 3,008) 40,000 × 3,008 float64 = 0.96 GB, several times what the
answer needs. A correct implementation needs the precision Ω and its Cholesky factor
(p × p each), the test Jacobians (M·C × p) and a solve against them (as large), and one
chunk of training Jacobians at a time. The case's budget for the memory the call adds is

    B = 3 · p²·8 + 2 · M·C·p·8 + 128 MiB = 217 MB + 144 MB + 134 MB ≈ 496 MB,

half of one N·C × p float64 array (963 MB): an implementation that forms the training
Jacobian of all rows at once exceeds it whatever else it does.

The target runs in a fresh process (``spawn``), as the peak-memory benchmarks do
(:mod:`laplace_lab.benchmarks.bench_peers_memory`): the process loads the target by its
``MODULE:CALLABLE`` name, builds the problem from its name and seed, calls the target once
on the 3-class ``mlp-multiclass`` problem (imports and first-call set-up), reads its peak
resident memory (``VmHWM``), calls the target on the case's problem and reads the peak again;
the difference is the memory the call added. Its answer comes back and is judged as
:mod:`.predictive` judges the MLP cases, against the streamed float64 oracle
(:class:`~laplace_lab.conformance.oracle.StreamedOracle`: the dense oracle would hold the
0.96 GB array itself). The case PASSes when the variances are within the tolerance and the
added peak is within B; it FAILs when either is not. A target may refuse the size instead:
a :class:`~laplace_lab.conformance.contract.NotOffered` raised before any allocation, whose
message names the size, is N/A (not offered), as every other refusal of a declared
capability; any other exception is an ERROR. A call whose added peak passes
:data:`CAP_BYTES` (6 GiB) is stopped there, so that it cannot exhaust the machine, and FAILs.

The case is heavy (tens of CPU seconds per library): the scoreboard's regeneration runs it,
the per-library test runs leave it out.

References
----------
.. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
   Results and Methods", arXiv:2605.09075 (2026), §2.1 eqs. (2)–(3).
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import re
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import numpy as np

from laplace_lab.conformance.compare import compare_values, target_array
from laplace_lab.conformance.contract import load_target
from laplace_lab.conformance.diagnosis import Replay
from laplace_lab.conformance.oracle import StreamedOracle
from laplace_lab.conformance.problems import Problem, build_problem
from laplace_lab.conformance.registry import Check, conformance_case
from laplace_lab.conformance.runner import (
    NotOfferedError,
    TargetError,
    call_expression,
    call_target,
)

__all__ = ["ALLOWANCE_BYTES", "CAP_BYTES", "WARM_UP", "memory_budget", "run_in_fresh_process"]

#: The fixed allowance of the budget (temporaries, allocator slack).
ALLOWANCE_BYTES = 128 << 20
#: Past this much added peak memory the call is stopped (a FAIL: far over any budget).
CAP_BYTES = 6 << 30
#: The problem of the warm-up call.
WARM_UP = "mlp-multiclass"


def memory_budget(problem: Problem) -> int:
    """B = 3·p²·8 + 2·M·C·p·8 + :data:`ALLOWANCE_BYTES` (module docstring), in bytes."""
    p, M = problem.p, int(problem.X_test.shape[0])
    C = int(problem.model(problem.X_test[:1]).shape[-1])
    return 3 * p * p * 8 + 2 * M * C * p * 8 + ALLOWANCE_BYTES


def _peak_rss() -> int:
    """This process's peak resident memory in bytes (``VmHWM``)."""
    status = Path("/proc/self/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) * 1024


def _stop_at_cap(before: int, flag: str) -> None:
    """Watch the peak; past ``before`` + :data:`CAP_BYTES` write it to ``flag`` and end the
    process (a daemon thread, polling every 20 ms)."""

    def watch() -> None:
        while True:
            peak = _peak_rss()
            if peak - before > CAP_BYTES:
                Path(flag).write_text(f"{before} {peak}")
                os._exit(3)
            time.sleep(0.02)

    threading.Thread(target=watch, daemon=True).start()


def _measure(target_name: str, problem_name: str, seed: int, flag: str) -> dict[str, Any]:
    """In a fresh process: warm up, then call the target on the problem; the answer (or the
    refusal or error) with the peak resident memory before and after the call. Past the
    cap the process writes its peak to ``flag`` and ends."""
    import torch

    torch.set_num_threads(1)
    target = load_target(target_name)
    problem = build_problem(problem_name, seed=seed)
    tiny = build_problem(WARM_UP, seed=seed)
    try:
        call_target(target, "predictive_variance", tiny, rows=slice(None))
        before = _peak_rss()
        _stop_at_cap(before, flag)
        start, cpu = time.perf_counter(), time.process_time()
        out = call_target(target, "predictive_variance", problem, rows=slice(None))
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        peak = _peak_rss()
    except NotOfferedError as err:
        return {"outcome": "not offered", "message": str(err), "call": err.reproducer}
    except TargetError as err:
        return {"outcome": "error", "message": str(err), "call": err.reproducer}
    if hasattr(out, "detach"):
        out = out.detach().cpu().double().numpy()
    return {
        "outcome": "answer",
        "answer": np.asarray(out),
        "before": before,
        "peak": peak,
        "seconds": seconds,
        "cpu_seconds": cpu,
    }


def run_in_fresh_process(target_name: str, problem_name: str, seed: int) -> dict[str, Any]:
    """:func:`_measure` in a fresh ``spawn`` process: ``outcome`` "stopped" (with ``before``
    and ``peak``) when it passed the cap; a TargetError if the process dies otherwise."""
    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as folder:
        flag = Path(folder) / "stopped"
        try:
            with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
                return pool.submit(_measure, target_name, problem_name, seed, str(flag)).result()
        except BrokenProcessPool as err:
            if flag.is_file():
                before, peak = (int(v) for v in flag.read_text().split())
                return {"outcome": "stopped", "before": before, "peak": peak}
            raise TargetError(
                f"the process running the target on {problem_name!r} died (killed, e.g. out "
                f"of memory): {err}"
            ) from err


@functools.cache
def _oracle(name: str, seed: int) -> StreamedOracle:
    return StreamedOracle(build_problem(name, seed=seed))


def _loadable(target: Any) -> str:
    """The target's ``MODULE:CALLABLE`` name, which a fresh process can load."""
    if isinstance(target, Replay):  # answers replayed on a neighbouring problem: no process
        raise TargetError("the many-outputs case runs the target afresh; it replays nothing")
    try:
        load_target(target.name)
    except (ValueError, ImportError) as err:
        raise TargetError(
            f"the many-outputs case runs the target in a fresh process, which loads it by "
            f"its MODULE:CALLABLE name; {target.name!r} cannot be loaded: {err}"
        ) from err
    return target.name


def check_many_outputs(target: Any, problem: Problem, *, seed: int) -> Check:
    """The variances against the streamed oracle and the added peak against the budget."""
    name = _loadable(target)
    got = run_in_fresh_process(name, problem.name, seed)
    expr = call_expression("predictive_variance", problem, rows=slice(None))
    if got["outcome"] == "not offered":
        raise NotOfferedError(got["message"], got["call"])
    if got["outcome"] == "error":
        raise TargetError(got["message"], got["call"])
    budget = memory_budget(problem)
    if got["outcome"] == "stopped":
        added = got["peak"] - got["before"]
        return Check(
            False,
            f"peak memory added over {added / 2**30:.1f} GiB, over the budget of "
            f"{budget / 2**20:.0f} MiB: the call was stopped at the cap of "
            f"{CAP_BYTES / 2**30:.0f} GiB (no answer to compare)",
            {"peak_added_bytes": int(added), "budget_bytes": int(budget), "stopped": True},
            f"got = {expr}  # in a fresh process: more than {CAP_BYTES / 2**30:.0f} GiB added",
        )
    oracle = _oracle(problem.name, seed)
    expected = oracle.predictive_variance()
    values = target_array(got["answer"], "the predictive variance", expected.shape, expr)

    def call(i: int | None) -> str:
        rows = slice(None) if i is None else slice(i, i + 1)
        return call_expression("predictive_variance", problem, rows=rows)

    check = compare_values(
        values,
        expected,
        oracle.variance_tolerance(),
        what="variance vs streamed oracle",
        call=call,
    )
    added = got["peak"] - got["before"]
    memory = {
        "peak_added_bytes": int(added),
        "budget_bytes": int(budget),
        "peak_bytes": int(got["peak"]),
        "seconds": round(float(got["seconds"]), 2),
        "cpu_seconds": round(float(got["cpu_seconds"]), 2),
    }
    within = added <= budget
    said = (
        f"peak memory added {added / 2**20:.0f} MiB "
        f"{'within' if within else 'over'} the budget of {budget / 2**20:.0f} MiB"
    )
    details = {**check.details, **memory}
    if within:
        return Check(check.passed, f"{said}; {check.summary}", details, check.reproducer)
    body = f"got = {expr}  # in a fresh process: peak memory added {added / 2**20:.0f} MiB"
    return Check(
        False, f"{said} (one N·C × p float64 array is 918 MiB); {check.summary}", details, body
    )


@conformance_case(
    "many-outputs/mlp-multiclass-1000",
    capability="predictive_variance",
    problem="mlp-multiclass-1000",
    description=(
        "C = 1,000 logits (tanh MLP 3-2-1000, p = 3,008, N = 40, M = 3): the variances, "
        "and the peak memory the call adds in a fresh process within 3·p² + 2·M·C·p "
        "float64 + 128 MiB ≈ 473 MiB, half of one N·C × p float64 array (918 MiB)"
    ),
    heavy=True,
)
def many_outputs_case(target, problem: Problem, oracle, *, seed: int) -> Check:
    return check_many_outputs(target, problem, seed=seed)
