"""What the running classic-group op has to write: the GroupMetadata records it produced and
the hooks to run once they are durable. The group manager and its join phase both add to it;
the op's last step turns it into the op's ``Result`` (``replay=False``: classic ops change memory
themselves, as Kafka does for classic groups)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...runtime.coordinator_log import RawRecord
from ...runtime.result import Result


class PendingWrites:
    __slots__ = ("records", "hooks")

    def __init__(self) -> None:
        self.records: list[RawRecord] = []
        self.hooks: list[Callable[[], None]] = []

    def add(self, record: RawRecord, on_durable: Callable[[], None] | None = None) -> None:
        self.records.append(record)
        if on_durable is not None:
            self.hooks.append(on_durable)

    def clear(self) -> None:
        self.records, self.hooks = [], []

    def result(self, response: Any) -> Result:
        """The running op's records (GroupMetadata, not replayed) with ``response``; empties
        the buffer for the next op."""
        records, hooks = self.records, self.hooks
        if not records and not hooks:
            return Result((), response)
        self.records, self.hooks = [], []
        if not hooks:
            on_durable = None
        elif len(hooks) == 1:
            on_durable = hooks[0]
        else:
            def on_durable() -> None:
                for hook in hooks:
                    hook()
        return Result(records, response, replay=False, on_durable=on_durable)
