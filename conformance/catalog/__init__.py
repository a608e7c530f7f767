"""The shipped conformance cases, one module per capability (auto-discovered by the registry)."""
