"""Claims of FSP-Laplace whose data sets are not shipped offline: NOT_REPRODUCIBLE_HERE.

Cinquin, Pförtner, Fortuin, Hennig & Bamler, "FSP-Laplace: Function-Space Priors for the
Laplace Approximation in Bayesian Deep Learning", NeurIPS 2024, arXiv:2407.13711, §4.1
("Ocean current modeling", Table 1, Fig. 2, App. B.2) and §4.1 ("Image classification",
"Out-of-distribution detection", Table 2).

Each verdict rests on a probe, not on a sentence: none of the data set's names may be a loader
of :data:`laplace_lab.networks.data.DATASETS` (which reads installed packages only, never the
network) and ``torchvision`` (which holds the MNIST-family loaders) must not be importable. If
either held, the claim would have to run the set-up instead: an ERROR until it does.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from laplace_lab.networks import data
from laplace_lab.paper_checks.verification import (
    Context,
    Kind,
    Mutant,
    Setting,
    Status,
    Verdict,
    claim,
    require,
)

PAPER = "fsp-laplace"

#: Names a loader of the ocean-drifter data would carry.
OCEAN_KEYS = ("gulf_drifters", "gulfdrifters", "ocean_current", "ocean_currents")
#: Names a loader of the Table 2 data (and of the KMNIST context points) would carry.
IMAGE_KEYS = ("mnist", "fashion_mnist", "fmnist", "kmnist", "kuzushiji_mnist")


def _available(key: str, original: Any = data.DATASETS) -> dict[str, Any]:
    """The loaders with a data set called ``key`` added (it would be loadable here)."""
    return {**original, key: original["digits"]}


def _probe(dataset: str, keys: tuple[str, ...], *, torchvision: bool) -> None:
    found = sorted(set(keys) & set(data.DATASETS))
    require(
        not found,
        f"{dataset} is loadable here (networks.data.DATASETS has {found}): this claim must run "
        "the set-up, not declare it unavailable",
    )
    if torchvision:
        require(
            importlib.util.find_spec("torchvision") is None,
            f"torchvision is installed: {dataset} may be loadable from a local copy, so this "
            "claim must run the set-up, not declare it unavailable",
        )


@claim(
    paper=PAPER,
    name="ocean-current-table1-row",
    location="§4.1 'Ocean current modeling', Table 1 (ocean-current row), Fig. 2, App. B.2",
    statement=(
        "On the GulfDrifters ocean-current task FSP-Laplace strongly improves over the Laplace, "
        "FVI and the GP in expected log-likelihood (0.2823 vs −126,845, −35.27, −0.5069) and "
        "is competitive in mean squared error (0.0169 vs GP 0.0131)."
    ),
    kind=Kind.SUPERIORITY,
    setting=Setting.paper(specific=True),
    expected=Status.NOT_REPRODUCIBLE_HERE,
    mutants=(
        Mutant(
            "dataset-available",
            "a loader for the GulfDrifters data present among the package data sets",
            {(data, "DATASETS"): _available(OCEAN_KEYS[0])},
            expect=Status.ERROR,
        ),
    ),
)
def _ocean_current(ctx: Context) -> Verdict:
    """§4.1: "We find that FSP-LAPLACE strongly improves over Laplace, FVI and GP in terms of
    expected log-likelihood, and performs competitively in terms of mean squared error (MSE)"
    (Table 1, ocean-current row)."""
    _probe("GulfDrifters", OCEAN_KEYS, torchvision=False)
    return Verdict(
        Status.NOT_REPRODUCIBLE_HERE,
        summary="the GulfDrifters data are not shipped offline",
        evidence=(
            "The ocean-current row of Table 1 uses the GulfDrifters data set (Lilly & "
            "Pérez-Brunius 2021, ref. [31]) in the set-up of Shalashilin's GPJax example "
            "(ref. [32]): 20 simulated drifter velocities for training and 544 grid-averaged "
            "velocities on [−90.8, −83.8] × [24.0, 27.5] for testing (App. B.2). No installed "
            "package ships these data and nothing is downloaded at run time; no loader of "
            f"networks.data (keys {sorted(data.DATASETS)}) provides them.",
            "What it would take: a local copy of GulfDrifters read through "
            "`laplace_lab.networks.data.load_csv`, the Helmholtz-decomposed RBF covariance of "
            "Berlinghieri et al. (ref. [33]) for the prior and the matching parameterisation "
            "of the network (App. B.2), an FVI baseline, and 5 training seeds per method as "
            "in Table 1 — minutes of CPU once the data are present.",
            "The paper's other knowledge-carrying regression task (Mauna Loa CO₂, shipped with "
            "statsmodels) is run by the mauna-loa-* claims.",
        ),
    )


@claim(
    paper=PAPER,
    name="image-classification-table2",
    location="§4.1 'Image classification' and 'Out-of-distribution detection', Table 2",
    statement=(
        "On MNIST and FashionMNIST FSP-Laplace matches the accuracy of the best baselines and "
        "obtains the highest expected log-likelihood and, with KMNIST context points, the "
        "highest out-of-distribution detection accuracy (Table 2)."
    ),
    kind=Kind.SUPERIORITY,
    setting=Setting.paper(specific=True),
    expected=Status.NOT_REPRODUCIBLE_HERE,
    mutants=(
        Mutant(
            "dataset-available",
            "a loader for MNIST present among the package data sets",
            {(data, "DATASETS"): _available(IMAGE_KEYS[0])},
            expect=Status.ERROR,
        ),
    ),
)
def _image_classification(ctx: Context) -> Verdict:
    """Table 2 caption: "FSP-LAPLACE performs strongly among baselines matching the accuracy
    of best-performing baselines and obtaining the highest expected log-likelihood and
    out-of-distribution detection accuracy"."""
    _probe("MNIST / FashionMNIST / KMNIST", IMAGE_KEYS, torchvision=True)
    return Verdict(
        Status.NOT_REPRODUCIBLE_HERE,
        summary="MNIST, FashionMNIST and KMNIST are not shipped offline",
        evidence=(
            "Table 2 trains a convolutional network on MNIST and FashionMNIST (60,000 28×28 "
            "images each), draws FSP-Laplace's and FVI's context points from KMNIST or "
            "uniformly, and detects out-of-distribution inputs on the other data set (App. "
            "B.2). None of the three is shipped by an installed package (torchvision is not "
            "installed; scikit-learn ships only the 8×8 digits) and nothing is downloaded at "
            f"run time; no loader of networks.data (keys {sorted(data.DATASETS)}) provides "
            "them.",
            "What it would take: local copies of MNIST, FashionMNIST and KMNIST, the CNN of "
            "App. B.2, FVI and sparse-GP baselines, and 5 seeds × 7 methods × 2 data sets of "
            "CNN training with Algorithm 2 on thousands of context points — tens of CPU-hours "
            "on this machine's two cores (a GPU in the paper).",
        ),
    )
