"""The SymPy derivations behind Theorem 1 and eq. (18) hold exactly."""

from __future__ import annotations

import sympy as sp

from laplace_lab.theory.symbolic import (
    cross_term_square,
    partitioned_inverse_residual,
    trace_form_residual,
)


def test_trace_form_from_linearity_of_expectation():
    assert trace_form_residual(3) == 0


def test_partitioned_inverse_identity_of_theorem_1():
    assert partitioned_inverse_residual(1, 1) == 0
    assert partitioned_inverse_residual(2, 1) == 0


def test_cross_term_is_a_square():
    expr, factored = cross_term_square()
    a, d = sorted(expr.free_symbols, key=str)
    assert sp.simplify(expr - d**2 / (a * (a + d) ** 2)) == 0
    assert factored.is_nonnegative


def test_residual_detects_a_wrong_identity():
    # A sanity check that the residual machinery can fail: dropping the Schur term.
    a, b, c, d, e = sp.symbols("a b c d e", positive=True)
    full = sp.Matrix([[a + d, b], [b, c + e]]).inv() * sp.Matrix([[a, b], [b, c]])
    assert sp.simplify(full.trace() - a / (a + d)) != 0
