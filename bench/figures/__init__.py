"""One module per figure; ``all_figures()`` lists them in the order ``python -m bench all`` runs."""

from __future__ import annotations

import importlib

MODULES = ("startup", "groups", "kip848", "cghb", "commit", "load", "scrape", "throughput", "replay",
           "memory", "transactions")


def all_figures() -> list:
    figures = []
    for name in MODULES:
        module = importlib.import_module(f"bench.figures.{name}")
        figures.extend(module.FIGURES)
    return figures
