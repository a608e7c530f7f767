"""Claims of Raha, Khare & Patra, *Optimality of Sub-network Laplace Approximations: New
Results and Methods*, arXiv:2605.09075 (2026): Theorems 1–3, Gradient- and Greedy-Laplace
(Algorithms 1–2), Experiment 1 on networks and the UCI/CIFAR set-ups, the Wheel bandit, the
parameter counts and the cost statements.

Every public module of this package registers claims of the paper
``subnetwork-laplace-optimality``.
"""

#: The theorems and App. A.1 first in the report, then the other modules alphabetically.
CLAIM_MODULES = ("theorems", "ipv_empirical")
