"""Garbage collector settings of the broker process (``kafkette serve``).

Every request allocates a few container objects (its decoded body, a future, the response) that
are freed by reference counting moments later; but a loop turn holds the requests of every
connection at once, so CPython's default generation-0 threshold (700 net allocations) is crossed
every few dozen requests, and each older-generation collection walks every object the process
holds (kio's schema classes, the loaded groups): about 4 µs per durable OffsetCommit under the
bench's commit load, a tenth of its CPU. Here the young generation is collected only after
``YOUNG_THRESHOLD`` net allocations, and what exists once the broker has started and its group
coordinator has loaded is frozen (``gc.freeze``: kept out of every later collection; such objects
are still freed by reference counting). Only the CLI's broker process is tuned; in-process
brokers (tests, embedding applications) leave their host's collector alone.
"""

from __future__ import annotations

import gc
from typing import Any

YOUNG_THRESHOLD = 10_000


def tune() -> None:
    """Fewer young collections (called before the broker starts)."""
    _young, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)


async def freeze_when_ready(broker: Any) -> None:
    """Once the group coordinator has loaded, freeze what the process holds (a constant-time
    move to the permanent generation: nothing is walked on the loop)."""
    try:
        await broker.wait_ready()
    except Exception:  # noqa: BLE001 - the coordinator reports its own failure
        return
    gc.freeze()
