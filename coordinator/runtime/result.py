"""What a coordinator write operation returns (Kafka's CoordinatorResult)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .coordinator_log import RawRecord


class Result:
    """Records to append as one batch and the response to give once they are durable.

    ``replay``: the runtime applies the records to the shard before appending them (False when
    the op already changed memory itself, as Kafka does for classic group metadata).
    ``on_durable``: called (no arguments) once the records are durable (Kafka's append future);
    a failed append reloads the shard instead, so there is nothing to undo.
    """

    __slots__ = ("records", "response", "replay", "on_durable")

    def __init__(self, records: Sequence[RawRecord] = (), response: Any = None,
                 replay: bool = True, on_durable: Callable[[], None] | None = None) -> None:
        self.records = records
        self.response = response
        self.replay = replay
        self.on_durable = on_durable

    def __repr__(self) -> str:
        return f"Result({len(self.records)} records, response={self.response!r}, replay={self.replay})"
