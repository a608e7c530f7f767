"""Paper checks: every checkable claim of the five papers as a check with a verdict.

One folder per paper holds everything of that paper — its experiments (set-ups, training
protocols), registered studies, claims, mutants, errata, recorded results, benchmarks and a
``RESULTS.md``:

- ``subnetwork_laplace_optimality`` — Raha, Khare & Patra, arXiv:2605.09075;
- ``subnetwork_inference`` — Daxberger et al., ICML 2021, arXiv:2010.14689;
- ``self_supervised_laplace`` — Rodemann et al., arXiv:2605.12208;
- ``fsp_laplace`` — Cinquin et al., NeurIPS 2024, arXiv:2407.13711;
- ``surrogate_ntk_lla`` — Ortega et al., arXiv:2601.21835.

The verification machinery (claims, verdicts, contexts, mutants, the experiment cache,
recorded runs, errata and the report) is :mod:`laplace_lab.paper_checks.verification`; it
imports no paper. :mod:`laplace_lab.papers` finds the paper folders and loads what each
registers; adding a paper is adding a folder.
"""
