"""The laplace-torch scoreboard across its versions, each in a virtual environment of its own.

    laplace-lab validate --versions [VERSION ...] [--seed S] [--out DIR] [--venvs DIR]

For each version in :data:`ENVIRONMENTS` (laplace-torch with the newest curvlinops it runs
with among those its metadata accepts), :func:`build_environment` creates
``<venvs>/laplace-torch-<version>`` once, the way the Makefile installs laplace-torch 0.3:
torch pinned exactly (``torch==2.13.0``, the CPU build), this repository editable with its
``[laplace-torch]`` extra, then laplace-torch and its backends with ``--no-deps`` (their
torchvision requirement left out; docs/validation.md, "Installing laplace-torch").
:func:`run_environment` runs, inside it,
``laplace-lab validate --scoreboard --library laplace-torch`` and keeps its laplace-torch
entry. :func:`versions_payload` puts the versions side by side (one JSON object: counts per
version, which finding appears in which version, the cases whose status differs) and
:func:`versions_markdown` renders it; :func:`write_versions` writes ``versions.json`` and
``versions.md``. The environments need the package registry, so the command stays out of
``make test``; an environment whose recorded install commands are unchanged is reused.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from laplace_lab._checks import integer

__all__ = [
    "BRIDGED",
    "ENVIRONMENTS",
    "NOT_COMPARED",
    "REGENERATE",
    "VERSION_FINDINGS",
    "Environment",
    "EnvironmentRun",
    "VersionFinding",
    "VersionsBoard",
    "build_environment",
    "run_environment",
    "run_versions",
    "versions_markdown",
    "versions_payload",
    "write_versions",
]

#: The command that regenerates the committed page (docs/versions.md and versions.json).
REGENERATE = "laplace-lab validate --versions --seed 0 --out docs"
#: The library whose versions are compared.
LIBRARY = "laplace-torch"
#: The exact torch of every environment (a CPU build; a looser pin pulls a CUDA build).
TORCH = "torch==2.13.0"
#: The statuses, in the order of the page's columns.
STATUSES = ("PASS", "FAIL", "ERROR", "N/A", "SKIP")


@dataclass(frozen=True)
class Environment:
    """One laplace-torch version and the backends installed beside it.

    Parameters
    ----------
    version : str
        The laplace-torch version.
    curvlinops : str
        The curvlinops-for-pytorch version its metadata accepts.
    backpack : str
        The backpack-for-pytorch version (laplace-torch does not pin it).
    extra : tuple of str
        Further requirements of these pins that the project's extra does not imply (installed
        with the project, so that pip resolves them together).
    why : str
        Why these pins: the requirements read from laplace-torch's and curvlinops' METADATA.
    """

    version: str
    curvlinops: str
    backpack: str = "1.7.1"
    extra: tuple[str, ...] = ()
    why: str = ""

    def install_lines(self) -> list[str]:
        """The pip commands that build it, as typed in the repository."""
        extra = "".join(f" '{e}'" for e in self.extra)
        return [
            f"pip install {TORCH}",
            f"pip install -e '.[laplace-torch]'{extra}",
            f"pip install --no-deps {' '.join(self.no_deps())}",
        ]

    def no_deps(self) -> tuple[str, ...]:
        """The requirements installed with ``--no-deps``."""
        return (
            f"laplace-torch=={self.version}",
            f"backpack-for-pytorch=={self.backpack}",
            f"curvlinops-for-pytorch=={self.curvlinops}",
            "asdfghjkl==0.1a4",
        )


#: The versions compared, oldest first, each with the newest curvlinops it runs with among
#: those its metadata accepts (0.2.1 and 0.2.2.2: ``curvlinops-for-pytorch>=2.0``, of which
#: only the 2.x line imports; 0.2.3 and 0.3: ``>=3.0.1``). All pin ``asdfghjkl==0.1a4`` and
#: leave BackPACK open (1.7.1, the newest). :data:`NOT_COMPARED` says why the others are not.
ENVIRONMENTS: Mapping[str, Environment] = {
    "0.2.1": Environment(
        "0.2.1",
        curvlinops="2.0.1",
        extra=("numpy<2",),
        why="laplace-torch 0.2.1 requires curvlinops-for-pytorch>=2.0 but imports "
        "`curvlinops._base`, which 3.x no longer has; 2.0.1 is the newest 2.x and requires "
        "numpy<2",
    ),
    "0.2.2.2": Environment(
        "0.2.2.2",
        curvlinops="2.0.1",
        extra=("numpy<2",),
        why="laplace-torch 0.2.2.2 requires curvlinops-for-pytorch>=2.0 but imports "
        "`curvlinops._base`, which 3.x no longer has (beside 3.0.1 every case is an ERROR, "
        "`No module named 'curvlinops._base'`); 2.0.1 is the newest 2.x and requires numpy<2",
    ),
    "0.2.3": Environment(
        "0.2.3",
        curvlinops="3.0.1",
        why="laplace-torch 0.2.3 requires curvlinops-for-pytorch>=3.0.1",
    ),
    "0.3": Environment(
        "0.3",
        curvlinops="3.0.1",
        why="laplace-torch 0.3 requires curvlinops-for-pytorch>=3.0.1",
    ),
}


@dataclass(frozen=True)
class VersionFinding:
    """A disagreement with the cases seen in some versions only, not among the findings of
    :mod:`~laplace_lab.conformance.libraries` (which describe the newest version).

    Parameters
    ----------
    id : str
        ``"laplace-torch <version> V<n>"``, the oldest version it is found in.
    kind : str
        As :class:`~laplace_lab.conformance.libraries.Finding`.
    title : str
        One line: what is wrong.
    description : str
        What was found, and where in the library.
    versions : tuple of str
        The versions it is found in.
    cases : tuple of str
        Case names or prefixes (ending in ``/``) it explains in those versions.
    """

    id: str
    kind: str
    title: str
    description: str
    versions: tuple[str, ...]
    cases: tuple[str, ...]

    def explains(self, version: str, case: str) -> bool:
        """Whether this finding explains ``case`` in ``version``."""
        return version in self.versions and any(
            case == c or (c.endswith("/") and case.startswith(c)) for c in self.cases
        )


#: The findings of older versions only (they take precedence over the libraries' findings
#: for their cases, in their versions). Where a case fails in an older version as it does in
#: the newest (the same reason), the libraries' finding stays.
VERSION_FINDINGS: tuple[VersionFinding, ...] = (
    VersionFinding(
        "laplace-torch 0.2.1 V1",
        "bug",
        "every curvature is allocated in float32, whatever the model's dtype",
        "`_init_H` allocates H with `torch.zeros(..., device=self._device)`, torch's default "
        "dtype, in every Laplace class (`FullLaplace`, `DiagLaplace`, `KronLaplace`, "
        "`FullSubnetLaplace`, the last-layer ones), so a float64 model gets a float32 "
        "posterior. Where its float64 Jacobians meet it (`functional_variance`'s einsum, "
        "`KronDecomposed.bmm` in `KronLaplace.sample`, the GLM predictive of a vector "
        "prior) laplace-torch raises `RuntimeError: expected scalar type Double but found "
        "Float` (ERROR); elsewhere the diagonal, KFAC, last-layer and diagonal "
        "empirical-Fisher variances and the diagonal-Laplace mask are float32 numbers "
        "(FAIL, within float32's rounding). From 0.2.2.2 on every structure but the full "
        "GGN follows the model's dtype ([laplace-torch F1](validation.md#laplace-torch-f1) "
        "is what remains).",
        ("0.2.1",),
        (
            "predictive/linear-gaussian",
            "predictive/linear-gaussian-subset",
            "predictive/mlp-regression",
            "predictive/mlp-regression-subset",
            "predictive/mlp-binary",
            "predictive/mlp-binary-subset",
            "predictive/mlp-multiclass",
            "predictive/mlp-multiclass-subset",
            "predictive/cnn-multiclass",
            "hessian/",
            "many-outputs/",
            "sbc/linear-gaussian-diagonal-prior",
            "structured-samples/kron/mlp-regression-separate",
            "structured-samples/kron/mlp-binary-separate",
            "structured-samples/kron/mlp-multiclass-separate",
            "masks/subnet_diagonal",
            "diagonal/",
            "diagonal-subnetwork/mlp-regression-subset",
            "diagonal-subnetwork/mlp-binary-subset",
            "diagonal-subnetwork/mlp-multiclass-subset",
            "kfac/linear-gaussian-separate",
            "kfac/mlp-regression-separate",
            "last-layer/mlp-regression-diag",
            "last-layer/mlp-regression-kron",
            "last-layer/mlp-multiclass-diag",
            "last-layer/cnn-multiclass-diag",
            "empirical-fisher/mlp-regression-full",
            "empirical-fisher/mlp-binary-full",
            "empirical-fisher/mlp-binary-diag",
            "empirical-fisher/mlp-multiclass-full",
            "empirical-fisher/mlp-multiclass-diag",
            "probabilities/probit/mlp-binary",
            "probabilities/probit/mlp-multiclass",
            "probabilities/mc/mlp-binary",
            "probabilities/mc/mlp-multiclass",
            "probabilities/bridge/mlp-multiclass",
        ),
    ),
    VersionFinding(
        "laplace-torch 0.2.1 V2",
        "bug",
        "full and subnetwork samples have the covariance LᵀL instead of LLᵀ = Ω⁻¹",
        "`FullLaplace.sample` and `FullSubnetLaplace.sample` return θ̂ + z L for rows z of "
        "standard normals (`samples @ self.posterior_scale`), with L the lower-triangular "
        "factor of `torch.distributions`' `_precision_to_scale_tril`, LLᵀ = Ω⁻¹; a row zL is "
        "the column Lᵀz, of covariance LᵀL, which is not Ω⁻¹ unless L is diagonal. The "
        "samples' mean passes and their covariance test fails (p down to 0 in 4000 samples). "
        "0.2.3 and 0.3 draw `samples @ self.posterior_scale.T`.",
        ("0.2.1", "0.2.2.2"),
        (
            "samples/linear-gaussian",
            "samples/mlp-regression-subset",
            "samples/mlp-regression-subset-float32",
            "samples/mlp-binary-subset",
            "samples/mlp-multiclass-subset",
        ),
    ),
)


#: The public-API differences between the versions that the adapter
#: (:mod:`~laplace_lab.conformance.adapters.laplace_torch`) bridges with a version switch:
#: none. Every call it makes exists, with the same arguments, in every version compared;
#: each ERROR is laplace-torch's own exception.
BRIDGED: tuple[str, ...] = ()

#: The versions on the registry that are not compared, and why.
NOT_COMPARED: Mapping[str, str] = {
    "0.2.2": "its wheel holds no code (only its .dist-info)",
    "0.2.2.1": "its wheel holds no code (only its .dist-info)",
}


@dataclass(frozen=True)
class EnvironmentRun:
    """One environment's laplace-torch scoreboard entry and what it took.

    Parameters
    ----------
    environment : Environment
    library : dict
        The laplace-torch entry of its ``scoreboard.json`` (``counts``, ``results``, ...).
    packages : dict
        Every installed distribution → version.
    install_seconds : float
        Wall time of its installation (recorded when it was built).
    run_seconds : float
        Wall time of its scoreboard run.
    """

    environment: Environment
    library: dict[str, Any]
    packages: dict[str, str]
    install_seconds: float
    run_seconds: float


@dataclass(frozen=True)
class VersionsBoard:
    """The environments' runs, in the order of :data:`ENVIRONMENTS`, the cases, and the
    commit the runs reported."""

    seed: int
    runs: tuple[EnvironmentRun, ...]
    cases: tuple[str, ...]
    commit: str = "unknown"


def _repository() -> Path:
    root = Path(__file__).resolve().parents[1]
    if not (root / "pyproject.toml").is_file():
        raise RuntimeError(
            f"--versions installs this repository into each environment and needs its source "
            f"checkout; no pyproject.toml in {root}"
        )
    return root


def _install_commands(env: Environment, repo: Path) -> list[list[str]]:
    """The pip commands (after ``python -m pip``) that build ``env``."""
    return [
        ["install", "--quiet", "--upgrade", "pip"],
        ["install", "--quiet", TORCH],
        ["install", "--quiet", "-e", f"{repo}[laplace-torch]", *env.extra],
        ["install", "--quiet", "--no-deps", *env.no_deps()],
    ]


def _clean_env() -> dict[str, str]:
    """The process environment without what would put another Python's packages first."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


def build_environment(
    env: Environment, venvs: Path | str, *, log: Callable[[str], Any] | None = None
) -> tuple[Path, float]:
    """Create (or reuse) the virtual environment of ``env``.

    Parameters
    ----------
    env : Environment
    venvs : path
        The folder of the environments; ``<venvs>/laplace-torch-<version>`` is created.
    log : callable, optional
        Called with a line per step.

    Returns
    -------
    (pathlib.Path, float)
        Its Python and the seconds its installation took (recorded in the environment, so
        a reused one reports the time it was built in).
    """
    repo = _repository()
    folder = Path(venvs).resolve() / f"{LIBRARY}-{env.version}"
    stamp = folder / "laplace-lab-versions.json"
    commands = _install_commands(env, repo)
    python = folder / "bin" / "python"
    if stamp.is_file() and python.is_file():
        recorded = json.loads(stamp.read_text(encoding="utf-8"))
        if recorded.get("commands") == commands:
            return python, float(recorded["seconds"])
    say = log or (lambda line: None)
    start = time.perf_counter()
    say(f"{LIBRARY} {env.version}: creating {folder}")
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(folder)], check=True)
    for command in commands:
        say(f"{LIBRARY} {env.version}: pip {' '.join(command)}")
        subprocess.run([str(python), "-m", "pip", *command], check=True, env=_clean_env())
    seconds = time.perf_counter() - start
    stamp.write_text(json.dumps({"commands": commands, "seconds": round(seconds, 1)}), "utf-8")
    return python, seconds


def _packages(python: Path) -> dict[str, str]:
    out = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=json"],
        capture_output=True,
        text=True,
        check=True,
        env=_clean_env(),
    )
    rows = json.loads(out.stdout)
    return {r["name"].lower(): r["version"] for r in sorted(rows, key=lambda r: r["name"].lower())}


def run_environment(
    python: Path | str, *, seed: int, log: Callable[[str], Any] | None = None
) -> tuple[dict[str, Any], dict[str, Any], float]:
    """Run the laplace-torch scoreboard with the environment's ``laplace-lab``.

    Parameters
    ----------
    python : path
        The environment's Python.
    seed : int
        The scoreboard's seed.
    log : callable, optional
        Called with each line the run prints.

    Returns
    -------
    (dict, dict, float)
        The laplace-torch entry of its ``scoreboard.json``, the whole payload, and the run's
        wall time in seconds.
    """
    script = Path(python).parent / "laplace-lab"
    with tempfile.TemporaryDirectory(prefix="laplace-lab-versions-") as tmp:
        command = [str(script), "validate", "--scoreboard", "--library", LIBRARY]
        command.append("--no-reproducers")  # the page reads scoreboard.json only
        command += ["--seed", str(seed), "--out", tmp]
        start = time.perf_counter()
        proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_clean_env()
        )
        for line in proc.stdout or ():
            if log is not None:
                log(line.rstrip())
        if proc.wait() != 0:
            raise RuntimeError(f"{' '.join(command)} exited with {proc.returncode}")
        seconds = time.perf_counter() - start
        payload = json.loads((Path(tmp) / "scoreboard.json").read_text(encoding="utf-8"))
    (library,) = [lib for lib in payload["libraries"] if lib["library"] == LIBRARY]
    return library, payload, seconds


def _versions_arg(versions: Iterable[str] | None) -> list[str]:
    if versions is None:
        return list(ENVIRONMENTS)
    chosen = list(versions)
    unknown = [v for v in chosen if v not in ENVIRONMENTS]
    if unknown or not chosen:
        raise ValueError(
            f"versions must be laplace-torch versions among {list(ENVIRONMENTS)}; "
            f"got versions={chosen}"
        )
    return [v for v in ENVIRONMENTS if v in chosen]


def run_versions(
    versions: Iterable[str] | None = None,
    *,
    seed: int = 0,
    venvs: Path | str | None = None,
    log: Callable[[str], Any] | None = None,
) -> VersionsBoard:
    """Build (or reuse) each version's environment and run its laplace-torch scoreboard.

    Parameters
    ----------
    versions : iterable of str, optional
        Keys of :data:`ENVIRONMENTS` (all when None).
    seed : int
        ≥ 0: the scoreboard's seed.
    venvs : path, optional
        The folder of the environments (default: ``.venvs`` in the repository).
    log : callable, optional
        Called with a line per step and per case.

    Returns
    -------
    VersionsBoard
    """
    chosen = _versions_arg(versions)
    seed = integer(seed, "seed", low=0)
    folder = Path(venvs) if venvs is not None else _repository() / ".venvs"
    runs, payload = [], {}
    for version in chosen:
        env = ENVIRONMENTS[version]
        python, install = build_environment(env, folder, log=log)
        library, payload, seconds = run_environment(python, seed=seed, log=log)
        runs.append(EnvironmentRun(env, library, _packages(python), install, seconds))
    cases = tuple(c["case"] for c in payload["cases"])
    return VersionsBoard(seed, tuple(runs), cases, payload["generated"]["commit"])


def _finding_of(version: str, result: dict[str, Any]) -> str | None:
    """The finding that explains a result: a version's own first, then the libraries'."""
    if result["status"] == "PASS":
        return None
    own = next((f for f in VERSION_FINDINGS if f.explains(version, result["case"])), None)
    return own.id if own is not None else result["finding"]


def versions_payload(board: VersionsBoard, *, date: str | None = None) -> dict[str, Any]:
    """The versions side by side, as one JSON object.

    Parameters
    ----------
    board : VersionsBoard
    date : str, optional
        The ISO date in ``generated`` (today, UTC, when None).

    Returns
    -------
    dict
        ``environments`` (per version: pins, every package's version, install and run
        seconds, counts and each case's status, ratio, finding and reason), ``findings``
        (each id with its kind, title, link or description, and the number of cases it
        explains per version; ``specific`` when it appears in some versions only) and
        ``differences`` (the cases whose status is not the same in every version).
    """
    from laplace_lab.conformance.libraries import LIBRARIES

    if not isinstance(board, VersionsBoard):
        raise TypeError(f"board must be a VersionsBoard; got {type(board).__name__}")
    versions = [run.environment.version for run in board.runs]
    environments, explained = [], {}
    for run in board.runs:
        env, results = run.environment, []
        for r in run.library["results"]:
            finding = _finding_of(env.version, r)
            if finding is not None:
                explained.setdefault(finding, dict.fromkeys(versions, 0))[env.version] += 1
            results.append({**r, "finding": finding})
        environments.append(
            {
                "version": env.version,
                "install": env.install_lines(),
                "why": env.why,
                "packages": run.packages,
                "install_seconds": round(run.install_seconds, 1),
                "run_seconds": round(run.run_seconds, 1),
                "counts": {s: int(run.library["counts"].get(s, 0)) for s in STATUSES},
                "results": results,
            }
        )
    known = {f.id: f for f in LIBRARIES[LIBRARY].findings}
    own = {f.id: f for f in VERSION_FINDINGS}
    findings = []
    for fid in [*known, *own]:
        if fid not in explained:
            continue
        per_version = explained[fid]
        entry: dict[str, Any] = {"id": fid, "cases": per_version}
        if fid in known:
            f = known[fid]
            entry.update(kind=f.kind, title=f.title, link=f.link, description=None)
        else:
            f = own[fid]
            entry.update(kind=f.kind, title=f.title, link=None, description=f.description)
        entry["specific"] = [v for v in versions if per_version[v]] != versions
        findings.append(entry)
    status = {e["version"]: {r["case"]: r for r in e["results"]} for e in environments}
    differences = [
        {"case": case, "statuses": {v: status[v][case]["status"] for v in versions}}
        for case in board.cases
        if len({status[v][case]["status"] for v in versions}) > 1
    ]
    return {
        "library": LIBRARY,
        "seed": board.seed,
        "command": REGENERATE.replace("--seed 0", f"--seed {board.seed}"),
        "generated": {
            "date": date or datetime.datetime.now(datetime.UTC).date().isoformat(),
            "commit": board.commit,
            "seconds": round(sum(r.install_seconds + r.run_seconds for r in board.runs), 1),
        },
        "versions": versions,
        "cases": list(board.cases),
        "environments": environments,
        "findings": findings,
        "differences": differences,
        "bridged": list(BRIDGED),
        "not_compared": dict(NOT_COMPARED),
    }


def _finding_link(finding: dict[str, Any]) -> str:
    if finding["link"]:
        return f"[{finding['id']}]({finding['link']})"
    return f"[{finding['id']}](#{finding['id'].lower().replace(' ', '-').replace('.', '')})"


def _where(finding: dict[str, Any], versions: Sequence[str]) -> str:
    present = [v for v in versions if finding["cases"][v]]
    if not finding["specific"]:
        return "every version"
    if len(present) == 1:
        return f"**{present[0]} only**"
    return "**" + ", ".join(present) + " only**"


def versions_markdown(payload: dict[str, Any]) -> str:
    """``versions.md``: counts per version, findings per version, differing cases.

    Parameters
    ----------
    payload : dict
        As returned by :func:`versions_payload`.

    Returns
    -------
    str
    """
    from laplace_lab.conformance.scoreboard_page import format_ratio

    versions = payload["versions"]
    envs = {e["version"]: e for e in payload["environments"]}
    gen = payload["generated"]
    lines = [
        f"# {payload['library']} across its versions",
        "",
        f"The conformance scoreboard of {payload['library']} "
        f"([scoreboard.md](scoreboard.md), [validation.md](validation.md)) for each version "
        "on the registry that holds code, with the newest curvlinops it runs with among those "
        "its metadata accepts, each in a virtual environment of its own "
        "(torch pinned exactly, this repository with its `[laplace-torch]` extra, then "
        "laplace-torch and its backends with `--no-deps`, as in "
        "[Installing laplace-torch](validation.md#installing-laplace-torch)). "
        "Regenerate this page and `versions.json` with",
        "",
        "```",
        payload["command"],
        "```",
        "",
        f"Seed {payload['seed']}; generated {gen['date']} at commit {gen['commit']}; "
        f"{gen['seconds']:.0f} s in all (installs as recorded when each environment was "
        "built, and the runs).",
        "",
        "## Counts",
        "",
        "| version | " + " | ".join(STATUSES) + " | cases | install (s) | run (s) |",
        "|---|" + "---:|" * (len(STATUSES) + 3),
    ]
    for v in versions:
        e = envs[v]
        counts = " | ".join(str(e["counts"][s]) for s in STATUSES)
        lines.append(
            f"| {v} | {counts} | {len(e['results'])} | {e['install_seconds']:.0f} | "
            f"{e['run_seconds']:.0f} |"
        )
    lines += [
        "",
        "## Findings by version",
        "",
        "A cell is the number of cases the finding explains in that version; a finding "
        "specific to a version is marked so.",
        "",
        "| finding | kind | " + " | ".join(versions) + " | where |",
        "|---|---|" + "---:|" * len(versions) + "---|",
    ]
    for f in payload["findings"]:
        cells = " | ".join(str(f["cases"][v]) if f["cases"][v] else "—" for v in versions)
        lines.append(
            f"| {_finding_link(f)}: {f['title']} | {f['kind']} | {cells} | {_where(f, versions)} |"
        )
    own = [f for f in payload["findings"] if f["description"]]
    if own:
        lines += ["", "### Findings of older versions only", ""]
        for f in own:
            anchor = f["id"].lower().replace(" ", "-").replace(".", "")
            lines += [
                f'<a id="{anchor}"></a>',
                f"**{f['id']}: {f['title']}** (*{f['kind']}*). {f['description']}",
                "",
            ]
    lines += ["", "## Cases whose status differs between versions", ""]
    if payload["differences"]:
        lines += [
            "| case | " + " | ".join(versions) + " |",
            "|---|" + "---|" * len(versions),
        ]
        cells = {v: {r["case"]: r for r in envs[v]["results"]} for v in versions}
        for d in payload["differences"]:
            row = []
            for v in versions:
                r = cells[v][d["case"]]
                text = r["status"]
                if r["ratio"] is not None:
                    text += f" {format_ratio(r['ratio'])}"
                if r["finding"]:
                    text += f" ({r['finding']})"
                row.append(text)
            lines.append(f"| `{d['case']}` | " + " | ".join(row) + " |")
    else:
        lines.append("None: every case has the same status in every version.")
    lines += ["", "## API differences bridged", ""]
    if payload["bridged"]:
        lines += [f"- {b}" for b in payload["bridged"]]
    else:
        lines.append(
            "None. The adapter written for laplace-torch 0.3 "
            "(`laplace_lab.conformance.adapters.laplace_torch`) runs unchanged on every version "
            "here: every call it makes exists with the same arguments, and each ERROR is "
            "laplace-torch's own exception."
        )
    lines += ["", "## Versions not compared", ""]
    lines += [f"- {v}: {why}" for v, why in payload["not_compared"].items()]
    lines += ["", "## Environments", ""]
    for v in versions:
        e = envs[v]
        commands = "; ".join(f"`{c}`" for c in e["install"])
        lines.append(f"- {payload['library']} {v}: {e['why']}. {commands}")
    names = sorted({n for e in envs.values() for n in e["packages"]})
    lines += [
        "",
        "Every distribution of each environment (bold where the versions differ):",
        "",
        "| distribution | " + " | ".join(versions) + " |",
        "|---|" + "---|" * len(versions),
    ]
    for n in names:
        found = [envs[v]["packages"].get(n, "—") for v in versions]
        cell = (lambda s: f"**{s}**") if len(set(found)) > 1 else (lambda s: s)
        lines.append(f"| {n} | " + " | ".join(cell(s) for s in found) + " |")
    return "\n".join(lines) + "\n"


def write_versions(
    board: VersionsBoard, out_dir: Path | str, *, date: str | None = None
) -> dict[str, Path]:
    """Write ``versions.json`` and ``versions.md`` into ``out_dir`` (created if needed).

    Parameters
    ----------
    board : VersionsBoard
    out_dir : path
    date : str, optional
        As in :func:`versions_payload`.

    Returns
    -------
    dict
        Paths keyed by ``"json"`` and ``"markdown"``.
    """
    payload = versions_payload(board, date=date)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "versions.json", "markdown": out / "versions.md"}
    paths["json"].write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", "utf-8")
    paths["markdown"].write_text(versions_markdown(payload), encoding="utf-8")
    return paths
