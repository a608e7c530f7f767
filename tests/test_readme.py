"""Every ```python block of the README, of docs/*.md and of each paper's RESULTS.md runs as
copied.

Each block runs as a script, in an empty folder, within a time budget, and must print what it
computes. A block that states its cost ("about 20 s here") is a long example and must show a
progress bar. A block that needs torch is skipped only where torch is not installed.

The scripts run in children forked from one interpreter that has imported the heavy
third-party packages (``tests/readme.py``, :func:`serve`): each child starts as a fresh
interpreter would after those imports, so no block sees another's state, and the
interpreter's start-up is paid once instead of once per block. A block's time counts that
start-up too (its CPU time, what it takes on an idle machine).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "paper_checks").glob("*/RESULTS.md")),
]
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
#: Hard limit per block (a fresh interpreter, on a loaded 2-core machine).
BUDGET_S = 120.0
#: A block running longer than this must say so: a stated cost and a progress bar.
SHORT_S = 30.0
#: "about 20 s", "≈ 17 minutes": how a long example states its cost.
COST = re.compile(r"(about|≈)\s*[\d.,]+\s*(s|seconds?|min|minutes?|hours?)\b")
#: The example of a claim of one's own (a module for `check --plugin`), in one document.
CLAIM_MODULE = "# my_claims.py"


def blocks() -> list[tuple[str, str]]:
    """(id "FILE:LINE", code) of every ```python block."""
    out = []
    for doc in DOCUMENTS:
        text = doc.read_text()
        for m in FENCE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            out.append((f"{doc.relative_to(ROOT).as_posix()}:{line}", m.group(1)))
    return out


BLOCKS = blocks()


class Interpreter:
    """One ``python tests/readme.py`` block server (:func:`readme.serve`)."""

    def __init__(self) -> None:
        env = {**os.environ, "MPLBACKEND": "Agg"}
        server = Path(__file__).with_name("readme.py")
        self.process = subprocess.Popen(
            [sys.executable, str(server)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        self.import_seconds = json.loads(self._answer(300.0))["import_seconds"]

    def _answer(self, timeout: float) -> str:
        """The server's next line; a server silent for ``timeout`` s is killed, not awaited."""
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        if not ready:
            self.process.kill()
            raise RuntimeError(f"the block server did not answer within {timeout:.0f} s")
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the block server exited ({self.process.wait()})")
        return line

    def run(self, script: Path, timeout: float) -> tuple[int | None, str, str, float]:
        """(return code or None past ``timeout``, stdout, stderr, seconds with start-up)."""
        out, err = script.parent.with_name("stdout.txt"), script.parent.with_name("stderr.txt")
        request = {"script": str(script), "stdout": str(out), "stderr": str(err)}
        self.process.stdin.write(json.dumps({**request, "timeout": timeout}) + "\n")
        self.process.stdin.flush()
        answer = json.loads(self._answer(timeout + 60.0))  # the server kills at timeout
        seconds = answer["seconds"] + self.import_seconds
        return answer["returncode"], out.read_text(), err.read_text(), seconds

    def close(self) -> None:
        """Stop the server (it holds nothing to clean up: killed, not left to finalise)."""
        self.process.stdin.close()
        self.process.kill()
        self.process.wait(timeout=60)


# one worker runs the module (``--dist loadgroup``), so one server imports the packages once
pytestmark = pytest.mark.xdist_group("readme-blocks")


@pytest.fixture(scope="module")
def interpreter():
    server = Interpreter()
    yield server
    server.close()


def _run(cmd: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    env = {**os.environ, "MPLBACKEND": "Agg"}
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_the_readme_has_its_examples():
    """One example per use (a conjecture, a study, a validation) in the README; the claim
    module once, somewhere; every paper's RESULTS.md is covered."""
    names = [name for name, _ in BLOCKS if name.startswith("README.md:")]
    assert len(names) >= 3, names
    assert sum(code.startswith(CLAIM_MODULE) for _, code in BLOCKS) == 1
    assert len([d for d in DOCUMENTS if d.name == "RESULTS.md"]) >= 5


@pytest.mark.parametrize("code", [code for _, code in BLOCKS], ids=[n for n, _ in BLOCKS])
def test_python_block_runs_as_copied(code, tmp_path, interpreter, request):
    name = request.node.callspec.id
    script = tmp_path / "block" / "example.py"
    script.parent.mkdir()
    script.write_text(code)
    returncode, stdout, stderr, seconds = interpreter.run(script, BUDGET_S)
    if returncode is None:
        over = f"the example ran over {BUDGET_S:.0f} s: make it smaller, state its cost"
        pytest.fail(f"{name}: {over}")
    if returncode != 0 and "No module named 'torch'" in stderr:
        if importlib.util.find_spec("torch") is None:
            pytest.skip("this example needs torch, which is not installed")
    assert returncode == 0, f"{name}:\n{stderr[-4000:]}"
    assert stdout.strip(), f"{name}: the example prints nothing when run as a script"
    stated = COST.search(code)
    if seconds > SHORT_S:
        assert stated, f"{name}: the example ran {seconds:.0f} s without stating its cost"
    if stated:
        assert "100%|" in stderr, f"{name}: a long example must show a progress bar"


def test_the_block_server_runs_each_script_alone_with_its_exit_status(interpreter, tmp_path):
    """A raising script fails with its traceback, ``sys.exit`` gives its status, a script
    past its time is killed, and what one script changes in a module another does not see."""
    scripts = {
        "raises": "print('before')\nraise ValueError('wrong answer')\n",
        "exits": "import sys\nsys.exit(3)\n",
        "sleeps": "import time\ntime.sleep(60)\n",
        "marks": "import numpy, sys\nnumpy.MARKED = 1\nsys.modules['marked'] = numpy\n",
        "reads": "import sys, numpy\nprint(hasattr(numpy, 'MARKED'), 'marked' in sys.modules)\n",
    }
    runs = {}
    for name, code in scripts.items():
        script = tmp_path / name / "block" / "example.py"
        script.parent.mkdir(parents=True)
        script.write_text(code)
        runs[name] = interpreter.run(script, 1.0 if name == "sleeps" else BUDGET_S)
    code, out, err, _ = runs["raises"]
    assert code == 1 and out == "before\n"
    assert 'example.py", line 2' in err and "ValueError: wrong answer" in err
    assert runs["exits"][0] == 3
    assert runs["sleeps"][0] is None
    assert runs["marks"][0] == 0
    assert runs["reads"][:2] == (0, "False False\n")


def test_the_readme_claim_module_is_loaded_by_check_plugin(tmp_path):
    (code,) = [code for _, code in BLOCKS if code.startswith(CLAIM_MODULE)]
    (tmp_path / "my_claims.py").write_text(code)
    script = Path(sys.executable).with_name("laplace-lab")  # the installed console script
    argv = ["check", "--plugin", "my_claims", "--paper", "my-lab", "--out", "report"]
    proc = _run([str(script), *argv], tmp_path, BUDGET_S)
    assert proc.returncode == 0, proc.stderr
    assert "my-lab/ipv-grows-with-s" in proc.stdout
    assert "CONFIRMED" in proc.stdout and "mutants caught 1/1" in proc.stdout
    assert (tmp_path / "report" / "verdicts.json").is_file()


def _said(text: str) -> dict[str, int]:
    """``"30 CONFIRMED, 9 REFUTED"`` → counts (``"none"`` → {})."""
    return {s: int(n) for n, s in (p.split() for p in text.split(", ") if p != "none")}


def test_the_verdict_table_counts_are_those_of_each_results_file():
    """The README's per-paper table against the header of each paper's RESULTS.md, which
    `make results` rewrites; the table is written by hand and must follow it: claims by their
    best evidence, "n (paper + substitute)" where substitutes are among them, errata apart."""
    statuses = ("CONFIRMED", "REFUTED", "INCONCLUSIVE", "NOT_REPRODUCIBLE_HERE")
    cell = r"(\d+(?: \(\d+ \+ \d+\))?)"
    table = (
        r"^\| [^|*]+ \| (\d+) \| "
        + r" \| ".join([cell] * 4)
        + r" \| (\d+) \| \[\w+\]\((\S+)\) \|$"
    )
    readme = (ROOT / "README.md").read_text("utf-8")
    rows = re.findall(table, readme, re.M)
    assert len(rows) == 5
    totals = [0] * 6
    for claims_n, *cells, errata, link in rows:
        head = re.search(
            r"^\*\*(\d+) claims: ([^;]+); errata (\d+) .*?In the paper's setting: ([^;]+); "
            r"on substitutes: ([^.]+)\.",
            (ROOT / link).read_text("utf-8"),
            re.M,
        )
        assert head, link
        best, paper, sub = _said(head.group(2)), _said(head.group(4)), _said(head.group(5))
        assert int(claims_n) == int(head.group(1)) and int(errata) == int(head.group(3)), link
        for status, text in zip(statuses, cells, strict=True):
            n = best.get(status, 0)
            want = f"{n} ({paper.get(status, 0)} + {sub[status]})" if sub.get(status) else str(n)
            assert text == want, (link, status)
        for i, n in enumerate([claims_n, *(c.split()[0] for c in cells), errata]):
            totals[i] += int(n)
    total = re.search(r"^\| \*\*all\*\* \| " + r" \| ".join([r"\*\*(\d+)\*\*"] * 6), readme, re.M)
    assert total and [int(n) for n in total.groups()] == totals
