"""Claims of Cinquin, Pförtner, Fortuin, Hennig & Bamler, *FSP-Laplace: Function-Space
Priors for the Laplace Approximation in Bayesian Deep Learning*, NeurIPS 2024,
arXiv:2407.13711.

Every public module of this package registers claims of the paper ``fsp-laplace``.
"""
