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


#: The packages a block server imports before it forks: the top-level packages of the
#: examples' heaviest ``import`` lines (what a fresh interpreter would import on the block's
#: first lines). Nothing of laplace_lab: its paper registries must be filled by the block;
#: not laplax, whose import starts JAX's multithreaded backend (a forked child could deadlock).
PRELOADED = ("numpy", "scipy", "torch", "jax", "laplace")


def serve() -> None:
    """Run scripts as ``python SCRIPT`` would, each in a child forked from this process.

    Imports :data:`PRELOADED` (those installed), prints one JSON line ``{"import_seconds": s}``
    (the imports' CPU time: their wall time on an idle machine, not inflated on a loaded one),
    then reads requests from stdin, one JSON line each: ``script``, ``stdout``, ``stderr``
    (file paths) and ``timeout`` (s). Each child starts from this process as it is after the
    imports — no block's state reaches another — runs the script as ``__main__`` with its
    folder as working directory and as ``sys.path[0]``, its output in the two files, and
    exits with the status an interpreter would give. The answer is one JSON line:
    ``returncode`` (None when the child ran over ``timeout`` and was killed with its process
    group) and ``seconds`` (wall time from fork to exit).
    """
    import importlib
    import json
    import os
    import signal
    import sys
    import time

    start = time.process_time()
    for name in PRELOADED:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    print(json.dumps({"import_seconds": time.process_time() - start}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        start = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            _child(request)  # never returns
        returncode = None
        deadline = start + float(request["timeout"])
        while time.perf_counter() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                returncode = os.waitstatus_to_exitcode(status)
                break
            time.sleep(0.02)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        seconds = time.perf_counter() - start
        print(json.dumps({"returncode": returncode, "seconds": seconds}), flush=True)


def _child(request: dict) -> None:
    """The forked child of :func:`serve`: run ``request["script"]``, then ``os._exit``."""
    import atexit
    import os
    import runpy
    import sys
    import traceback

    code = 1
    try:
        os.setpgid(0, 0)
        script = Path(request["script"]).resolve()
        os.chdir(script.parent)
        sys.path[0] = str(script.parent)
        sys.argv = [str(script)]
        stdin = os.open(os.devnull, os.O_RDONLY)
        os.dup2(stdin, 0)
        os.close(stdin)
        sys.stdin = open(0, closefd=False)
        for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
            out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(out, fd)
            os.close(out)
        atexit._clear()  # the handlers of this process's imports are not the script's
        if "numpy" in sys.modules:  # fresh entropy for the global NumPy state, as `random`
            sys.modules["numpy"].random.seed()  # reseeds itself after a fork
        try:
            runpy.run_path(str(script), run_name="__main__")
            code = 0
        except SystemExit as exc:
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:
                print(exc.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
        atexit._run_exitfuncs()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


if __name__ == "__main__":
    serve()
