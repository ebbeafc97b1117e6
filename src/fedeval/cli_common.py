"""What every ``fedeval`` subcommand module shares, kept free of heavy imports.

:mod:`fedeval.cli` (the entry point) imports the subcommand modules
(:mod:`fedeval.cli_monitor`, :mod:`fedeval.flower.simulate`), and they need the
same error type and argument helpers; defining those here keeps the imports
one-way (no ``cli`` ↔ subcommand loop) and ``--help`` fast.
"""

from __future__ import annotations

__all__ = ["CLIError"]


class CLIError(Exception):
    """Bad input reported as one line on stderr with exit status 2."""
