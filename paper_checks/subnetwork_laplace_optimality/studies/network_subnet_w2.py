"""Study ``network-subnet-w2``: Experiment 1 of the optimality paper on trained networks.

Raha, Khare & Patra, "Optimality of Sub-network Laplace Approximations", arXiv:2605.09075, §5.1 and
App. C: per replication one MAP network is trained, its per-sample Jacobians and GGN computed, and
every selection method evaluated over the k-grid
(:func:`laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.experiment1.run_seed`);
metrics are the mean W2 to the full linearized-Laplace predictive and the 95% coverage of each
method at each k (``w2_<method>_k<k>``, ``coverage_<method>_k<k>``) and of the k-independent
references (``w2_<reference>``: full Laplace, NeuralLinear, KFAC-Laplace, deep ensemble).

The default grid is a small package-data configuration (statsmodels ``fair``, 2×50 MLP,
N = 300); ``--full`` is Setup A's network and k-grid on statsmodels ``randhie``
(3×200 MLP, N = 2,000, 1,000 test points, k up to 10,000).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from laplace_lab._checks import one_of, positive_int
from laplace_lab.studies.registry import register
from laplace_lab.studies.spec import Study

__all__ = ["STUDY", "check_params", "run_one"]

_SMALL_KS = (50, 100, 200, 500, 1000)
_FULL_KS = (50, 100, 200, 500, 1000, 2000, 5000, 10000)


def _config(params: dict[str, Any]) -> Any:  # an ExperimentConfig (torch imported lazily)
    from laplace_lab.networks.training import adam_recipe
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.experiment1 import (
        PAPER_METHODS,
        ExperimentConfig,
    )

    small = params["n_train"] < 1000
    return ExperimentConfig(
        dataset=params["dataset"],
        model=params["model"],
        n_train=params["n_train"],
        n_test=min(200, params["n_train"]) if small else 1000,
        ks=_SMALL_KS if small else _FULL_KS,
        methods=(*PAPER_METHODS, "random"),
        train=adam_recipe(epochs=40, batch_size=64, lr=3e-3) if small else adam_recipe(),
        ensemble_size=3 if small else 5,
        coverage_target="y",
        greedy_candidates="2k" if small else "paper",
    )


def check_params(params: dict[str, Any]) -> None:
    """Refuse a grid point ``run_one`` cannot run (a package data set, n_train ≥ 1, a known
    model: the configuration is built and validated)."""
    from laplace_lab.networks.data import DATASETS

    one_of(params["dataset"], "dataset", sorted(DATASETS))
    positive_int(params["n_train"], "n_train")
    _config(params)


def run_one(params: dict[str, Any], *, rng: np.random.Generator) -> dict[str, float]:
    """One trained network and every method along the k-grid (module docstring)."""
    from laplace_lab.paper_checks.subnetwork_laplace_optimality.experiments.experiment1 import (
        run_seed,
    )

    res = run_seed(_config(params), rng=rng)
    out: dict[str, float] = {}
    for name in res.w2:
        for k, w, c in zip(res.ks, res.w2[name], res.coverage[name], strict=True):
            out[f"w2_{name}_k{k}"] = float(w)
            out[f"coverage_{name}_k{k}"] = float(c)
    for name, ref in res.reference.items():
        out[f"w2_{name}"] = float(ref["w2"])
        out[f"coverage_{name}"] = float(ref["coverage"])
    out["noise_var"] = float(res.noise_var)
    return out


STUDY = register(
    Study(
        name="network-subnet-w2",
        description=(
            "Experiment 1 on trained MLPs: mean W2 to the full linearized-Laplace predictive "
            "and 95% coverage of Gradient-/Greedy-Laplace, Subnet-Diagonal, Last-k and random "
            "over k, with NeuralLinear, KFAC-Laplace and a deep ensemble as references."
        ),
        grid={"dataset": ("fair",), "model": ("mlp_2x50",), "n_train": (300,)},
        full_grid={"dataset": ("randhie",), "model": ("mlp_3x200",), "n_train": (2000,)},
        replications=3,
        full_replications=10,
        run_one=run_one,
        check_params=check_params,
    )
)
