"""Large CPU output tensors backed by transparent huge pages.

A per-sample Jacobian of a 3×200 MLP is N × 98,801 floats: 188 MiB at N = 500. Writing it the
first time costs one page fault per 4 KiB page (48,000 faults), which takes longer than the
outer products that fill it. Backing the buffer by 2 MiB pages (an anonymous ``mmap`` advised
``MADV_HUGEPAGE``, which the kernel honours when
``/sys/kernel/mm/transparent_hugepage/enabled`` is ``always`` or ``madvise``) cuts the cost
several-fold (docs/performance.md, "Large outputs on transparent huge pages"). PyTorch
offers the same through the environment variable ``THP_MEM_ALLOC_ENABLE=1``, but only when
set before torch is imported; this module does it per tensor, for the outputs that are large
enough to matter.

Where huge pages are unavailable (non-Linux, CUDA devices, dtypes NumPy cannot hold) the
tensor comes from ``torch.empty`` as usual: the result is the same, only the first touch is
slower.
"""

from __future__ import annotations

import mmap
from typing import Any

import numpy as np

from laplace_lab.numerics._layout import _torch

__all__ = ["HUGE_PAGE_THRESHOLD", "empty"]

#: Outputs of at least this many bytes are backed by huge pages (one 2 MiB page).
HUGE_PAGE_THRESHOLD = 1 << 21

_NUMPY_DTYPES = ("float16", "float32", "float64", "complex64", "complex128")


def _huge_pages_available() -> bool:
    return hasattr(mmap, "MADV_HUGEPAGE")


def empty(shape: tuple[int, ...], *, dtype: Any, device: Any) -> Any:
    """An uninitialised tensor like ``torch.empty``; large CPU tensors sit on huge pages.

    Parameters
    ----------
    shape : tuple of int
    dtype : torch.dtype
    device : torch.device

    Returns
    -------
    torch.Tensor
        Contiguous, writable, of the given shape, dtype and device. A CPU tensor of at least
        :data:`HUGE_PAGE_THRESHOLD` bytes owns an anonymous memory map advised
        ``MADV_HUGEPAGE`` (freed with the tensor).
    """
    torch = _torch()
    device = torch.device(device)
    name = str(dtype).removeprefix("torch.")
    itemsize = torch.empty((), dtype=dtype).element_size()
    nbytes = int(np.prod(shape, dtype=np.int64)) * itemsize
    if (
        device.type != "cpu"
        or name not in _NUMPY_DTYPES
        or nbytes < HUGE_PAGE_THRESHOLD
        or not _huge_pages_available()
    ):
        return torch.empty(shape, dtype=dtype, device=device)
    buf = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:
        buf.madvise(mmap.MADV_HUGEPAGE)
    except OSError:  # kernel without THP support: ordinary pages
        pass
    host = np.frombuffer(buf, dtype=np.dtype(name)).reshape(shape)
    return torch.from_numpy(host)
