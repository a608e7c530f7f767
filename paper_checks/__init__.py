"""Paper checks: every checkable claim of the five papers as a check with a verdict.

One package per paper (``subnetwork_laplace_optimality``, ``subnetwork_inference``,
``self_supervised_laplace``, ``fsp_laplace``, ``surrogate_ntk_lla``); their modules register
claims with :func:`laplace_lab.paper_checks.registry.claim`. :mod:`.report` writes the
verification report and :mod:`.errata` lists the errors found in the papers.
"""
