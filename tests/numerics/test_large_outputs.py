"""Huge-page backed output tensors: same contract as torch.empty, mapping freed with the tensor."""

from __future__ import annotations

import gc
import mmap
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from laplace_lab.numerics._large_outputs import HUGE_PAGE_THRESHOLD, empty  # noqa: E402

_THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def _mapping_of(ptr: int) -> str | None:
    """The /proc/self/smaps block of the mapping that contains address ``ptr``."""
    text = Path("/proc/self/smaps").read_text()
    for block in re.split(r"\n(?=[0-9a-f]+-[0-9a-f]+ )", text):
        lo, hi = (int(v, 16) for v in block.split(" ", 1)[0].split("-"))
        if lo <= ptr < hi:
            return block
    return None


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_large_cpu_output_is_a_writable_contiguous_tensor(dtype):
    shape = (300, 1000, 3)  # ≥ 2 MiB in either dtype
    t = empty(shape, dtype=dtype, device="cpu")
    assert t.shape == shape and t.dtype == dtype and t.device.type == "cpu"
    assert t.is_contiguous() and t.data_ptr() % mmap.PAGESIZE == 0
    t.copy_(torch.arange(t.numel(), dtype=dtype).reshape(shape))
    assert float(t[299, 999, 2]) == t.numel() - 1
    assert float(t.sum()) == pytest.approx(t.numel() * (t.numel() - 1) / 2, rel=1e-6)


def test_small_and_integer_outputs_come_from_torch_empty():
    # torch's allocator makes resizable storages; a tensor over a NumPy/mmap buffer does not
    small = empty((10, 10), dtype=torch.float32, device="cpu")
    assert small.shape == (10, 10) and small.untyped_storage().resizable()
    ints = empty((1 << 20,), dtype=torch.int64, device="cpu")  # 8 MiB, but not a float dtype
    assert ints.dtype == torch.int64 and ints.untyped_storage().resizable()
    large = empty((1, HUGE_PAGE_THRESHOLD // 4), dtype=torch.float32, device="cpu")
    assert not large.untyped_storage().resizable()


@pytest.mark.skipif(
    not hasattr(mmap, "MADV_HUGEPAGE") or not _THP.exists() or "[never]" in _THP.read_text(),
    reason="transparent huge pages unavailable",
)
def test_output_is_backed_by_huge_pages_and_unmapped_with_the_tensor():
    t = empty((64, 1 << 20), dtype=torch.float32, device="cpu")  # 256 MiB
    t.fill_(1.0)
    ptr = t.data_ptr()
    block = _mapping_of(ptr)
    assert block is not None
    huge_kb = int(re.search(r"AnonHugePages:\s+(\d+) kB", block).group(1))
    assert huge_kb >= 128 * 1024  # at least half of the 256 MiB on 2 MiB pages
    del t
    gc.collect()
    after = _mapping_of(ptr)
    assert after is None or after.split(" ", 1)[0] != block.split(" ", 1)[0]
