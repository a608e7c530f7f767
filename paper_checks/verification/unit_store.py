"""Finished units of work on disk, so that a killed check resumes without recomputing them.

A unit of work (:mod:`.runs`) is the claims that share cached experiments, run with their
mutants. Its result — each claim's verdict, seconds and mutant outcomes, plain data — is
stored under a key of everything that decides it: a digest of the package's code, the mode,
the base seed, the mutants run, the plugins and the unit's claims. A rerun of the same check
reads a stored unit instead of recomputing it; any change of code or arguments is a new key,
so a resumed run never mixes results of old and new code.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["UnitStore", "code_digest"]

#: The installed packages whose sources (and recorded data) decide a verdict.
_PACKAGES = (
    "laplace_lab",
    "laplace_lab.theory",
    "laplace_lab.numerics",
    "laplace_lab.networks",
    "laplace_lab.studies",
    "laplace_lab.benchmarks",
    "laplace_lab.conformance",
    "laplace_lab.paper_checks",
)


@functools.cache
def code_digest() -> str:
    """A hash of every ``.py`` and ``.json`` file of the package's layers (names and bytes)."""
    h = hashlib.sha256()
    for package in _PACKAGES:
        spec = importlib.util.find_spec(package)
        for root in spec.submodule_search_locations or ():
            base = Path(root)
            files = sorted(p for ext in ("*.py", "*.json") for p in base.rglob(ext))
            for path in files:
                if "__pycache__" in path.parts:
                    continue
                h.update(f"{package}/{path.relative_to(base).as_posix()}".encode())
                h.update(path.read_bytes())
    return h.hexdigest()[:16]


class UnitStore:
    """Finished units in ``folder`` (created on first write), one pickle file per key."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)

    @staticmethod
    def key(
        keys: Sequence[str], *, full: bool, seed: int, mutants: str, plugins: Sequence[str]
    ) -> str:
        """The key of the unit of claims ``keys`` under these arguments and this code."""
        text = repr((code_digest(), bool(full), int(seed), mutants, tuple(plugins), tuple(keys)))
        return hashlib.sha256(text.encode()).hexdigest()[:24]

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}.pickle"

    def get(self, key: str) -> Any | None:
        """The stored result, or None (never stored, or unreadable: it is recomputed)."""
        try:
            with self._path(key).open("rb") as fh:
                return pickle.load(fh)
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError):
            return None

    def put(self, key: str, result: Any) -> None:
        """Store ``result`` atomically (a killed write leaves no partial file)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self._path(key).with_suffix(f".{os.getpid()}.tmp")
        with tmp.open("wb") as fh:
            pickle.dump(result, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, self._path(key))
