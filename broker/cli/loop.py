"""Event loop choice: uvloop where it is installed, the default loop otherwise."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any


def run(main: Coroutine[Any, Any, Any]) -> Any:
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)


def loop_name() -> str:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"
