"""The shipped studies, one module each; :func:`laplace_lab.studies.registry.load_catalog` imports
them."""
