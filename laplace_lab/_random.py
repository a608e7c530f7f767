"""The one randomness convention of the package.

- Every function that draws random numbers takes a keyword-only ``rng``: a
  ``numpy.random.Generator`` (used as is, its state advances) or a non-negative integer seed
  (a fresh PCG64 generator). There is no default: leaving it out is an error, never a
  silent fixed seed.
- Independent sub-streams come only from ``SeedSequence.spawn`` (:func:`spawn`), never from
  arithmetic on seeds.
- Named streams — one per claim, one per study replication — come from :func:`keyed_seed`:
  the SHA-256 of a canonical JSON text of the key, so a stream depends only on what it is
  (never on execution order, executor or worker).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np

__all__ = ["as_generator", "keyed_generator", "keyed_seed", "spawn"]


def as_generator(rng: object, name: str = "rng") -> np.random.Generator:
    """``rng`` as a ``numpy.random.Generator``.

    Parameters
    ----------
    rng : numpy.random.Generator, int or numpy.random.SeedSequence
        A generator is returned as is (not copied); an integer seed ≥ 0 or a
        ``SeedSequence`` seeds a new PCG64 generator.
    name : str
        The argument's name in error messages.

    Raises
    ------
    TypeError
        For None (randomness must be explicit) or any other type.
    ValueError
        For a negative seed.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, np.random.SeedSequence):
        return np.random.Generator(np.random.PCG64(rng))
    if isinstance(rng, int | np.integer) and not isinstance(rng, bool | np.bool_):
        if rng < 0:
            raise ValueError(f"{name} must be a non-negative integer seed; got {name}={rng}")
        return np.random.default_rng(int(rng))
    if rng is None:
        raise TypeError(
            f"{name} is required: pass a numpy.random.Generator or an integer seed "
            f"(e.g. {name}=0); there is no default seed"
        )
    raise TypeError(
        f"{name} must be a numpy.random.Generator or an integer seed; got {type(rng).__name__}"
    )


def spawn(rng: object, n: int, name: str = "rng") -> list[np.random.Generator]:
    """``n`` independent child generators of ``rng`` (``Generator.spawn``: SeedSequence children).

    Spawning advances ``rng``'s seed sequence, not its state: the parent's own draws are
    unchanged, and each call returns new, independent children.
    """
    return as_generator(rng, name).spawn(int(n))


def keyed_seed(*key: Any, seed: int = 0) -> np.random.SeedSequence:
    """The ``SeedSequence`` of a named stream: SHA-256 of the JSON text of ``[*key, seed]``.

    Parameters
    ----------
    *key : JSON-serialisable
        What the stream is for, e.g. ``("claim", "subnetwork-laplace-optimality/theorem-1")``
        or ``("study", name, params_text, replication)``.
    seed : int
        A base seed ≥ 0 that re-draws every stream independently.
    """
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer; got seed={seed!r}")
    text = json.dumps([*key, int(seed)])
    digest = hashlib.sha256(text.encode()).digest()
    return np.random.SeedSequence(np.frombuffer(digest, dtype="<u4").tolist())


def keyed_generator(*key: Any, seed: int = 0) -> np.random.Generator:
    """A PCG64 generator seeded by :func:`keyed_seed`."""
    return np.random.Generator(np.random.PCG64(keyed_seed(*key, seed=seed)))
