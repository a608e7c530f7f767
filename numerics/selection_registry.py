"""The registry of sub-network selection methods: one contract, one lookup.

Every method is registered under its name with one signature,
``select(problem, k, *, rng, **options) -> order``, and with what a dispatcher needs to know:
whether its prefixes are the nested subsets of smaller k (then one call at the largest k
serves a whole k-grid), whether k is a parameter at all (NeuralLinear takes the last layer),
and which options it accepts. Studies, the Wheel bandit and the paper checks look methods up
here; a new method registered with :func:`selection_method` is available to all of them.

A :class:`SubnetProblem` bundles what the methods read: the GGN factor of Ω (a dense
:class:`~.ggn.GGN` or a lazy :class:`~.network_ggn.NetworkGGN`), optional reference scores,
the MAP parameters θ̂ and the per-layer parameter counts.

References
----------
.. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
   Results and Methods", arXiv:2605.09075 (2026), §3 (Algorithms 1–2), App. B, App. C.3.
.. [2] E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato,
   "Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §5.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from laplace_lab._checks import one_of, subset_size
from laplace_lab.numerics.ggn import GGN
from laplace_lab.numerics.network_ggn import NetworkGGN
from laplace_lab.numerics.selection import (
    gradient_laplace,
    greedy_laplace,
    largest_magnitude,
    largest_marginal_variance,
    last_k,
    neural_linear,
    random_subset,
    subnet_diagonal,
)

__all__ = [
    "SelectionMethod",
    "SubnetProblem",
    "get_selection",
    "greedy_candidates",
    "select",
    "selection_method",
    "selection_methods",
]


@dataclass(frozen=True)
class SubnetProblem:
    """What a selection method may read.

    Parameters
    ----------
    precision : GGN or NetworkGGN
        Ω = J_wᵀJ_w + V.
    scores : (p,) array, optional
        Reference scores ranking parameters (default ``precision.scores()``, over the
        training inputs).
    theta : (p,) array, optional
        θ̂ in ``parameters()`` order (for largest magnitude; a NetworkGGN supplies it).
    layer_sizes : sequence of int, optional
        Parameter counts per layer, first layer first (for NeuralLinear; a NetworkGGN
        supplies it).
    """

    precision: GGN | NetworkGGN
    scores: Any = None
    theta: Any = None
    layer_sizes: Sequence[int] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.precision, GGN | NetworkGGN):
            raise TypeError(
                f"precision must be a GGN or a NetworkGGN; got {type(self.precision).__name__}"
            )

    @property
    def p(self) -> int:
        """Number of parameters."""
        return self.precision.p

    def reference_scores(self) -> Any:
        """``scores`` if given, else the training-set scores of ``precision``."""
        return self.precision.scores() if self.scores is None else self.scores

    def parameters(self) -> Any:
        """θ̂, from ``theta`` or the network of a NetworkGGN (one entry per parameter of Ω)."""
        if self.theta is None and not isinstance(self.precision, NetworkGGN):
            raise ValueError("this method needs theta: pass SubnetProblem(..., theta=θ̂)")
        theta = self.precision.theta() if self.theta is None else self.theta
        p = int(self.precision.p)
        n = int(np.prod(theta.shape)) if hasattr(theta, "shape") else len(theta)
        if n != p:
            raise ValueError(f"theta must have one entry per parameter (p={p}); got {n}")
        return theta

    def provides(self) -> frozenset[str]:
        """What the problem can give a method (see :attr:`SelectionMethod.needs`); the
        caller supplies ``rng``."""
        out = set()
        if self.theta is not None or isinstance(self.precision, NetworkGGN):
            out.add("theta")
        if self.layer_sizes is not None or isinstance(self.precision, NetworkGGN):
            out.add("layers")
        if isinstance(self.precision, GGN):
            out.add("dense")
        return frozenset(out)

    def layers(self) -> Sequence[int]:
        """Per-layer parameter counts, from ``layer_sizes`` or the network of a NetworkGGN."""
        if self.layer_sizes is not None:
            return self.layer_sizes
        if isinstance(self.precision, NetworkGGN):
            return self.precision.layer_sizes()
        raise ValueError("this method needs layer_sizes: pass SubnetProblem(..., layer_sizes=…)")


Selector = Callable[..., np.ndarray]


@dataclass(frozen=True)
class SelectionMethod:
    """A registered selection method.

    Attributes
    ----------
    name : str
        The registry key, in the papers' words (``"gradient_laplace"``).
    select : callable
        ``select(problem, k, *, rng, **options) -> order``: distinct indices in selection
        order.
    nested : bool
        ``select(problem, k)[:j]`` is the selection of size j for every j ≤ k.
    sized : bool
        k is a parameter (False: the size is fixed by the method, e.g. NeuralLinear).
    options : frozenset of str
        Keyword options ``select`` accepts beyond ``rng``.
    needs : frozenset of str
        What it reads beyond Ω and the scores: ``"rng"``, ``"theta"``, ``"layers"``, or
        ``"dense"`` (a dense :class:`~.ggn.GGN`, not a NetworkGGN).
    description : str
        One line: the rule and its source.
    """

    name: str
    select: Selector
    nested: bool
    sized: bool = True
    options: frozenset[str] = field(default_factory=frozenset)
    needs: frozenset[str] = field(default_factory=frozenset)
    description: str = ""


_REGISTRY: dict[str, SelectionMethod] = {}
_NEEDS = frozenset({"rng", "theta", "layers", "dense"})


def selection_method(
    name: str,
    *,
    nested: bool,
    sized: bool = True,
    options: Sequence[str] = (),
    needs: Sequence[str] = (),
    description: str = "",
) -> Callable[[Selector], Selector]:
    """Register ``select(problem, k, *, rng, **options)`` under ``name`` (a decorator)."""

    def register(fn: Selector) -> Selector:
        old = _REGISTRY.get(name)
        if old is not None and old.select.__qualname__ != fn.__qualname__:
            raise ValueError(f"a different selection method named {name!r} is registered")
        bad = sorted(set(needs) - _NEEDS)
        if bad:
            raise ValueError(f"needs must be among {sorted(_NEEDS)}; got {bad}")
        _REGISTRY[name] = SelectionMethod(
            name, fn, bool(nested), bool(sized), frozenset(options), frozenset(needs), description
        )
        return fn

    return register


def selection_methods() -> dict[str, SelectionMethod]:
    """Every registered method by name, in registration order."""
    return dict(_REGISTRY)


def get_selection(name: str) -> SelectionMethod:
    """The method ``name``, or a ValueError listing the registered names."""
    one_of(name, "method", list(_REGISTRY))
    return _REGISTRY[name]


def select(
    name: str,
    problem: SubnetProblem,
    k: int,
    *,
    rng: Any = None,
    shared: Mapping[str, Any] | None = None,
    **options: Any,
) -> np.ndarray:
    """The ordered sub-network of method ``name`` with k parameters (ignored if not sized).

    Parameters
    ----------
    name : str
        A registered method.
    problem : SubnetProblem
    k : int
        The sub-network size, 1 ≤ k ≤ p.
    rng : numpy.random.Generator or int, optional
        Passed to every method; only the random ones draw from it (and require it).
    shared : mapping, optional
        Settings a caller holds for all methods (e.g. ``{"candidates": "paper"}``); each
        method receives those it declares.
    **options
        Options for this method; one it does not declare is an error.
    """
    method = get_selection(name)
    if not isinstance(problem, SubnetProblem):
        raise TypeError(f"problem must be a SubnetProblem; got {type(problem).__name__}")
    unknown = sorted(set(options) - method.options)
    if unknown:
        raise ValueError(
            f"method {name!r} accepts options {sorted(method.options)}; got {unknown}"
        )
    kwargs = {key: v for key, v in (shared or {}).items() if key in method.options}
    kwargs.update(options)
    if method.sized:
        k = subset_size(k, problem.p, low=1)
    return method.select(problem, k, rng=rng, **kwargs)


def greedy_candidates(rule: Any, k: int, p: int) -> int:
    """The candidate count m of Greedy-Laplace for ``rule``.

    ``"2k"``: min(2k, p), Algorithm 2's box; ``"paper"``: min(2k + 1000, p − 1), capped at
    30,000 and at least k, the experiments' rule (App. C.3 of [1]_); an int: that m.
    """
    if isinstance(rule, str):
        one_of(rule, "candidates", ("2k", "paper"))
        if rule == "2k":
            return min(2 * k, p)
        return max(min(2 * k + 1000, p - 1, 30_000), k)
    return subset_size(rule, p, "candidates", low=k)


# ----------------------------------------------------------------------------- built-ins
@selection_method(
    "gradient_laplace",
    nested=True,
    description="Alg. 1 of Raha et al.: the k largest mean squared gradients (scores).",
)
def _gradient(problem: SubnetProblem, k: int, *, rng: Any = None) -> np.ndarray:
    return gradient_laplace(problem.reference_scores(), k)


@selection_method(
    "greedy_laplace",
    nested=False,
    options=("candidates",),
    description="Alg. 2 of Raha et al.: pivoted partial Cholesky on the top-m candidates.",
)
def _greedy(
    problem: SubnetProblem, k: int, *, rng: Any = None, candidates: Any = "2k"
) -> np.ndarray:
    m = greedy_candidates(candidates, k, problem.p)
    return greedy_laplace(problem.precision, k, n_candidates=m, scores=problem.reference_scores())


@selection_method(
    "subnet_diagonal",
    nested=True,
    description="The k smallest diag(Ω) (= largest diagonal-Laplace variances 1/Ω_ii).",
)
def _subnet_diagonal(problem: SubnetProblem, k: int, *, rng: Any = None) -> np.ndarray:
    return subnet_diagonal(problem.precision, k)


@selection_method(
    "last_k", nested=True, description="The last k entries of θ (App. B of Raha et al.)."
)
def _last_k(problem: SubnetProblem, k: int, *, rng: Any = None) -> np.ndarray:
    if isinstance(problem.precision, NetworkGGN):
        problem.precision.require_layer_order()
    return last_k(problem.p, k)


@selection_method(
    "random",
    nested=True,
    needs=("rng",),
    description="A uniformly random permutation prefix (needs rng).",
)
def _random(problem: SubnetProblem, k: int, *, rng: Any = None) -> np.ndarray:
    return random_subset(problem.p, k, rng=rng)


@selection_method(
    "largest_magnitude",
    nested=True,
    needs=("theta",),
    description="The k largest |θ̂_i| (laplace-torch's LargestMagnitudeSubnetMask).",
)
def _magnitude(problem: SubnetProblem, k: int, *, rng: Any = None) -> np.ndarray:
    return largest_magnitude(problem.parameters(), k)


@selection_method(
    "largest_marginal_variance",
    nested=True,
    needs=("dense",),
    description="Daxberger et al.'s Wasserstein rule: the k largest diag(Ω⁻¹) (dense GGN).",
)
def _marginal(problem: SubnetProblem, k: int, *, rng: Any = None) -> np.ndarray:
    if not isinstance(problem.precision, GGN):
        raise TypeError("largest_marginal_variance needs a dense GGN (diag(Ω⁻¹) by Woodbury)")
    return largest_marginal_variance(problem.precision, k)


@selection_method(
    "neural_linear",
    nested=False,
    sized=False,
    needs=("layers",),
    description="All parameters of the last layer (App. B of Raha et al.).",
)
def _neural_linear(problem: SubnetProblem, k: int, *, rng: Any = None) -> np.ndarray:
    return neural_linear(problem.layers())
