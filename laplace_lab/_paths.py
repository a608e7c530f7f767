"""Output folders that are known to be writable before any long computation starts."""

from __future__ import annotations

import tempfile
from pathlib import Path

__all__ = ["writable_folder"]


def writable_folder(path: Path | str) -> Path:
    """Prove that ``path`` can be created (with its parents) and a file written there.

    ``laplace-lab check`` and ``validate`` write their reports only after every claim or
    case has run; calling this first turns an unwritable ``--out`` into an immediate error
    instead of one after minutes of work. Folders it had to create for the proof are removed
    again, so a run that stops before its report leaves nothing behind.

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
    created = [p for p in (folder, *folder.parents) if not p.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc), str(folder)) from exc
    finally:
        for p in created:  # deepest first: the report writer creates them when it writes
            if p.is_dir():
                p.rmdir()
    return folder
