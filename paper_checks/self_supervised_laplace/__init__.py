"""Claims of Rodemann, Marquard, Augustin & Caprio, *Self-Supervised Laplace Approximation
for Bayesian Uncertainty Quantification*, TMLR, arXiv:2605.12208 (SSLA and ASSLA).

Every public module of this package registers claims of the paper ``self-supervised-laplace``.
"""
