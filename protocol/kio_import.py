"""Importing kio's types with hypothesis hidden: an explicit step of the broker's start-up.

kio's phantom types import hypothesis when it is installed, only to register test strategies;
that costs about 170 ms of start-up. ``import_kio_without_hypothesis`` imports kio's primitive
types (which every kio schema imports) with hypothesis hidden, so later kio imports find them
loaded. It does nothing when kio's types or hypothesis are already loaded.

Hiding is interpreter-wide for the duration of the import: the broker calls this where it
boots (broker/cli/main.py, in the thread that loads the broker), before anything else imports kio.
"""

from __future__ import annotations

import importlib
import sys

KIO_TYPES = "kio.static.primitive"


def import_kio_without_hypothesis() -> None:
    if KIO_TYPES in sys.modules or "hypothesis" in sys.modules:
        return
    sys.modules["hypothesis"] = None  # type: ignore[assignment]  # None: "import hypothesis" fails
    try:
        importlib.import_module(KIO_TYPES)
    finally:
        del sys.modules["hypothesis"]
