"""Package discovery for setuptools (the rest of the metadata is in pyproject.toml).

The repository keeps one top-level folder per layer; each installs under the ``laplace_lab``
namespace, so that a user's own ``theory.py`` cannot shadow it. Every folder with an
``__init__.py`` below a layer folder is a package (a new paper folder needs no edit here),
and every ``recorded/*.json`` and ``RESULTS.md`` beside a package's modules is its data.
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


def packages() -> list[str]:
    """Every package below the layer folders, by its import name."""
    found = []
    for package, folder in LAYERS.items():
        for init in sorted((HERE / folder).rglob("__init__.py")):
            rel = init.parent.relative_to(HERE / folder)
            found.append(".".join([package, *rel.parts]))
    return found


if __name__ == "__main__":
    setup(
        packages=packages(),
        package_dir=LAYERS,
        package_data={"": ["recorded/*.json", "RESULTS.md"]},
    )
