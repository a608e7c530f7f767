"""The shipped studies, one module each; :func:`studies.registry.load_catalog` imports them."""
