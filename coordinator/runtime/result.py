"""What a coordinator write operation returns (Kafka's CoordinatorResult)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .coordinator_log import RawRecord


class Result:
    """Records to append as one batch and the response to give once they are durable.

    ``replay``: the runtime applies the records to the shard before appending them (False when
    the op already changed memory itself, as Kafka does for classic group metadata).
    ``on_durable``: called (no arguments) once the records are durable (Kafka's append future).
    ``undo``: puts memory back as it was before the op (Kafka reverts its snapshot); when every
    op of a failed append has one, the runtime calls them instead of reloading the shard from
    the log. An op without records needs none; one with records and none makes a failed append
    reload the shard.
    """

    __slots__ = ("records", "response", "replay", "on_durable", "undo")

    def __init__(self, records: Sequence[RawRecord] = (), response: Any = None,
                 replay: bool = True, on_durable: Callable[[], None] | None = None,
                 undo: Callable[[], None] | None = None) -> None:
        self.records = records
        self.response = response
        self.replay = replay
        self.on_durable = on_durable
        self.undo = undo

    def __repr__(self) -> str:
        return f"Result({len(self.records)} records, response={self.response!r}, replay={self.replay})"
