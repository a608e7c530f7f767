"""The peer rows time CPU work on one thread: ratios that load on a shared machine barely move."""

from __future__ import annotations

import os
import sys
import time

import torch

from laplace_lab.benchmarks._harness import timed
from laplace_lab.benchmarks.bench_peers import CLOCK, XLA_ONE_THREAD, one_thread


def test_the_peer_clock_counts_work_not_waiting():
    _, wall = timed(lambda: time.sleep(0.2), repeat=2)
    _, cpu = timed(lambda: time.sleep(0.2), repeat=2, clock=CLOCK)
    assert wall >= 0.2 and cpu < 0.05
    _, cpu = timed(lambda: sum(i * i for i in range(300_000)), clock=CLOCK)
    assert cpu > 0.005  # busy Python is counted


def test_one_thread_sets_torch_and_xla_and_restores_torch(monkeypatch):
    monkeypatch.delitem(sys.modules, "jax", raising=False)
    monkeypatch.setenv("XLA_FLAGS", "--xla_dump_to=/tmp/x")
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with one_thread():
            assert torch.get_num_threads() == 1
            assert os.environ["XLA_FLAGS"] == f"--xla_dump_to=/tmp/x {XLA_ONE_THREAD}"
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
