"""Sub-network mask cases: each rule against its definition on the dense oracle.

A mask is a set of k parameter indices (order ignored). Rules that take the k largest of a
criterion pass when every selected index's criterion is within the tie tolerance of the
k-th largest (:func:`laplace_lab.conformance.tolerance.criterion_tolerance`), so only ties
may be broken differently. Greedy-Laplace is replayed on the oracle's Ω: the literal
Algorithm 2 (``greedy_laplace_reference``), and on a 13-parameter network with every pivot
chosen by enumerating det Ω_{S∪{j}} over all candidates j. Daxberger et al.'s rule is
also checked against the exhaustive minimum of its Wasserstein objective over all C(13, 4)
subsets.

References
----------
.. [1] S. Raha, K. Khare, R. K. Patra, "Optimality of Sub-network Laplace Approximations: New
   Results and Methods", arXiv:2605.09075 (2026), §3 (Algs. 1–2) and App. B.
.. [2] E. Daxberger, E. Nalisnick, J. U. Allingham, J. Antorán, J. M. Hernández-Lobato,
   "Bayesian Deep Learning via Subnetwork Inference", ICML 2021, arXiv:2010.14689, §5
   eqs. (22)–(23).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from laplace_lab.conformance.oracle import DenseOracle
from laplace_lab.conformance.problems import Problem
from laplace_lab.conformance.registry import Check, conformance_case
from laplace_lab.conformance.runner import TargetError, call_expression, call_target
from laplace_lab.conformance.tolerance import criterion_tolerance
from laplace_lab.numerics import greedy_laplace_reference
from laplace_lab.theory.wasserstein import subnetwork_w2

K = 8  # mask size on the 41- and 59-parameter networks
K_TINY = 4  # on the 13-parameter network (C(13, 4) = 715 subsets)


def _last_layer(model: Any) -> np.ndarray:
    """Flat indices of the parameters of the last module that has parameters."""
    sizes = [(name, int(p.numel())) for name, p in model.named_parameters()]
    owner = [name.rsplit(".", 1)[0] for name, _ in sizes]
    last = owner[-1]
    starts = np.cumsum([0] + [n for _, n in sizes])
    return np.concatenate(
        [np.arange(starts[i], starts[i + 1]) for i, o in enumerate(owner) if o == last]
    )


def _mask(target, problem: Problem, method: str, k: int) -> tuple[np.ndarray, str]:
    expr = call_expression("subset_masks", problem, method=method, k=k)
    out = call_target(target, "subset_masks", problem, method=method, k=k)
    if hasattr(out, "detach"):
        out = out.detach().cpu().numpy()
    idx = np.asarray(out)
    if idx.ndim != 1 or (idx.size and not np.issubdtype(idx.dtype, np.integer)):
        raise TargetError(f"a mask must be a 1-D integer array; got {idx.dtype} {idx.shape}", expr)
    if np.unique(idx).size != idx.size or idx.min() < 0 or idx.max() >= problem.p:
        raise TargetError(f"a mask must hold distinct indices in [0, p); got {idx.tolist()}", expr)
    return idx.astype(np.int64), expr


def _criterion(method: str, oracle: DenseOracle) -> np.ndarray:
    if method == "gradient_laplace":
        return oracle.scores
    if method == "subnet_diagonal":
        return -np.diag(oracle.omega)
    if method == "largest_magnitude":
        return np.abs(oracle.theta)
    return oracle.marginal_variances


def _top_k_check(idx: np.ndarray, values: np.ndarray, k: int, tol: float, expr: str) -> Check:
    kth = np.sort(values)[::-1][k - 1]
    short = np.sort(values[idx])[:3].tolist()
    passed = idx.size == k and bool(np.all(values[idx] >= kth - tol))
    oracle_set = np.argsort(-values, kind="stable")[:k]
    summary = (
        f"{idx.size} indices, smallest criterion values {np.round(short, 10).tolist()}; "
        f"k-th largest {kth:.10g}, tie tolerance {tol:.3g}"
    )
    details = {"got": sorted(idx.tolist()), "oracle": sorted(oracle_set.tolist()), "kth": kth}
    body = f"got = {expr}\nprint(sorted(got))  # oracle {sorted(oracle_set.tolist())}"
    return Check(passed, summary, details, body)


def _exact_set_check(idx: np.ndarray, expected: np.ndarray, expr: str, rule: str) -> Check:
    passed = set(idx.tolist()) == set(expected.tolist())
    summary = f"{rule}: got {sorted(idx.tolist())}, oracle {sorted(expected.tolist())}"
    body = f"got = {expr}\nprint(sorted(got))  # oracle {sorted(expected.tolist())}"
    return Check(
        passed, summary, {"got": sorted(idx.tolist()), "oracle": sorted(expected.tolist())}, body
    )


def _greedy_replay(idx: np.ndarray, omega: np.ndarray, scores: np.ndarray, k: int, tol: float):
    """Replay Alg. 2 on Ω allowing near-tied pivots: the first step where no index of the
    mask is an admissible pivot (None if every step admits one)."""
    p = scores.size
    m = min(2 * k, p)
    admissible = np.flatnonzero(scores >= np.sort(scores)[::-1][m - 1] - tol)
    remaining, W = list(admissible), omega[np.ix_(admissible, admissible)].copy()
    chosen = set(idx.tolist())
    for step in range(k):
        d = np.diag(W)
        ok = [i for i in range(len(remaining)) if d[i] >= d.max() - tol and remaining[i] in chosen]
        if not ok:
            return step
        i = max(ok, key=lambda j: d[j])
        remaining.pop(i)
        keep = np.arange(W.shape[0]) != i
        W = W[np.ix_(keep, keep)] - np.outer(W[keep, i], W[keep, i]) / W[i, i]
    return None


def _greedy_check(idx, oracle: DenseOracle, k: int, expr: str, reference: np.ndarray) -> Check:
    tol = criterion_tolerance(np.diag(oracle.omega), **_tie(oracle))
    step = _greedy_replay(idx, oracle.omega, oracle.scores, k, tol) if idx.size == k else 0
    summary = f"got {sorted(idx.tolist())}, oracle {sorted(reference.tolist())}" + (
        "" if step is None else f"; no index of the mask is an admissible pivot at step {step + 1}"
    )
    body = f"got = {expr}\nprint(sorted(got))  # oracle {sorted(reference.tolist())}"
    details = {"got": sorted(idx.tolist()), "oracle": sorted(reference.tolist())}
    return Check(step is None, summary, details, body)


def _tie(oracle: DenseOracle) -> dict[str, Any]:
    return {"dtype": oracle.problem.dtype, "n_rows": oracle.n_rows, "k": oracle.theta.size}


def check_mask(target, problem: Problem, oracle: DenseOracle, method: str, k: int) -> Check:
    """The target's ``method`` mask of size k against its rule on the oracle."""
    idx, expr = _mask(target, problem, method, k)
    if method == "last_k":
        return _exact_set_check(idx, np.arange(problem.p - k, problem.p), expr, "the last k")
    if method == "neural_linear":
        return _exact_set_check(idx, _last_layer(problem.model), expr, "the last layer")
    if method == "greedy_laplace":
        ref = greedy_laplace_reference(oracle.omega, oracle.scores, k)
        return _greedy_check(idx, oracle, k, expr, ref)
    values = _criterion(method, oracle)
    return _top_k_check(idx, values, k, criterion_tolerance(values, **_tie(oracle)), expr)


def _determinant_greedy(omega: np.ndarray, scores: np.ndarray, k: int) -> np.ndarray:
    """Alg. 2 with each pivot the candidate j maximising det Ω_{S∪{j}}, by enumeration."""
    K_ = np.argsort(-scores, kind="stable")[: min(2 * k, scores.size)]
    S: list[int] = []
    for _ in range(k):
        dets = {j: np.linalg.slogdet(omega[np.ix_([*S, j], [*S, j])])[1] for j in K_ if j not in S}
        S.append(max(dets, key=dets.get))
    return np.asarray(S)


def _register() -> None:
    problems = {"": "mlp-regression", "-multiclass": "mlp-multiclass"}
    weighted = (
        "gradient_laplace",
        "greedy_laplace",
        "subnet_diagonal",
        "largest_marginal_variance",
    )
    methods = [
        ("gradient_laplace", "k largest scores (1/N) Σ_n w_n g_i(x_n)²"),
        ("greedy_laplace", "Alg. 2 replayed on Ω (literal greedy_laplace_reference)"),
        ("subnet_diagonal", "k smallest diag(Ω) = largest diagonal-Laplace variances"),
        ("largest_magnitude", "k largest |θ̂_i|"),
        ("largest_marginal_variance", "k largest diag(Ω⁻¹) (Daxberger et al.)"),
        ("last_k", "the last k entries of θ"),
        ("neural_linear", "every parameter of the last layer"),
    ]
    for method, text in methods:
        for suffix, problem in problems.items():
            if suffix and method not in weighted:
                continue

            @conformance_case(
                f"masks/{method}{suffix}",
                capability="subset_masks",
                problem=problem,
                method=method,
                description=text,
            )
            def case(target, problem, oracle, *, seed, _method=method) -> Check:
                return check_mask(target, problem, oracle, _method, K)


_register()


@conformance_case(
    "masks/greedy_laplace-determinants",
    capability="subset_masks",
    problem="tiny-mlp-regression",
    method="greedy_laplace",
    description="every pivot by enumerating det Ω_{S∪{j}} over the candidates (p = 13, k = 4)",
)
def greedy_by_determinants(target, problem, oracle, *, seed) -> Check:
    idx, expr = _mask(target, problem, "greedy_laplace", K_TINY)
    ref = _determinant_greedy(oracle.omega, oracle.scores, K_TINY)
    return _greedy_check(idx, oracle, K_TINY, expr, ref)


@conformance_case(
    "masks/largest_marginal_variance-exhaustive",
    capability="subset_masks",
    problem="tiny-mlp-regression",
    method="largest_marginal_variance",
    description="attains the minimum of the marginal W2 (eq. 22) over all C(13, 4) subsets",
)
def marginal_variance_exhaustive(target, problem, oracle, *, seed) -> Check:
    idx, expr = _mask(target, problem, "largest_marginal_variance", K_TINY)
    w2 = {
        S: subnetwork_w2(oracle.omega, S, kind="marginal")
        for S in itertools.combinations(range(problem.p), K_TINY)
    }
    best = min(w2, key=w2.get)
    got = subnetwork_w2(oracle.omega, idx, kind="marginal") if idx.size == K_TINY else np.inf
    tol = criterion_tolerance(np.array(list(w2.values())), **_tie(oracle))
    passed = bool(got <= w2[best] + tol)
    summary = f"W2 of the mask {got:.12g}, exhaustive minimum {w2[best]:.12g} at {list(best)}"
    body = f"got = {expr}\nprint(sorted(got))  # exhaustive optimum {list(best)}"
    return Check(passed, summary, {"got": sorted(idx.tolist()), "oracle": list(best)}, body)
