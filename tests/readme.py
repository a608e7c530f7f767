"""The Python code blocks of a README section, to run them as a reader would."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks(heading: str) -> list[str]:
    """The ```python blocks under the heading line ``heading`` (up to the next heading of
    the same or a higher level; lines inside code fences are never headings)."""
    level = len(heading.split(" ", 1)[0])
    blocks, current, inside, fenced = [], None, False, False
    for line in README.read_text().splitlines():
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


def run_block(code: str) -> dict:
    """Execute ``code`` in a fresh namespace, its printing swallowed; return the namespace."""
    namespace: dict = {"__name__": "readme_block"}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(code, str(README), "exec"), namespace)
    return namespace
