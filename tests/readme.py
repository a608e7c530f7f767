"""The Python code blocks of a section of the README (or of a page of docs/), to run them as a
reader would."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def python_blocks(heading: str, document: str | Path = README) -> list[str]:
    """The ```python blocks under the heading line ``heading`` of ``document`` (the README by
    default; a path relative to the repository root, such as ``"docs/validation.md"``), up to
    the next heading of the same or a higher level; lines inside code fences are never
    headings."""
    level = len(heading.split(" ", 1)[0])
    blocks, current, inside, fenced = [], None, False, False
    for line in (ROOT / document).read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
            if inside and fenced and line.strip() == "```python":
                current = []
            elif inside and not fenced and current is not None:
                blocks.append("\n".join(current) + "\n")
                current = None
            continue
        if fenced:
            if current is not None:
                current.append(line)
            continue
        if line == heading:
            inside = True
        elif inside and line.startswith("#") and len(line.split(" ", 1)[0]) <= level:
            break
    return blocks


def run_block(code: str, document: str | Path = README) -> dict:
    """Execute ``code`` in a fresh namespace, its printing swallowed; return the namespace.

    The code is compiled under the pseudo file name ``<document>``: a real path would send
    ``inspect.getsource`` (which Hypothesis calls to describe a lambda) into the Markdown file
    at the block's line numbers, where the text is no Python."""
    namespace: dict = {"__name__": "readme_block"}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(code, f"<{Path(document).as_posix()}>", "exec"), namespace)
    return namespace
