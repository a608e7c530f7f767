"""The ``laplace-lab`` console script: each layer contributes its subcommands."""

from __future__ import annotations

from laplace_lab.paper_checks.cli import main

__all__ = ["main"]
