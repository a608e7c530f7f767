"""Package discovery for setuptools (the rest of the metadata is in pyproject.toml).

The repository keeps one top-level folder per layer; each installs under the ``laplace_lab``
namespace, so that a user's own ``theory.py`` cannot shadow it. Every folder with an
``__init__.py`` below a layer folder is a package (a new paper folder needs no edit here),
and every ``RESULTS.md`` and ``check_seconds.json`` beside a package's modules is its data.
A data folder below a package (``recorded/``, no ``__init__.py``) is listed as a package of its
own, with its ``*.json`` as data: setuptools installs the files of an importable folder only
when it is listed, and warns about it otherwise.
"""

from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent
#: import name → folder of each layer
LAYERS = {
    "laplace_lab": "laplace_lab",
    "laplace_lab.theory": "theory",
    "laplace_lab.numerics": "numerics",
    "laplace_lab.networks": "networks",
    "laplace_lab.studies": "studies",
    "laplace_lab.paper_checks": "paper_checks",
    "laplace_lab.benchmarks": "benchmarks",
    "laplace_lab.conformance": "conformance",
}
#: Data folders (no ``__init__.py``) below a package, each listed as a package of its own.
DATA_FOLDERS = ("recorded",)


def packages() -> list[str]:
    """Every package below the layer folders, by its import name."""
    found = []
    for package, folder in LAYERS.items():
        for init in sorted((HERE / folder).rglob("__init__.py")):
            rel = init.parent.relative_to(HERE / folder)
            name = ".".join([package, *rel.parts])
            found.append(name)
            found += [f"{name}.{d}" for d in DATA_FOLDERS if (init.parent / d).is_dir()]
    return found


def package_data() -> dict[str, list[str]]:
    """The data files of every package: its RESULTS.md and costs, a data folder's JSON."""
    data = {"": ["RESULTS.md", "check_seconds.json"]}
    data.update({p: ["*.json"] for p in packages() if p.rsplit(".", 1)[-1] in DATA_FOLDERS})
    return data


if __name__ == "__main__":
    setup(
        packages=packages(),
        package_dir=LAYERS,
        package_data=package_data(),
    )
