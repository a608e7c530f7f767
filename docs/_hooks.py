"""MkDocs hooks of the documentation site (named in ``mkdocs.yml``; not a page of the site).

The pages are written for GitHub: their relative links point at repository files, inside
``docs/`` or not. These hooks make a site of the same files, so that ``mkdocs build --strict``
passes without weakening its link check:

- **A source tree for the API reference** (``on_config``). Griffe reads the packages from
  source and looks for ``laplace_lab.numerics`` in a folder ``laplace_lab/numerics``; the
  repository keeps the layers in top-level folders that ``setup.py`` maps under
  ``laplace_lab`` (its ``LAYERS``). A temporary folder ``laplace_lab/`` of symbolic links
  rebuilds the installed layout and becomes the Python handler's search path; it is removed
  when the build ends.
- **Pages from outside docs/** (``on_files``). The README is the home page (unless
  ``docs/index.md`` exists); each paper's ``RESULTS.md`` is ``papers/<paper>.md``, with its
  ``figures/``; each paper gets an API page ``api/papers/<paper>.md`` listing its modules.
  Papers are found as the command line finds them (:func:`laplace_lab.papers.papers`), so a
  new paper folder needs no edit here or in ``mkdocs.yml``.
- **Links** (``on_page_markdown``). A relative link is resolved against the page's place in
  the repository: a file the site holds becomes a link to its page (or copy); any other
  file or folder of the repository (a source file, say) becomes plain text. A link to nothing
  is left to MkDocs' own check on a page of ``docs/``, and reported here on a page from
  elsewhere (whose repository path MkDocs does not know); either way ``--strict`` fails.
- **Lazy exports** (:class:`LazyExports`, a Griffe extension named in ``mkdocs.yml``). Some
  packages import their public names on first use (a module ``__getattr__`` and a table
  name → submodule) so that the command line starts fast; Griffe reads no import there, and
  the extension adds each such name as ``from .submodule import name`` would.
- **``#:`` comments** (:class:`CommentDocstrings`, likewise). A constant documented Sphinx's
  way, by ``#:`` lines above it, gets them as its docstring.
- **reStructuredText in docstrings** (``on_page_content``). The numpydoc docstrings are read
  as Markdown; on the API pages what reStructuredText leaves over (roles such as
  ``:func:`name```, ``::`` before a code block, ``.. [1]`` references) is shown as Sphinx
  would show it.
"""

from __future__ import annotations

import ast
import logging
import os
import pkgutil
import posixpath
import re
import tempfile
from pathlib import Path
from urllib.parse import unquote, urlsplit

import griffe
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files
from mkdocs.structure.nav import Navigation, Section
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parent.parent
#: Section titles of the site's folders (MkDocs would title them "Api", "Papers", ...).
SECTION_TITLES = {"api": "API reference", "api/papers": "Papers", "papers": "Paper results"}

log = logging.getLogger("mkdocs.hooks.laplace_lab")  # under "mkdocs": counted by --strict

#: The source tree of the current build (removes itself when cleaned up or dropped).
_tree: tempfile.TemporaryDirectory | None = None
#: site path (src_uri) → repository path, and back, for every file of the site.
_repo_path: dict[str, str] = {}
_site_path: dict[str, str] = {}
#: The site paths of the pages made here (from files outside docs/).
_generated: set[str] = set()


# ------------------------------------------------------------------- source tree for griffe
def _layers() -> dict[str, str]:
    """Import name → folder of each layer, read from ``setup.py`` (``LAYERS``)."""
    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(getattr(t, "id", None) == "LAYERS" for t in targets):
                return ast.literal_eval(node.value)
    raise RuntimeError("setup.py defines no LAYERS")


def _source_tree(into: Path) -> Path:
    """Link the layer folders into ``into`` in their installed layout; return ``into``."""
    for package, folder in _layers().items():
        target = into.joinpath(*package.split("."))
        if package == "laplace_lab":  # the top package: a real folder, its entries linked
            target.mkdir(parents=True, exist_ok=True)
            for entry in (ROOT / folder).iterdir():
                if entry.name != "__pycache__":
                    (target / entry.name).symlink_to(entry)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(ROOT / folder, target_is_directory=True)
    return into


@event_priority(100)  # before mkdocstrings creates its Python handler from this configuration
def on_config(config: MkDocsConfig) -> MkDocsConfig:
    global _tree
    _cleanup()
    _tree = tempfile.TemporaryDirectory(prefix="laplace-lab-docs-")
    python = config.plugins["mkdocstrings"].config.handlers.setdefault("python", {})
    python["paths"] = [str(_source_tree(Path(_tree.name)))]
    return config


def _cleanup() -> None:
    global _tree
    if _tree is not None:
        _tree.cleanup()
        _tree = None


def on_post_build(config: MkDocsConfig) -> None:
    _cleanup()


def on_build_error(error: Exception) -> None:
    _cleanup()


def _defines_getattr(node: ast.Module) -> bool:
    """Whether a module defines or assigns a module-level ``__getattr__`` (PEP 562)."""
    for statement in node.body:
        if isinstance(statement, ast.FunctionDef) and statement.name == "__getattr__":
            return True
        if isinstance(statement, ast.Assign):
            names = [n for t in statement.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            if any(n.id == "__getattr__" for n in names):
                return True
    return False


class LazyExports(griffe.Extension):
    """Add a package's lazily imported public names as aliases to their modules.

    A package with a module-level ``__getattr__`` (defined, or assigned from
    :func:`laplace_lab._lazy.lazy_exports`) and a dict literal ``{name: submodule}``
    (``_EXPORTS``, ``_HOME``, ``_LAZY``, ...) gets, for each name of ``__all__`` it does not
    define, an alias to ``<package>.<submodule>.<name>``.
    """

    def on_module_members(self, *, node: object, mod: griffe.Module, **kwargs: object) -> None:
        if not isinstance(node, ast.Module) or not _defines_getattr(node):
            return
        exported = {str(name) for name in mod.exports or ()}
        for statement in node.body:
            if not isinstance(getattr(statement, "value", None), ast.Dict):
                continue
            try:
                table = ast.literal_eval(statement.value)
            except ValueError:
                continue
            for name, module in table.items():
                if name in exported and name not in mod.members and isinstance(module, str):
                    target = f"{mod.path}.{module}.{name}"
                    mod.set_member(name, griffe.Alias(name, target, lineno=statement.lineno))


class CommentDocstrings(griffe.Extension):
    """Give an attribute without a docstring the ``#:`` comment lines just above it."""

    def on_attribute_instance(
        self, *, node: object, attr: griffe.Attribute, agent: object, **kwargs: object
    ) -> None:
        if attr.docstring is not None or attr.lineno is None or not hasattr(agent, "code"):
            return
        lines = agent.code.splitlines()
        start = attr.lineno - 1
        while start > 0 and lines[start - 1].lstrip().startswith("#:"):
            start -= 1
        comment = [line.lstrip()[2:].strip() for line in lines[start : attr.lineno - 1]]
        if comment:
            attr.docstring = griffe.Docstring(
                "\n".join(comment),
                lineno=start + 1,
                endlineno=attr.lineno - 1,
                parent=attr,
                parser=agent.docstring_parser,
                parser_options=agent.docstring_options,
            )


# ---------------------------------------------------------------- pages from outside docs/
def _papers() -> dict[str, tuple[str, Path]]:
    """Paper name → its package and its folder in the repository."""
    from laplace_lab.papers import papers

    layers = _layers()
    found = {}
    for paper, package in papers().items():
        layer = max((p for p in layers if package.startswith(p + ".")), key=len)
        rest = package[len(layer) + 1 :].split(".")
        found[paper] = package, ROOT.joinpath(layers[layer], *rest)
    return found


def _summary(module: Path) -> str:
    """The first paragraph of a module's docstring, on one line."""
    source = module / "__init__.py" if module.is_dir() else module
    doc = ast.get_docstring(ast.parse(source.read_text(encoding="utf-8"))) or ""
    return " ".join(doc.strip().split("\n\n")[0].split()).replace("|", "\\|")


def _paper_api_page(paper: str, folder: Path, package: str) -> str:
    """The API page of one paper: its package docstring, then a table of its public modules.

    Links are written from the paper's folder (``RESULTS.md``), like any page from there.
    """
    lines = [f"# {paper}", ""]
    if (folder / "RESULTS.md").is_file():
        lines += ["What each claim says and its verdict: [RESULTS.md](RESULTS.md).", ""]
    lines += [f"::: {package}", "    options:", "      members: false", ""]
    lines += ["## Modules", "", "| module | what it holds |", "|---|---|"]
    for info in pkgutil.iter_modules([str(folder)]):
        if not info.name.startswith("_"):
            path = folder / (info.name if info.ispkg else f"{info.name}.py")
            lines.append(f"| `{package}.{info.name}` | {_summary(path)} |")
    return "\n".join(lines) + "\n"


def _add(files: Files, config: MkDocsConfig, src_uri: str, repo: str, **source: str) -> None:
    """Add the repository file ``repo`` (or a page of ``content``) to the site at ``src_uri``."""
    files.append(File.generated(config, src_uri, **source))
    _repo_path[src_uri] = repo
    _site_path[repo] = src_uri
    _generated.add(src_uri)


def on_files(files: Files, config: MkDocsConfig) -> Files:
    _repo_path.clear()
    _site_path.clear()
    _generated.clear()
    docs = Path(os.path.relpath(config.docs_dir, ROOT)).as_posix()
    for file in files:
        _repo_path[file.src_uri] = f"{docs}/{file.src_uri}"
        _site_path[f"{docs}/{file.src_uri}"] = file.src_uri
    if files.get_file_from_path("index.md") is None:
        _add(files, config, "index.md", "README.md", abs_src_path=str(ROOT / "README.md"))
    for paper, (package, folder) in _papers().items():
        repo = folder.relative_to(ROOT).as_posix()
        if (folder / "RESULTS.md").is_file():
            results = str(folder / "RESULTS.md")
            _add(files, config, f"papers/{paper}.md", f"{repo}/RESULTS.md", abs_src_path=results)
            for figure in sorted((folder / "figures").glob("*")):
                if figure.is_file():
                    name = figure.relative_to(folder).as_posix()  # figures/<file>
                    site, here = f"papers/{paper}/{name}", f"{repo}/{name}"
                    _add(files, config, site, here, abs_src_path=str(figure))
        page = _paper_api_page(paper, folder, package)
        _add(files, config, f"api/papers/{paper}.md", f"{repo}/__init__.py", content=page)
    return files


def _retitle(items: list, depth: int = 1) -> None:
    """Title each section by its folder (``SECTION_TITLES``), at every depth."""
    for item in items:
        if isinstance(item, Section) and item.children:
            page = item
            while isinstance(page, Section):
                page = page.children[0]
            folder = "/".join(page.file.src_uri.split("/")[:depth])
            item.title = SECTION_TITLES.get(folder, item.title)
            _retitle(item.children, depth + 1)


def on_nav(nav: Navigation, config: MkDocsConfig, files: Files) -> Navigation:
    _retitle(nav.items)
    return nav


# ------------------------------------------------------------------------------------ links
#: Fenced code and code spans (left alone), or an inline link or image.
_MARKUP = re.compile(
    r"(?P<fence>^[ \t]*(?P<mark>```+|~~~+).*?^[ \t]*(?P=mark)[ \t]*$)"
    r"|(?P<code>(?P<ticks>`+)(?:(?!\n[ \t]*\n).)+?(?P=ticks))"
    r"|(?P<link>(?P<bang>!?)\[(?P<text>(?:[^\[\]]|\[[^\[\]]*\])*)\]"
    r"\((?P<target><[^>\n]*>|[^)\s]+)(?P<title>[ \t]+\"[^\"\n]*\")?\))",
    re.M | re.S,
)


def _relink(target: str, page: str) -> str | None:
    """Where a link on the site page ``page`` should point: a site path relative to the page,
    "" for plain text, None to leave it as it is (external, absolute, or to nothing)."""
    scheme, netloc, path, query, anchor = urlsplit(target.strip("<>"))
    if scheme or netloc or not path or path.startswith("/"):
        return None
    here = posixpath.dirname(_repo_path.get(page, page))
    repo = posixpath.normpath(posixpath.join(here, unquote(path)))
    if repo.startswith("../"):
        return None
    if repo in _site_path:
        new = posixpath.relpath(_site_path[repo], posixpath.dirname(page) or ".")
        return new + (f"?{query}" if query else "") + (f"#{anchor}" if anchor else "")
    return "" if (ROOT / repo).exists() else None


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    src = page.file.src_uri

    def replace(match: re.Match) -> str:
        if not match.group("link"):
            return match.group(0)
        target = match.group("target")
        new = _relink(target, src)
        if new is None:
            scheme, netloc, path, *_ = urlsplit(target.strip("<>"))
            if src in _generated and path and not (scheme or netloc):
                log.warning(
                    "%s (the site's %s) links to '%s', which is no file of the repository",
                    _repo_path[src],
                    src,
                    target,
                )
            return match.group(0)
        if new == "":  # a repository file the site does not hold: keep the words
            return match.group("text")
        title = match.group("title") or ""
        return f"{match.group('bang')}[{match.group('text')}]({new}{title})"

    return _MARKUP.sub(replace, markdown)


# ---------------------------------------------------------- reStructuredText in docstrings
#: What numpydoc's reStructuredText leaves in the rendered HTML of a docstring, and what
#: Sphinx would show instead: a role (``:func:`x``` → ``x`` as code), a literal-block marker
#: (``text::`` → ``text:``; ``::`` alone → nothing), a reference and its citations
#: (``.. [1]``, ``[1]_`` → ``[1]``) and double backquotes inside code (a type such as
#: ``array of the shape of ``x````).
_ROLE = r":(?:py:)?(?:mod|func|class|meth|attr|data|obj|exc|const|term):"
_RST = [
    (re.compile(_ROLE + r"(?=<code>)"), ""),
    (re.compile(_ROLE + r"`([^`<]*)`"), r"\1"),
    (re.compile(r"<p>::</p>\s*"), ""),
    (re.compile(r"::</p>"), ":</p>"),
    (re.compile(r"<p>\.\. (\[[^\]<]+\])"), r"<p>\1"),
    (re.compile(r"(\[\d+\])_"), r"\1"),
    (re.compile(r"``([^`<]+)``"), r"\1"),
]


def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    if page.file.src_uri.startswith("api/"):
        for pattern, replacement in _RST:
            html = pattern.sub(replacement, html)
    return html
