"""Topic catalog and partition logs under ``log.dirs``.

Layout (Kafka's): one directory ``<topic>-<partition>`` per partition holding segment files and
a ``partition.metadata`` file with the topic id. The catalog (partition counts, config
overrides, internal flag, producer id block) is ``kafkette-topics.json``, replaced atomically.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # Windows: no advisory locks
    fcntl = None  # type: ignore[assignment]  # absent on Windows; callers check for None

from . import cleaner
from .errors import KafkaStorageError, describe_os_error
from .log import PartitionLog
from .recovery import (
    CLEAN_SHUTDOWN,
    LOG_START_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    offset_checkpoint_text,
    read_offset_checkpoint,
    sync_dir,
    write_durably,
)
from .topic_config import LogConfig, validate_topic_configs
from .writer import DiskWriter

log = logging.getLogger("kafkette.storage")

CATALOG = "kafkette-topics.json"
PRODUCER_ID_BLOCK = 1000


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    partitions: int
    configs: Mapping[str, str] = field(default_factory=dict)
    internal: bool = False


class TopicExistsError(Exception):
    pass


class UnknownTopicError(KeyError):
    pass


class LogDirError(Exception):
    """``log.dirs`` cannot be used: locked by another broker, not a directory, unreadable."""


LOCK_FILE = ".lock"


def _lock_dir(directory: Path) -> int:
    """Kafka's per-log-dir ``.lock``: an exclusive flock held while the broker runs."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise LogDirError(f"log.dirs {directory} is not a directory") from None
    except OSError as exc:
        raise LogDirError(f"log.dirs {directory} cannot be created: {exc.strerror}") from None
    if not directory.is_dir():
        raise LogDirError(f"log.dirs {directory} is not a directory")
    try:
        fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise LogDirError(f"log.dirs {directory}: cannot open {LOCK_FILE}: {exc.strerror}") from None
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise LogDirError(
                f"Failed to acquire lock on file {LOCK_FILE} in {directory}. A Kafka instance "
                "in another process or thread is using this directory.") from None
    return fd


def kafka_uuid(value: uuid.UUID) -> str:
    """Kafka's Uuid.toString(): URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


class LogManager:
    def __init__(self, config: Mapping[str, str], *, now_ms: Callable[[], int] | None = None) -> None:
        self._config = config
        self._now_ms = now_ms or (lambda: int(time.time() * 1000))
        self._topics: dict[str, TopicInfo] = {}
        self._by_id: dict[uuid.UUID, TopicInfo] = {}
        self._logs: dict[tuple[str, int], PartitionLog] = {}
        self._creating: dict[str, asyncio.Future] = {}
        self._writer = DiskWriter()
        self._tasks: list[asyncio.Task] = []
        self._catalog_lock = asyncio.Lock()
        self._pid_lock = asyncio.Lock()
        self._next_producer_id = 0
        self._producer_id_block_end = 0
        self._started = False
        self._lock_fd: int | None = None
        raw_dirs = config.get("log.dirs", "/tmp/kafkette-logs")
        self.directory = Path(raw_dirs.split(",")[0].strip())

    # Lifecycle ------------------------------------------------------------------------------------
    async def start(self) -> None:
        """Lock ``log.dirs`` and load it; raises LogDirError naming the path on failure."""
        self._lock_fd = await asyncio.to_thread(_lock_dir, self.directory)
        self._writer.start()
        try:
            await asyncio.to_thread(self._load)
        except BaseException as exc:
            await self._writer.stop()
            self._unlock()
            if isinstance(exc, json.JSONDecodeError):
                raise LogDirError(f"{self.directory / CATALOG} is corrupt: {exc}") from exc
            if isinstance(exc, (KeyError, ValueError, TypeError)):
                raise LogDirError(f"log.dirs {self.directory}: cannot load {CATALOG} or the "
                                  f"partition logs: {type(exc).__name__}: {exc}") from exc
            if isinstance(exc, OSError):
                raise LogDirError(f"log.dirs {self.directory}: {exc}") from exc
            raise
        self._started = True
        loop_tasks = [self._periodic(self.run_retention, "log.retention.check.interval.ms", 300000),
                      self._periodic(self.run_compaction, "log.cleaner.backoff.ms", 15000),
                      self._periodic(self.checkpoint_recovery_points,
                                     "log.flush.offset.checkpoint.interval.ms", 60000)]
        self._tasks = [asyncio.ensure_future(t) for t in loop_tasks]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks = []
        clean = True
        for plog in list(self._logs.values()):
            try:
                clean = await plog.close() and clean
            except Exception:
                clean = False
                log.exception("closing %r failed", plog)
        if clean and self._started:
            try:  # every log is fsynced up to its end: Kafka's clean shutdown
                await self._writer.call(self._write_clean_shutdown)
            except OSError as exc:
                log.error("writing the clean shutdown marker failed: %s", exc)
        self._logs.clear()
        await self._writer.stop()
        self._started = False
        self._unlock()

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the flock
            self._lock_fd = None

    def _load(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        for stale in self.directory.glob("*-delete"):
            shutil.rmtree(stale, ignore_errors=True)
        path = self.directory / CATALOG
        data: dict[str, Any] = {}
        if path.exists():
            data = json.loads(path.read_text())
        marker = self.directory / CLEAN_SHUTDOWN
        clean_shutdown = marker.exists()
        recovery_points = read_offset_checkpoint(self.directory / RECOVERY_POINT_CHECKPOINT)
        self._producer_id_block_end = int(data.get("producer_id_block_end", 0))
        self._next_producer_id = self._producer_id_block_end
        for entry in data.get("topics", []):
            info = TopicInfo(entry["name"], uuid.UUID(entry["topic_id"]), int(entry["partitions"]),
                             dict(entry.get("configs", {})), bool(entry.get("internal", False)))
            self._topics[info.name] = info
            self._by_id[info.topic_id] = info
            cfg = self.log_config(info.name)
            for p in range(info.partitions):
                plog = self._new_log(info.name, p, cfg)
                plog.recover(clean_shutdown=clean_shutdown,
                             recovery_point=recovery_points.get((info.name, p), 0))
                self._logs[(info.name, p)] = plog
        if clean_shutdown:  # from now on a crash must be recovered from
            marker.unlink()
            sync_dir(self.directory)
        for (topic, partition), offset in read_offset_checkpoint(
                self.directory / LOG_START_CHECKPOINT).items():
            known = self._logs.get((topic, partition))
            if known is not None:
                known.restore_log_start(offset)
        # Producer ids seen in the logs must never be handed out again.
        seen = [pid for plog in self._logs.values() for pid in plog.producers.entries]
        if seen and max(seen) >= self._next_producer_id:
            self._next_producer_id = self._producer_id_block_end = max(seen) + 1
        if self._topics:
            log.info("loaded %d topic(s), %d partition(s) from %s", len(self._topics),
                     len(self._logs), self.directory)

    def _new_log(self, topic: str, partition: int, cfg: LogConfig) -> PartitionLog:
        return PartitionLog(topic, partition, self.directory / f"{topic}-{partition}", cfg,
                            self._writer, self._now_ms)

    async def _periodic(self, fn: Callable[[], Any], key: str, default: int) -> None:
        interval = int(self._config.get(key, str(default))) / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                await fn()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("log maintenance (%s) failed", fn.__name__)

    async def run_retention(self) -> int:
        """Delete segments past retention.ms / retention.bytes; returns how many."""
        now = self._now_ms()
        return sum(cleaner.apply_retention(plog, now) for plog in list(self._logs.values()))

    async def run_compaction(self) -> int:
        """Compact every cleanup.policy=compact log once; returns how many were rewritten."""
        now = self._now_ms()
        done = 0
        for plog in list(self._logs.values()):
            if plog.config.compact and await cleaner.compact(plog, self._writer, now):
                done += 1
        return done

    # Catalog ----------------------------------------------------------------------------------------
    def topics(self) -> list[TopicInfo]:
        return list(self._topics.values())

    def topic(self, name: str) -> TopicInfo | None:
        return self._topics.get(name)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        return self._by_id.get(topic_id)

    def log_config(self, name: str) -> LogConfig:
        info = self._topics[name]
        return LogConfig.build(info.configs, self._config)

    def partition(self, topic: str, partition: int) -> PartitionLog:
        plog = self._logs.get((topic, partition))
        if plog is None:
            raise UnknownTopicError(f"{topic}-{partition}")
        return plog

    def get_partition(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    async def create_topic(self, name: str, partitions: int,
                           configs: Mapping[str, str] | None = None,
                           internal: bool = False) -> TopicInfo:
        """Create a topic; raises TopicExistsError, or InvalidConfigError for bad configs."""
        while (pending := self._creating.get(name)) is not None:
            await asyncio.shield(pending)  # being created right now: decide once it exists
        if name in self._topics:
            raise TopicExistsError(name)
        if partitions < 1:
            raise ValueError("partitions must be at least 1")
        overrides = validate_topic_configs(dict(configs or {}))
        done = asyncio.get_running_loop().create_future()
        self._creating[name] = done
        try:
            info = TopicInfo(name, uuid.uuid4(), partitions, overrides, internal)
            cfg = LogConfig.build(overrides, self._config)
            logs = [self._new_log(name, p, cfg) for p in range(partitions)]
            try:
                await self._writer.call(lambda: self._init_dirs(info, logs))
                self._topics[name] = info
                self._by_id[info.topic_id] = info
                for p, plog in enumerate(logs):
                    self._logs[(name, p)] = plog
                await self._save_catalog()
            except OSError as exc:
                # Not in the catalog means gone after a restart: nothing may be appended to it.
                await self._forget_topic(info, logs)
                raise KafkaStorageError(
                    f"creating topic {name} failed: {describe_os_error(exc)}") from exc
        finally:
            del self._creating[name]
            done.set_result(None)
        log.info("created topic %s with %d partition(s)%s", name, partitions,
                 f" and configs {overrides}" if overrides else "")
        return info

    async def _forget_topic(self, info: TopicInfo, logs: list[PartitionLog]) -> None:
        """Undo a topic creation that could not be written down."""
        if self._topics.get(info.name) is info:
            del self._topics[info.name]
            self._by_id.pop(info.topic_id, None)
        for plog in logs:
            self._logs.pop((info.name, plog.partition), None)
            with contextlib.suppress(Exception):
                await plog.delete()

    @staticmethod
    def _init_dirs(info: TopicInfo, logs: list[PartitionLog]) -> None:
        for plog in logs:
            if plog.directory.exists():  # leftovers of an earlier topic with this name
                shutil.rmtree(plog.directory)
            plog.recover()
            write_durably(plog.directory / "partition.metadata",
                          f"version: 0\ntopic_id: {kafka_uuid(info.topic_id)}\n")

    async def create_partitions(self, name: str, total: int) -> TopicInfo:
        info = self._topics.get(name)
        if info is None:
            raise UnknownTopicError(name)
        if total <= info.partitions:
            raise ValueError(f"topic {name} already has {info.partitions} partitions")
        cfg = self.log_config(name)
        logs = [self._new_log(name, p, cfg) for p in range(info.partitions, total)]
        await self._writer.call(lambda: self._init_dirs(info, logs))
        new_info = replace(info, partitions=total)
        self._topics[name] = new_info
        self._by_id[info.topic_id] = new_info
        for plog in logs:
            self._logs[(name, plog.partition)] = plog
        await self._save_catalog()
        return new_info

    async def alter_topic_configs(self, name: str, configs: Mapping[str, str]) -> TopicInfo:
        """Replace a topic's config overrides (validated) and apply them to its logs."""
        info = self._topics.get(name)
        if info is None:
            raise UnknownTopicError(name)
        overrides = validate_topic_configs(dict(configs))
        new_info = replace(info, configs=overrides)
        self._topics[name] = new_info
        self._by_id[info.topic_id] = new_info
        cfg = self.log_config(name)
        for p in range(info.partitions):
            self._logs[(name, p)].config = cfg
        await self._save_catalog()
        return new_info

    def reapply_broker_config(self) -> None:
        """Rebuild every partition's settings from the broker config, which changed (dynamic
        broker configs supply the defaults of topic configs)."""
        for (name, _partition), plog in self._logs.items():
            plog.config = self.log_config(name)

    async def delete_topic(self, name: str) -> None:
        info = self._topics.pop(name, None)
        if info is None:
            return
        self._by_id.pop(info.topic_id, None)
        logs = [self._logs.pop((name, p)) for p in range(info.partitions) if (name, p) in self._logs]
        await self._save_catalog()
        await self._save_log_starts()  # no checkpointed log start may outlive its topic
        for plog in logs:
            await plog.delete()
        log.info("deleted topic %s", name)

    async def _save_catalog(self) -> None:
        data = {
            "version": 1,
            "producer_id_block_end": self._producer_id_block_end,
            "topics": [
                {"name": t.name, "topic_id": str(t.topic_id), "partitions": t.partitions,
                 "configs": dict(t.configs), "internal": t.internal}
                for t in self._topics.values()
            ],
        }
        text = json.dumps(data, indent=1, sort_keys=True)
        path = self.directory / CATALOG
        async with self._catalog_lock:
            await self._writer.call(lambda: write_durably(path, text, sync_directory=True))

    async def delete_records(self, topic: str, partition: int, offset: int) -> int:
        """Advance a partition's log start offset (-1 = high watermark); the new low watermark.
        Raises UnknownTopicError or storage.errors.OffsetOutOfRangeError."""
        plog = self.partition(topic, partition)
        if offset == -1:
            offset = plog.log_end_offset
        if plog.advance_log_start(offset):
            await self._save_log_starts()
        return plog.log_start_offset

    async def _save_log_starts(self) -> None:
        text = offset_checkpoint_text(
            (t, p, plog.log_start_offset) for (t, p), plog in self._logs.items()
            if plog.segments and plog.log_start_offset > plog.segments[0].base_offset)
        path = self.directory / LOG_START_CHECKPOINT
        async with self._catalog_lock:
            await self._writer.call(lambda: write_durably(path, text))

    async def checkpoint_recovery_points(self) -> None:
        """Kafka's recovery-point-offset-checkpoint: below these offsets every log is fsynced,
        so recovery after a crash validates only what lies above them."""
        text = offset_checkpoint_text(
            (t, p, plog.recovery_point) for (t, p), plog in self._logs.items())
        path = self.directory / RECOVERY_POINT_CHECKPOINT
        async with self._catalog_lock:
            await self._writer.call(lambda: write_durably(path, text))

    def _write_clean_shutdown(self) -> None:
        """Writer thread, after every log was closed (fsynced): their ends are recovery points."""
        write_durably(self.directory / RECOVERY_POINT_CHECKPOINT, offset_checkpoint_text(
            (t, p, plog.log_end_offset) for (t, p), plog in self._logs.items()))
        write_durably(self.directory / CLEAN_SHUTDOWN, "", sync_directory=True)

    # Producer ids ------------------------------------------------------------------------------------
    async def allocate_producer_id(self) -> int:
        """A producer id never handed out before, also across restarts (blocks are persisted)."""
        async with self._pid_lock:
            if self._next_producer_id >= self._producer_id_block_end:
                self._producer_id_block_end = self._next_producer_id + PRODUCER_ID_BLOCK
                await self._save_catalog()
            pid = self._next_producer_id
            self._next_producer_id += 1
            return pid
