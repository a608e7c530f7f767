"""The worked conjectures of the documentation: each block runs, and its shrunk example
really refutes.

The README's "Property-testing your own conjecture" ("IPV is submodular") and the second
conjecture of docs/property-testing.md are executed as written; the counterexamples they
return are then checked with dense NumPy arithmetic written here, independent of the code the
blocks call.
"""

from __future__ import annotations

import numpy as np

from tests.readme import python_blocks, run_block

#: (document, heading) of each conjecture's section; one ```python block each.
SECTIONS = (
    ("README.md", "### Property-testing your own conjecture"),
    ("docs/property-testing.md", "## A second conjecture: Greedy-Laplace against Subnet-Diagonal"),
)


def _conjecture(i: int) -> dict:
    document, heading = SECTIONS[i]
    (block,) = python_blocks(heading, document)
    return run_block(block, document)


def _dense_ipv(Lam: np.ndarray, S: list[int], n: float) -> float:
    """(1/n) tr((Λ_SS + I/n)⁻¹ Λ_SS): eq. (8) of Raha et al. with σ0² = 1, V = I."""
    if not S:
        return 0.0
    A = Lam[np.ix_(S, S)]
    return float(np.trace(np.linalg.solve(A + np.eye(len(S)) / n, A)) / n)


def test_the_docs_have_the_two_conjectures():
    assert [len(python_blocks(heading, doc)) for doc, heading in SECTIONS] == [1, 1]


def test_ipv_is_not_submodular():
    ns = _conjecture(0)
    Lam, S, T = ns["Lam"], list(ns["S"]), list(ns["T"])
    assert Lam.shape == (3, 3) and np.array_equal(Lam, Lam.T)
    assert np.array_equal(Lam, np.round(Lam)) and np.linalg.eigvalsh(Lam)[0] >= -1e-12
    assert set(S) <= set(T) and 2 not in T
    gain_S = _dense_ipv(Lam, [*S, 2], 100) - _dense_ipv(Lam, S, 100)
    gain_T = _dense_ipv(Lam, [*T, 2], 100) - _dense_ipv(Lam, T, 100)
    # a violation of diminishing returns by far more than roundoff (gains are ≈ 1e-5)
    assert gain_S < gain_T - 0.1 * abs(gain_T)


def _literal_greedy(Omega: np.ndarray, k: int) -> list[int]:
    """Alg. 2 of Raha et al. with every index a candidate: pivot on the largest diagonal,
    replace the matrix by its Schur complement."""
    remaining, W, out = list(range(len(Omega))), Omega.copy(), []
    for _ in range(k):
        i = int(np.argmax(np.diag(W)))
        out.append(remaining.pop(i))
        keep = np.arange(len(W)) != i
        W = W[np.ix_(keep, keep)] - np.outer(W[keep, i], W[keep, i]) / W[i, i]
    return out


def test_greedy_laplace_can_lose_to_subnet_diagonal_without_ties():
    ns = _conjecture(1)
    J = ns["J"]
    assert J.shape[1] == 3 and np.array_equal(J, np.round(J))
    Omega = J.T @ J + np.eye(3)
    assert np.unique(np.diag(Omega)).size == 3  # no ties: beyond tie-breaking
    greedy = _literal_greedy(Omega, 2)  # m = min(2k, p) = p candidates
    diagonal = list(np.argsort(np.diag(Omega), kind="stable")[:2])
    Lam, n = J.T @ J / len(J), len(J)
    assert _dense_ipv(Lam, greedy, n) < _dense_ipv(Lam, diagonal, n) - 1e-3
