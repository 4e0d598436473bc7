"""Access to the group coordinator, which loads in the background after the broker starts."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..offsets_log import consumer_group_config, start_coordinator

if TYPE_CHECKING:
    from kafkette.coordinator.service import GroupCoordinator
    from kafkette.storage.topics import LogManager


class GroupService:
    """Holds the coordinator once it exists; ``coordinator`` is None until it has loaded."""

    def __init__(self, logs: LogManager, config: Any, clock: Any,
                 advertised: Callable[[], tuple[str, int]]) -> None:
        self._logs = logs
        self._config = config
        self._clock = clock
        self._advertised = advertised
        self.coordinator: GroupCoordinator | None = None
        consumer_group_config(config)  # a bad group.consumer.* value stops the broker at start

    async def start(self) -> None:
        """Create ``__consumer_offsets`` if needed and load the coordinator from it."""
        self.coordinator = await start_coordinator(self._logs, self._config, self._clock,
                                             self._advertised)

    def on_topics_changed(self) -> None:
        """A topic was created, deleted or grew (the topic service calls this)."""
        if self.coordinator is not None:
            self.coordinator.on_topics_changed()

    async def stop(self) -> None:
        coord, self.coordinator = self.coordinator, None
        if coord is not None:
            await coord.stop()
