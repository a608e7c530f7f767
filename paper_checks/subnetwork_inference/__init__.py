"""Claims of Daxberger, Nalisnick, Allingham, Antorán & Hernández-Lobato, *Bayesian Deep
Learning via Subnetwork Inference*, ICML 2021, arXiv:2010.14689.

Every public module of this package registers claims of the paper ``subnetwork-inference``.
"""

CLAIM_MODULES = ("claims",)
