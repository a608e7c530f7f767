"""Per-replication seeds keyed by (study, parameters, replication), for reproducible studies.

The key is hashed (:func:`laplace_lab._random.keyed_seed`: SHA-256 of a canonical JSON
text, the same function that seeds the paper claims) into the entropy of a
``numpy.random.SeedSequence``. So a replication's random stream depends only on what it
is, never on the executor, the worker, the order of execution or which replications ran
before: serial, process-pool and Dask runs, and a killed-then-resumed run, draw the same
numbers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from laplace_lab._checks import integer
from laplace_lab._random import keyed_seed

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
    replication = integer(replication, "replication", low=0)
    seed = integer(seed, "seed", low=0)
    return keyed_seed(study, params_key(params), replication, seed=seed)


def replication_rng(
    study: str, params: Mapping[str, Any], replication: int, *, seed: int = 0
) -> np.random.Generator:
    """A fresh PCG64 ``Generator`` seeded by :func:`replication_seed`."""
    return np.random.Generator(
        np.random.PCG64(replication_seed(study, params, replication, seed=seed))
    )
