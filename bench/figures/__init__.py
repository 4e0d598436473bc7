"""One module per figure; ``all_figures()`` lists them in the order ``python -m bench all`` runs.

The scaling figures (bench.figures.scaling) are opt-in: ``--scaling`` adds them to the default
figures, ``--only scaling`` runs only them; their sizes come from ``--scaling-*``.
"""

from __future__ import annotations

import importlib

MODULES = ("startup", "groups", "kip848", "cghb", "commit", "load", "durable", "scrape",
           "throughput", "replay", "memory", "transactions", "share")


def all_figures(scaling: dict | None = None) -> list:
    """Default figures, then the scaling ones (``Figure.scaling``), built with ``scaling``'s
    sizes (keyword arguments of ``bench.figures.scaling.figures``)."""
    figures = []
    for name in MODULES:
        module = importlib.import_module(f"bench.figures.{name}")
        figures.extend(module.FIGURES)
    from bench.figures.scaling import figures as scaling_figures

    figures.extend(scaling_figures(**(scaling or {})))
    return figures
