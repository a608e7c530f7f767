"""The pages a reader opens, in a real browser: headless Chromium (Debian's, /usr/bin/chromium)
driven by Playwright for Python, nothing downloaded at run time.

(a) the verification report written by ``laplace-lab check`` for two cheap claims (one with
figures): no console error, every image loaded and captioned, no text cut with "…" or clipped,
the filters hide and show claims, every in-page link resolves; (b) ``docs/scoreboard.html``
opened from disk: no console error, its local links exist, each finding tag links to a section
of docs/validation.md, a cell opened shows its whole reason, no text cut; (c) the docs site
(``mkdocs build --strict``) served over HTTP: its search finds "subnetwork", with titles free
of raw HTML.

Without Chromium or Playwright the module is skipped, except under ``CI=true``, where it fails.
``LAPLACE_LAB_CHROMIUM`` names another Chromium binary.
"""

from __future__ import annotations

import functools
import os
import shutil
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from tests.test_docs import ROOT

# one worker starts Chromium, writes the report and builds the docs site once, for every test
# here and for tests/test_docs.py's build of the site (tests/conftest.py, ``built_site``)
pytestmark = pytest.mark.xdist_group("docs-site")

CHROMIUM = os.environ.get("LAPLACE_LAB_CHROMIUM", "/usr/bin/chromium")
#: Two claims of two papers taking a fraction of a second each; the second saves a figure.
CLAIMS = ("theorem-1", "probit-approximation")


def _unavailable(why: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true and no browser to test the pages with: {why}")
    pytest.skip(why)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed (pip install playwright)")
    if shutil.which(CHROMIUM) is None:
        _unavailable(f"no Chromium at {CHROMIUM}")
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


class Page:
    """A browser page and the console errors and uncaught exceptions it met."""

    def __init__(self, browser: Any):
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.errors: list[str] = []
        self.page.on(
            "console",
            lambda m: self.errors.append(f"console: {m.text}") if m.type == "error" else None,
        )
        self.page.on("pageerror", lambda exc: self.errors.append(f"exception: {exc}"))


@pytest.fixture
def page(browser: Any) -> Iterator[Page]:
    p = Page(browser)
    yield p
    p.page.close()


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from laplace_lab.cli import main

    out = tmp_path_factory.mktemp("report")
    args = ["check", "--jobs", "1", "--mutants", "light", "--out", str(out)]
    for name in CLAIMS:
        args += ["--claim", name]
    main(args)
    return out / "index.html"


# What the page shows that a reader cannot read whole: text nodes ending in "…", and elements
# whose content overflows a box that hides it.
_CUT = """() => {
  const cut = [];
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    if (n.textContent.trim().endsWith('…')) cut.push('ends in …: ' + n.textContent.trim());
  }
  for (const el of document.body.querySelectorAll('*')) {
    const s = getComputedStyle(el);
    const hides = [s.overflow, s.overflowX].some(v => v === 'hidden' || v === 'clip');
    if ((hides || s.textOverflow === 'ellipsis') && el.scrollWidth > el.clientWidth + 1)
      cut.push('clipped: <' + el.tagName.toLowerCase() + '> ' + el.textContent.slice(0, 80));
  }
  return cut;
}"""

_BROKEN_ANCHORS = """() => [...document.querySelectorAll('a[href^="#"]')]
  .map(a => a.getAttribute('href').slice(1))
  .filter(id => id && !document.getElementById(decodeURIComponent(id)))"""


def _shown(page: Any) -> int:
    return int(page.inner_text("#filters .shown").split()[0])


def test_report_page(report: Path, page: Page) -> None:
    p = page.page
    p.goto(report.as_uri())
    p.wait_for_load_state("load")
    images = p.eval_on_selector_all(
        "img", "els => els.map(i => [i.getAttribute('src'), i.complete && i.naturalWidth])"
    )
    assert images and all(width > 0 for _, width in images), images
    captions = p.eval_on_selector_all(
        "figure", "fs => fs.map(f => (f.querySelector('figcaption') || {}).textContent || '')"
    )
    assert len(captions) == len(images) and all(c.strip() for c in captions), captions
    assert p.evaluate(_CUT) == []
    assert p.evaluate(_BROKEN_ANCHORS) == []
    total = len(CLAIMS)
    assert _shown(p) == total and p.locator("section.claim:visible").count() == total
    status = p.locator("#filters input[name=status]").first
    value = status.get_attribute("value")
    with_status = p.locator(f"section.claim[data-status={value}]").count()
    status.uncheck()
    assert _shown(p) == total - with_status
    assert p.locator("section.claim:visible").count() == total - with_status
    assert p.locator(f"tr.row[data-status={value}]:visible").count() == 0
    status.check()
    assert _shown(p) == total
    paper = p.locator("#filters select[name=paper] option").nth(1).get_attribute("value")
    p.select_option("#filters select[name=paper]", paper)
    assert _shown(p) == p.locator(f"section.claim[data-paper='{paper}']").count() < total
    p.select_option("#filters select[name=paper]", "")
    p.check("#filters input[name=differs]")
    assert _shown(p) == p.locator("section.claim[data-differs='1']").count()
    assert page.errors == []


def _local_links(page: Any, base: Path) -> list[str]:
    """The local files ``page`` links to (href and src) that do not exist under ``base``."""
    refs = page.eval_on_selector_all(
        "[href], [src]", "els => els.map(e => e.getAttribute('href') || e.getAttribute('src'))"
    )
    missing = []
    for ref in refs:
        parts = urlsplit(ref)
        if parts.scheme or parts.netloc or not parts.path:
            continue  # a web address, or an anchor of the page itself
        if not (base / unquote(parts.path)).exists():
            missing.append(ref)
    return missing


def test_scoreboard_page(page: Page) -> None:
    scoreboard = ROOT / "docs" / "scoreboard.html"
    p = page.page
    p.goto(scoreboard.as_uri())
    p.wait_for_load_state("load")
    assert p.title()
    assert _local_links(p, scoreboard.parent) == []
    assert p.evaluate(_BROKEN_ANCHORS) == []
    # every finding tag links to a section of docs/validation.md that exists
    validation = (scoreboard.parent / "validation.md").read_text("utf-8")
    tags = p.eval_on_selector_all("a.finding", "els => els.map(e => e.getAttribute('href'))")
    assert tags
    missing = {h for h in tags if f'<a id="{h.partition("#")[2]}"></a>' not in validation}
    assert missing == set()
    # a cell that is not a PASS shows its whole reason when opened, not only on hover
    cells = p.locator("td.ERROR details, td.NA details, td.FAIL details")
    assert cells.count() > 0
    for i in (0, cells.count() - 1):
        cell = cells.nth(i)
        reason = cell.locator("p.reason")
        assert not reason.is_visible()
        cell.locator("summary").click()
        assert reason.is_visible() and reason.inner_text().strip()
    assert p.evaluate(_CUT) == []
    assert page.errors == []


@pytest.fixture(scope="module")
def docs_site(built_site: tuple[Any, Path]) -> Iterator[str]:
    """The docs site built with ``mkdocs build --strict`` (tests/conftest.py, once per
    session), served over HTTP: its address."""
    run, site = built_site
    assert run.returncode == 0, run.stderr[-3000:]
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def search(browser: Any, docs_site: str) -> Iterator[tuple[list[str], list[str]]]:
    """The titles of the results the site's search gives for "subnetwork", typed into the
    search box of the home page, and the console errors met on the way."""
    p = Page(browser)
    p.page.goto(docs_site + "index.html")
    box = p.page.locator("input[name=q]").first
    box.fill("subnetwork")
    box.press("Enter")
    p.page.wait_for_selector("#mkdocs-search-results article h3", timeout=10_000)
    titles = p.page.eval_on_selector_all(
        "#mkdocs-search-results article h3", "hs => hs.map(h => h.textContent)"
    )
    yield titles, p.errors
    p.page.close()


def test_docs_search_finds_results(search: tuple[list[str], list[str]]) -> None:
    titles, errors = search
    assert titles
    # no console error: nothing is fetched from the network (the theme's highlight.js CDN is
    # switched off in mkdocs.yml)
    assert errors == []


def test_docs_search_titles_have_no_raw_html(search: tuple[list[str], list[str]]) -> None:
    assert not [t for t in search[0] if "<code" in t or "</" in t]
