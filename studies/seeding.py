"""Per-replication seeds keyed by (study, parameters, replication), for reproducible studies.

The key is hashed (SHA-256 of a canonical JSON text) into the entropy of a
``numpy.random.SeedSequence``. So a replication's random stream depends only on what it
is, never on the executor, the worker, the order of execution or which replications ran
before: serial, process-pool and Dask runs, and a killed-then-resumed run, draw the same
numbers.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["params_key", "replication_rng", "replication_seed"]


def params_key(params: Mapping[str, Any]) -> str:
    """Canonical text of a grid point: JSON with sorted keys (the store's key column).

    Floats are written by ``repr`` (shortest round-trip), so 0.1 and 0.1000…01 differ
    and 1000 (int) differs from 1000.0 (float).
    """
    for key, value in params.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"parameter {key!r} must be finite; got {value!r}")
    return json.dumps(dict(params), sort_keys=True, separators=(",", ":"))


def replication_seed(
    study: str, params: Mapping[str, Any], replication: int, *, seed: int = 0
) -> np.random.SeedSequence:
    """The ``SeedSequence`` of one replication.

    Parameters
    ----------
    study : str
        The study's name.
    params : mapping
        The grid point.
    replication : int
        The replication index (≥ 0).
    seed : int
        A base seed (≥ 0) so a whole study can be re-drawn independently.
    """
    if isinstance(replication, bool) or not isinstance(replication, int | np.integer):
        raise TypeError(f"replication must be an integer; got {type(replication).__name__}")
    if replication < 0:
        raise ValueError(f"replication must be >= 0; got replication={replication}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer; got seed={seed!r}")
    text = json.dumps([study, params_key(params), int(replication), int(seed)])
    digest = hashlib.sha256(text.encode()).digest()
    words = np.frombuffer(digest, dtype="<u4").tolist()
    return np.random.SeedSequence(words)


def replication_rng(
    study: str, params: Mapping[str, Any], replication: int, *, seed: int = 0
) -> np.random.Generator:
    """A fresh PCG64 ``Generator`` seeded by :func:`replication_seed`."""
    return np.random.Generator(
        np.random.PCG64(replication_seed(study, params, replication, seed=seed))
    )
