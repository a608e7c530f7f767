"""Claims of Ortega, Rodríguez-Santana & Hernández-Lobato, *Scalable Linearized Laplace
Approximation via Surrogate Neural Kernel*, arXiv:2601.21835 (2026).

Every public module of this package registers claims of the paper ``surrogate-ntk-lla``.
"""

#: The JVP estimator first, then the method (kernel, surrogate, cost), then §3's table.
CLAIM_MODULES = ("claims", "kernel", "surrogate", "cost", "table1", "digits")
