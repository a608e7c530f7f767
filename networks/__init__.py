"""Shared network machinery for the papers' experiments on torch models.

It holds the model zoo, MAP-training recipes, data sets, SWAG and the FSP-Laplace pipeline
on a torch model.

Below the papers and above the kernels: it trains and evaluates networks with
:mod:`laplace_lab.numerics`, and the papers' experiments
(``laplace_lab.paper_checks.<paper>.experiments``) build on it. Nothing here is one paper's
experiment.

Modules
-------
models
    MLPs, the Wheel-bandit net, CIFAR-style ResNets, a digits CNN.
training
    MAP training with the papers' recipes, deterministic seeds, the σ0² plug-in.
data
    Data sets from installed packages or synthetic; never downloaded.
swag
    Diagonal SWAG marginal variances (Maddox et al. 2019).
fsp_training, fsp_laplace
    FSP-Laplace on a torch model: MAP training under a function-space prior (Algorithm 1)
    and the linearised predictive (Algorithm 2), with the linearised-Laplace baseline.
"""
