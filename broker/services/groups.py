"""Access to the group coordinator, which loads in the background after the broker starts.

The coordinators are imported when they start, not with this module: the broker listens (and
answers ApiVersions and Metadata) before it has loaded them."""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kafkette.storage.errors import KafkaStorageError

if TYPE_CHECKING:
    from kafkette.coordinator.group.group_service import GroupCoordinator
    from kafkette.coordinator.transaction.service import TransactionCoordinator
    from kafkette.storage.topics import LogManager

log = logging.getLogger("kafkette.transactions")
# Starting the group coordinator again after a failure: 200 ms, doubling, at most 30 s apart.
START_RETRY_MS = 200
START_RETRY_MAX_MS = 30_000

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
        """Create ``__consumer_offsets`` if needed and load the coordinator from it; a failure
        (a full disk at the first start, an unreadable log) is logged and retried with backoff
        (on the clock's timers) until it works: group requests answer
        COORDINATOR_NOT_AVAILABLE meanwhile, as while loading."""
        await asyncio.to_thread(_import_modules, _COORDINATOR_MODULES)
        from .offsets_log import TRANSACTION_TOPIC, start_coordinator

        attempts = 0
        while True:
            try:
                self.coordinator = await start_coordinator(
                    self._logs, self._config, self._clock, self._group_overrides,
                    self._share_overrides, self._share_member_listeners)
                break
            except (KafkaStorageError, OSError) as exc:
                delay_ms = min(START_RETRY_MS << min(attempts, 16), START_RETRY_MAX_MS)
                attempts += 1
                log.error("the group coordinator cannot start (attempt %d): %s; retrying in "
                          "%d ms", attempts, exc, delay_ms)
                await self._sleep(delay_ms)
        if attempts:
            log.warning("the group coordinator started after %d failed attempt(s)", attempts)
        if self._logs.topic(TRANSACTION_TOPIC) is not None:
            await self._start_transactions()

    async def _sleep(self, delay_ms: int) -> None:
        """Wait ``delay_ms`` on the coordinator clock (a test's ManualClock moves it)."""
        woken = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not woken.done():
                woken.set_result(None)

        self._clock.schedule(("group-coordinator-start",), delay_ms, wake)
        try:
            await woken
        finally:
            self._clock.cancel(("group-coordinator-start",))

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
