"""Access to the group coordinator, which loads in the background after the broker starts.

The coordinators are imported when they start, not with this module: the broker listens (and
answers ApiVersions and Metadata) before it has loaded them."""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafkette.coordinator.group.group_service import GroupCoordinator
    from kafkette.coordinator.transaction.service import TransactionCoordinator
    from kafkette.storage.topics import LogManager

log = logging.getLogger("kafkette.transactions")

# What starting the coordinators imports (most of coordinator/): imported in a worker thread, so
# the event loop keeps answering the requests that need no coordinator meanwhile. The transaction
# coordinator's modules load only when it starts (its topic exists, or a first transactional use).
_COORDINATOR_MODULES = ("kafkette.broker.services.offsets_log",
                       "kafkette.coordinator.group.group_service")
_TRANSACTION_MODULES = ("kafkette.broker.services.transactions",)


def _import_modules(names: tuple[str, ...]) -> None:
    for name in names:
        importlib.import_module(name)


class GroupService:
    """Holds the coordinator once it exists; ``coordinator`` is None until it has loaded."""

    def __init__(self, logs: LogManager, config: Any, clock: Any,
                 group_overrides: Mapping[str, tuple[int, int]] | None = None,
                 share_overrides: Mapping[str, tuple[int, int]] | None = None) -> None:
        self._logs = logs
        self._config = config
        self._clock = clock
        # groups' own session timeout and heartbeat interval (GROUP configs), read live
        self._group_overrides = group_overrides
        self._share_overrides = share_overrides
        # told (group id, member id) of every share member that leaves or is fenced; handed to
        # the coordinator when it starts (the same list: callbacks added later reach it too)
        self._share_member_listeners: list[Callable[[str, str], None]] = []
        self.coordinator: GroupCoordinator | None = None
        from .offsets_log import consumer_group_config

        consumer_group_config(config)  # a bad group.consumer.* value stops the broker at start
        # the transaction coordinator, started after the group coordinator (its markers reach
        # __consumer_offsets through it); None until loaded
        self.transactions: TransactionCoordinator | None = None
        self._txn_start: asyncio.Future | None = None

    async def start(self) -> None:
        """Create ``__consumer_offsets`` if needed and load the coordinator from it."""
        await asyncio.to_thread(_import_modules, _COORDINATOR_MODULES)
        from .offsets_log import TRANSACTION_TOPIC, start_coordinator

        self.coordinator = await start_coordinator(self._logs, self._config, self._clock,
                                                   self._group_overrides, self._share_overrides,
                                                   self._share_member_listeners)
        if self._logs.topic(TRANSACTION_TOPIC) is not None:
            await self._start_transactions()

    def add_share_member_listener(self, callback: Callable[[str, str], None]) -> None:
        """Call ``callback(group_id, member_id)`` whenever a share group member leaves or is
        fenced (once durable), from now on, whether or not the coordinator has started."""
        self._share_member_listeners.append(callback)

    def transaction_coordinator(self) -> TransactionCoordinator | None:
        """The transaction coordinator; None while it loads. As in Kafka, the first use creates
        ``__transaction_state`` (the caller answers COORDINATOR_NOT_AVAILABLE meanwhile)."""
        if self.transactions is None and self._txn_start is None and self.coordinator is not None:
            self._txn_start = asyncio.ensure_future(self._start_transactions())
        return self.transactions

    async def _start_transactions(self) -> None:
        try:
            await asyncio.to_thread(_import_modules, _TRANSACTION_MODULES)  # off the loop
            from .transactions import start_transaction_coordinator

            self.transactions = await start_transaction_coordinator(
                self._logs, self._config, self._clock, lambda: self.coordinator)
        except Exception:
            log.exception("starting the transaction coordinator failed")
            self._txn_start = None

    def on_topics_changed(self) -> None:
        """A topic was created, deleted or grew (the topic service calls this)."""
        if self.coordinator is not None:
            self.coordinator.on_topics_changed()

    async def stop(self) -> None:
        if self._txn_start is not None:
            await asyncio.wait([self._txn_start])
        txn, self.transactions = self.transactions, None
        if txn is not None:
            await txn.stop()
        coord, self.coordinator = self.coordinator, None
        if coord is not None:
            await coord.stop()
