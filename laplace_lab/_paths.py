"""Output folders that are known to be writable before any long computation starts."""

from __future__ import annotations

import tempfile
from pathlib import Path

__all__ = ["writable_folder"]


def writable_folder(path: Path | str) -> Path:
    """Create ``path`` (and its parents) if needed and prove that a file can be written there.

    ``laplace-lab check`` and ``validate`` write their reports only after every claim or
    case has run; calling this first turns an unwritable ``--out`` into an immediate error
    instead of one after minutes of work.

    Parameters
    ----------
    path : pathlib.Path or str
        The output folder.

    Returns
    -------
    pathlib.Path
        ``path`` as a :class:`~pathlib.Path`.

    Raises
    ------
    OSError
        If the folder cannot be created or a file cannot be written in it; its ``filename``
        names the folder.
    """
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc), str(folder)) from exc
    return folder
