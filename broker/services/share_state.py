"""The share-state coordinator on ``__share_group_state`` (KIP-932) and the broker's one
``Persister``: what share partitions read and write their durable state through.

As Kafka does, the internal topic is created on first use (cleanup.policy=delete,
retention.ms=-1: ShareSnapshot and ShareUpdate records of one share-partition have different
keys, so compaction would drop updates), and the coordinator is loaded from it whenever it
exists at start, so state written before a crash is there after it. Every Persister call waits
for the coordinator, then answers once its records are durable.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from typing import TYPE_CHECKING, Any

from kafkette.coordinator.runtime.error_codes import COORDINATOR_NOT_AVAILABLE
from kafkette.coordinator.share.persister import SharePartitionKey, ShareState, StateSummary

if TYPE_CHECKING:
    from kafkette.coordinator.share.service import ShareCoordinatorService
    from kafkette.storage.topics import LogManager

log = logging.getLogger("kafkette.share")

SHARE_STATE_TOPIC = "__share_group_state"
PRUNE_INTERVAL = "share.coordinator.state.topic.prune.interval.ms"
_PRUNE_TIMER = ("share-state-prune",)
# imported when the coordinator starts (in a worker thread, off the loop)
_SHARE_STATE_MODULES = ("kafkette.broker.services.offsets_log",
                        "kafkette.coordinator.share.service")


def _import_modules() -> None:
    for name in _SHARE_STATE_MODULES:
        importlib.import_module(name)


class ShareStateService:
    """Implements ``kafkette.coordinator.share.persister.Persister`` for the whole broker;
    ``coordinator`` is None until it has loaded."""

    def __init__(self, logs: LogManager, config: Any, clock: Any) -> None:
        self._logs = logs
        self._config = config
        self._clock = clock
        self.coordinator: ShareCoordinatorService | None = None
        self._start: asyncio.Future | None = None
        self._prune: asyncio.Future | None = None
        # partition -> its log end offset right after its last prune (nothing new since: skip)
        self._pruned_end: dict[int, int] = {}
        # one prune at a time (the timer's and a caller's): a second waits, then finds it done
        self._pruning = asyncio.Lock()

    async def start_if_exists(self) -> None:
        """At broker start: load the coordinator when ``__share_group_state`` exists."""
        if self._logs.topic(SHARE_STATE_TOPIC) is not None:
            await self.ready()

    def coordinator_now(self) -> ShareCoordinatorService | None:
        """The coordinator, or None while it loads; the first call starts it (creating the
        topic), as FindCoordinator key type 2 does in Kafka."""
        start = self._start
        if self.coordinator is None and (start is None or (
                start.done() and (start.cancelled() or start.exception() is not None))):
            self._start = asyncio.ensure_future(self._load())  # first use, or a retry
        return self.coordinator

    async def ready(self) -> ShareCoordinatorService | None:
        """The coordinator once it has loaded (None if it cannot start)."""
        if self.coordinator is not None:
            return self.coordinator
        if self._start is None:
            self._start = asyncio.ensure_future(self._load())
        start = self._start
        await asyncio.wait([start])
        if self._start is start and (start.cancelled() or start.exception() is not None):
            self._start = None  # the next call tries again
        return self.coordinator

    async def _load(self) -> None:
        try:
            await asyncio.to_thread(_import_modules)
            from kafkette.coordinator.share.service import ShareCoordinatorService

            from .offsets_log import PartitionOffsetsLog

            cfg = self._config
            info = self._logs.topic(SHARE_STATE_TOPIC)
            if info is None:
                info = await self._logs.create_topic(
                    SHARE_STATE_TOPIC,
                    cfg.get_int("share.coordinator.state.topic.num.partitions"),
                    {"cleanup.policy": "delete", "retention.ms": "-1",
                     "segment.bytes": cfg.get_str("share.coordinator.state.topic.segment.bytes"),
                     "compression.type": "producer"},
                    internal=True)
            logs = self._logs
            coord = ShareCoordinatorService(
                cfg.node_id, info.partitions, self._clock,
                lambda p: PartitionOffsetsLog(logs.partition(SHARE_STATE_TOPIC, p)),
                updates_per_snapshot=cfg.get_int(
                    "share.coordinator.snapshot.update.records.per.snapshot"),
                linger_ms=cfg.get_int("share.coordinator.append.linger.ms"),
                write_timeout_ms=cfg.get_int("share.coordinator.write.timeout.ms"))
            await coord.start()
            self.coordinator = coord
            self._arm_prune()
        except Exception:
            log.exception("starting the share-state coordinator failed")
            raise

    # Pruning ---------------------------------------------------------------------------------
    def _arm_prune(self) -> None:
        interval = self._config.get_int(PRUNE_INTERVAL)
        if interval > 0:
            self._clock.schedule(_PRUNE_TIMER, interval, self._prune_now)

    def _prune_now(self) -> None:
        if self._prune is None or self._prune.done():
            self._prune = asyncio.ensure_future(self.prune())
        self._arm_prune()

    async def prune(self) -> int:
        """Keep ``__share_group_state`` from growing without end (Kafka's cold-partition
        snapshots and prune): a partition with records written since its last prune gets a
        fresh snapshot of every share-partition it holds, then its log start moves to where
        its log ended before those snapshots. Returns how many records were pruned."""
        coord = self.coordinator
        if coord is None:
            return 0
        pruned = 0
        async with self._pruning:
            for p in range(coord.num_partitions):
                plog = self._logs.get_partition(SHARE_STATE_TOPIC, p)
                if plog is None:
                    continue
                start, end = plog.log_start_offset, plog.high_watermark
                if end == start or self._pruned_end.get(p) == end:
                    continue
                try:
                    await coord.snapshot_partition(p)  # issued now: every record below end is older
                    new_start = await self._logs.delete_records(SHARE_STATE_TOPIC, p, end)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - loading, or a failed append: next time
                    log.info("pruning __share_group_state-%d skipped: %r", p, exc)
                    continue
                self._pruned_end[p] = plog.high_watermark
                pruned += new_start - start
        if pruned:
            log.debug("pruned %d records of __share_group_state", pruned)
        return pruned

    async def stop(self) -> None:
        self._clock.cancel(_PRUNE_TIMER)
        if self._prune is not None:
            self._prune.cancel()
            await asyncio.wait([self._prune])
        if self._start is not None:
            await asyncio.wait([self._start])
        coord, self.coordinator = self.coordinator, None
        if coord is not None:
            await coord.stop()

    async def group_keys(self, group_id: str) -> list[SharePartitionKey]:
        """The share-partitions of a group that have state (none before the topic exists)."""
        if self._nothing_yet():
            return []
        coord = await self.ready()
        return [] if coord is None else await coord.group_keys(group_id)

    # Persister -------------------------------------------------------------------------------
    async def initialize(self, key: SharePartitionKey, state_epoch: int,
                         start_offset: int) -> int:
        coord = await self.ready()
        if coord is None:
            return COORDINATOR_NOT_AVAILABLE
        return await coord.initialize(key, state_epoch, start_offset)

    def _nothing_yet(self) -> bool:
        """No state can exist: the topic was never created (reads need not create it)."""
        return self.coordinator is None and self._logs.topic(SHARE_STATE_TOPIC) is None

    async def read(self, key: SharePartitionKey,
                   leader_epoch: int) -> tuple[int, ShareState | None]:
        if self._nothing_yet():
            return 0, None
        coord = await self.ready()
        if coord is None:
            return COORDINATOR_NOT_AVAILABLE, None
        return await coord.read(key, leader_epoch)

    async def write(self, key: SharePartitionKey, state: ShareState) -> int:
        coord = await self.ready()
        if coord is None:
            return COORDINATOR_NOT_AVAILABLE
        return await coord.write(key, state)

    async def delete(self, key: SharePartitionKey) -> int:
        if self._nothing_yet():
            return 0
        coord = await self.ready()
        if coord is None:
            return COORDINATOR_NOT_AVAILABLE
        return await coord.delete(key)

    async def read_summary(self, key: SharePartitionKey) -> tuple[int, StateSummary | None]:
        if self._nothing_yet():
            return 0, None
        coord = await self.ready()
        if coord is None:
            return COORDINATOR_NOT_AVAILABLE, None
        return await coord.read_summary(key)
