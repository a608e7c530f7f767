"""The steps of the loops inside claims reach the run's one bar; outside a run they do nothing."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence

import pytest

from laplace_lab._progress import progress_bar, quiet_progress, steps_to
from laplace_lab.paper_checks.verification import runs
from laplace_lab.paper_checks.verification.progress import Board, step
from laplace_lab.paper_checks.verification.registry import _REGISTRY, Context
from laplace_lab.paper_checks.verification.replicates import sequential
from laplace_lab.paper_checks.verification.runs import Plan, run_claims

# Two claims of two papers (two units of work, one per worker): one loops over seeds and
# calls `step` itself, the other draws its replicates through the framework's sequential
# design, which steps for it. The first unit is the slower one, so the second ends first.
STEPPING = """
import time

from laplace_lab.paper_checks.verification import Context, Mutant, Setting, Status, Verdict, claim
from laplace_lab.paper_checks.verification.progress import step
from laplace_lab.paper_checks.verification.replicates import sequential

LIMIT = 1.0


def _mod():
    return __import__(__name__)


@claim(paper="steps-a", name="seeds-loop", location="1", statement="s", kind="exact",
       setting=Setting.paper(),
       mutants=(Mutant("no-limit", "limit 0", {(_mod(), "LIMIT"): 0.0}),))
def seeds_loop(ctx: Context) -> Verdict:
    for i in range(3):
        step(i, 3, "seeds")
        time.sleep(0.3)
    step(3, 3, "seeds")
    return Verdict(Status.CONFIRMED if _mod().LIMIT > 0 else Status.REFUTED, measured=1.0)


def draw(i):
    time.sleep(0.2)
    return _mod().LIMIT * (10.0 + 0.1 * i)


@claim(paper="steps-b", name="replicates-loop", location="2", statement="s", kind="exact",
       setting=Setting.paper(),
       mutants=(Mutant("flipped", "flip", {(_mod(), "LIMIT"): -1.0}),))
def replicates_loop(ctx: Context) -> Verdict:
    est = sequential(draw, 0.0, looks=(2, 4))
    return Verdict(Status.CONFIRMED if est.side > 0 else Status.REFUTED, measured=est.mean)
"""

KEYS = ("steps-a/seeds-loop", "steps-b/replicates-loop")


def no_catalog(paper: str | None, names: Sequence[str]) -> None:
    """The plugin registers the claims in every worker."""


class _LiveBar:
    """A stand-in for a bar drawn on a terminal that records what it is told."""

    disable = False

    def __init__(self, **kwargs):
        self.total, self.updates, self.lines, self.notes = kwargs["total"], [], [], []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, n):
        self.updates.append(n)

    def write(self, line):
        self.lines.append(line)

    def set_postfix_str(self, text, refresh=True):
        self.notes.append(text)

    def refresh(self):
        pass


@pytest.fixture
def stepping(tmp_path, monkeypatch):
    path = tmp_path / "stepping_claims.py"
    path.write_text(STEPPING)
    monkeypatch.syspath_prepend(str(tmp_path))
    import stepping_claims  # noqa: F401  (registers the two claims here)

    yield path, [_REGISTRY[k] for k in KEYS]
    for key in KEYS:
        _REGISTRY.pop(key, None)
    sys.modules.pop("stepping_claims", None)


@pytest.mark.parametrize("scheduler", [None, "local"], ids=["pool", "dask"])
def test_workers_steps_reach_the_parents_bar_and_it_counts_every_claim_and_mutant(
    stepping, monkeypatch, scheduler
):
    path, claims = stepping
    bars, boards = [], []

    class Recording(Board):
        def __init__(self, bar):
            super().__init__(bar, every=0.05)
            self.events, self.texts = [], []
            boards.append(self)

        def event(self, said):
            self.events.append(said)
            super().event(said)
            self.texts.append(self.text())  # what the next redraw shows

    monkeypatch.setattr(runs, "progress_bar", lambda **kw: bars.append(_LiveBar(**kw)) or bars[-1])
    monkeypatch.setattr(runs, "Board", Recording)
    unsubscribed = []
    if scheduler is not None:
        from distributed import Client

        true_unsubscribe = Client.unsubscribe_topic

        def unsubscribe(self, topic):
            unsubscribed.append(topic)
            return true_unsubscribe(self, topic)

        monkeypatch.setattr(Client, "unsubscribe_topic", unsubscribe)
    plan = Plan(Context(seed=0), "light", no_catalog, (str(path),))
    # on Dask, the events of the tasks travel through the scheduler (one worker: 2 units)
    jobs = 2 if scheduler is None else 1
    outcomes = run_claims(claims, plan, jobs=jobs, cost=lambda c: 1.0, scheduler=scheduler)
    [bar], [board] = bars, boards
    heard = [e[3:] for e in board.events if e[0] == "step" and e[1:3] == (KEYS[0], None)]
    assert heard == [(0, 3, "seeds"), (1, 3, "seeds"), (2, 3, "seeds"), (3, 3, "seeds")]
    heard = [e[3:] for e in board.events if e[0] == "step" and e[1:3] == (KEYS[1], None)]
    assert heard == [(0, 2, "replicates"), (1, 2, "replicates"), (2, 2, "replicates")]
    assert ("start", KEYS[0], "no-limit") in board.events
    # the board's text after each event (a redraw every 0.05 s may miss a quick step)
    assert any(re.search(r"(^|; )seeds-loop seeds [012]/3(;|$)", t) for t in board.texts)
    assert any(re.search(r"(^|; )replicates-loop replicates [01]/2(;|$)", t) for t in board.texts)
    # one step of the bar per claim and per mutant, whatever came first: end or outcome
    assert bar.total == 4 and bar.updates == [1, 1, 1, 1]
    assert board.running == {} and bar.notes[-1] == ""
    # the lines, written above the bar, are those of a run without it: in the run's order
    assert [re.sub(r" in \d+\.\d s", "", line) for line in bar.lines] == [
        "[1/2] steps-a/seeds-loop (1) ... CONFIRMED",
        "mutant steps-a/seeds-loop:no-limit ... REFUTED — caught",
        "[2/2] steps-b/replicates-loop (2) ... CONFIRMED",
        "mutant steps-b/replicates-loop:flipped ... REFUTED — caught",
    ]
    assert [o.verdict.status.value for o in outcomes] == ["CONFIRMED", "CONFIRMED"]
    # the run's topic handler is removed: an external cluster outlives the run
    assert len(unsubscribed) == (scheduler is not None)
    assert all(t.startswith("laplace-lab-check-") for t in unsubscribed)


def test_the_board_counts_each_run_once_and_names_what_runs_with_its_loops():
    bar = _LiveBar(total=4)  # claims p/a, p/b, each with a mutant m
    board = Board(bar)
    board.event(("start", "p/a", None))
    board.event(("step", "p/a", None, 0, 5, "replicates"))
    board.event(("step", "p/a", None, 2, 20, "toy-study"))
    board.event(("start", "p/b", "m"))
    assert board.text() == "a replicates 0/5, toy-study 2/20; b:m"
    board.event(("step", "p/a", None, 20, 20, "toy-study"))  # the inner loop ended
    board.event(("step", "p/a", None, 1, 5, "replicates"))
    assert board.text() == "a replicates 1/5; b:m"
    board.ended("p/a", ["m"])  # a unit's results before the worker's last events
    assert bar.updates == [1, 1] and board.text() == "b:m"
    for late in [("step", "p/a", None, 2, 5, "replicates"), ("end", "p/a", None)]:
        board.event(late)
    board.event(("end", "p/b", "m"))
    assert bar.updates == [1, 1, 1] and board.text() == ""
    board.ended("p/b", ["m"])
    assert bar.updates == [1, 1, 1, 1]
    board.show()
    assert bar.notes == [""]


def test_a_step_outside_check_does_nothing_and_checks_its_arguments(capfd):
    assert step(0, 3, "seeds") is None
    draws = []
    est = sequential(lambda i: draws.append(i) or 10.0 + 0.1 * i, 0.0, looks=(2, 4))
    assert draws == [0, 1] and est.mean == pytest.approx(10.05)  # decided at the first look
    assert capfd.readouterr() == ("", "")
    with pytest.raises(ValueError, match=r"done must be a non-negative integer; got done=-1"):
        step(-1, 3)
    with pytest.raises(ValueError, match=r"done must be at most total=3; got done=4"):
        step(4, 3)
    with pytest.raises(TypeError, match=r"total must be an integer; got float 3.0"):
        step(0, 3.0)
    with pytest.raises(TypeError, match=r"what must be a str; got int 7"):
        step(0, 3, 7)


def test_a_silenced_bar_reports_its_count_as_steps_and_a_drawn_one_does_not():
    heard = []
    with steps_to(lambda *said: heard.append(said)), quiet_progress():
        with progress_bar(total=3, desc="toy", unit="rep") as bar:
            bar.update(1)
            bar.update(1)  # left before its end: the end is said on closing
        with progress_bar(total=2, desc="off", unit="rep", enabled=False) as bar:
            bar.update(2)
        with progress_bar(total=2, desc="outer", unit="run", outermost=True, enabled=False):
            pass
        step(1, 2, "mine")
    assert heard == [(0, 3, "toy"), (1, 3, "toy"), (2, 3, "toy"), (3, 3, "toy"), (1, 2, "mine")]
