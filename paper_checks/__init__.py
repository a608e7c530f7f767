"""Paper checks: every checkable claim of the five papers as a check with a verdict.

One package per paper (``subnetwork_laplace_optimality``, ``subnetwork_inference``,
``self_supervised_laplace``, ``fsp_laplace``, ``surrogate_ntk_lla``); their modules register
claims with :func:`laplace_lab.paper_checks.registry.claim` and declare their mutants
(:mod:`.mutants`). :mod:`.report` writes the verification report (the page itself:
:mod:`.report_html`; the run's metadata: :mod:`.run_info`) and :mod:`.errata` lists the
errors found in the papers, each linked to the claims it rests on.
"""
