"""Topic administration: lookup, auto-creation, create/delete, partitions and configs.

Every refusal is a :class:`ServiceError` carrying Kafka's error code and message.
Internal topics (``__consumer_offsets``) cannot be deleted or grown by clients: the group
coordinator owns them (see ``INTERNAL_TOPIC_REFUSED``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from kafkette.storage.errors import KafkaStorageError
from kafkette.storage.rate_limited_log import RateLimitedLog
from kafkette.storage.recovery import write_durably
from kafkette.storage.topic_config import (
    MIN_SEGMENT_BYTES,
    InvalidConfigError,
    validate_topic_configs,
)
from kafkette.storage.topics import LogManager, TopicExistsError, TopicInfo

from ..cluster.reassignment import Reassignment
from .config_entries import topic_config_entries
from .errors import ServiceError, unknown_partition

if TYPE_CHECKING:
    from ..cluster.nodes import ClusterNodes
    from .mutation_quota import MutationQuota

log = logging.getLogger("kafkette.topics")
failures = RateLimitedLog(log)  # a full disk fails every auto-creation: a line a while

_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")
ZERO_UUID = uuid.UUID(int=0)
# Kafka checks no internal-topic rule for DeleteTopics/CreatePartitions; it relies on ACLs, and
# a cluster that protects __consumer_offsets answers TOPIC_AUTHORIZATION_FAILED. kafkette has no
# authorizer and its coordinator cannot survive losing the topic, so it always answers that.
INTERNAL_TOPIC_REFUSED = ErrorCode.topic_authorization_failed
# The replicas of topics created with several nodes (broker/cluster/nodes.py), in log.dirs.
REPLICAS_FILE = "kafkette-replicas.json"
# Kafka's MAX_PARTITIONS_PER_BATCH (ReplicationControlManager, KAFKA-17870): a CreateTopics or
# CreatePartitions request may ask for at most this many new partitions in all.
MAX_PARTITIONS_PER_REQUEST = 10_000
EXCESSIVE_PARTITIONS = "Excessively large number of partitions per request."


def valid_topic_name(name: str) -> bool:
    return bool(_LEGAL_TOPIC.fullmatch(name)) and name not in (".", "..")


@dataclass(frozen=True, slots=True)
class NewTopic:
    """A topic as CreateTopics would create it (defaults resolved)."""

    name: str
    partitions: int
    replication_factor: int
    configs: dict[str, str]
    topic_id: uuid.UUID = ZERO_UUID
    assignment: list[list[int]] = field(default_factory=list)  # manual replica lists


class TopicService:
    def __init__(self, logs: LogManager, config: Any, nodes: ClusterNodes | None = None) -> None:
        self._logs = logs
        self._config = config
        # Several nodes in one process (broker/cluster/nodes.py): they hold the topics' replicas.
        self._nodes = nodes
        self._create_lock = asyncio.Lock()
        # called after a topic is created, deleted or grows (the group coordinator's hook)
        self.on_change: list[Callable[[], None]] = []

    def _changed(self) -> None:
        for hook in self.on_change:
            hook()

    # Lookup ------------------------------------------------------------------------------------
    def get(self, name: str) -> TopicInfo | None:
        return self._logs.topic(name)

    def get_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        return self._logs.topic_by_id(topic_id)

    def all(self) -> list[TopicInfo]:
        return self._logs.topics()

    def require(self, name: str) -> TopicInfo:
        info = self._logs.topic(name)
        if info is None:
            raise unknown_partition()
        return info

    async def lookup(self, name: str, *, auto_create: bool) -> TopicInfo:
        """The topic, created with ``num.partitions`` when missing and ``auto_create``
        (and ``auto.create.topics.enable``) allow it (Metadata)."""
        info = self._logs.topic(name)
        if info is not None:
            return info
        if not (auto_create and self._config.get_bool("auto.create.topics.enable")):
            raise unknown_partition()
        if not valid_topic_name(name):
            raise ServiceError(ErrorCode.invalid_topic_exception)
        async with self._create_lock:
            existing = self._logs.topic(name)
            if existing is not None:
                return existing
            try:
                created = await self._logs.create_topic(name, self._config.get_int("num.partitions"))
            except TopicExistsError:
                return self.require(name)
            except KafkaStorageError as exc:
                # What Kafka answers while an auto-created topic does not exist yet; the client
                # retries, and a later Metadata creates it once the disk has room.
                failures.warning("auto-create", "auto-creating topic %s failed: %s", name, exc)
                raise unknown_partition() from None
            self._changed()
            return created

    # CreateTopics ------------------------------------------------------------------------------
    def check_new_partition_total(self, topics: Sequence[tuple[int, int]]) -> None:
        """Kafka's validateTotalNumberOfPartitions over (num_partitions, number of manual
        assignments) per topic: over ``MAX_PARTITIONS_PER_REQUEST`` the whole request is refused
        with POLICY_VIOLATION before anything is allocated."""
        total = 0
        default = self._config.get_int("num.partitions")
        for num_partitions, assigned in topics:
            if assigned:
                total += assigned
            elif num_partitions == -1:
                total += default
            elif num_partitions > 0:
                total += num_partitions
        if total > MAX_PARTITIONS_PER_REQUEST:
            raise ServiceError(ErrorCode.policy_violation, EXCESSIVE_PARTITIONS)

    async def create(self, name: str, partitions: int, replication_factor: int,
                     assignments: Sequence[Sequence[int]], configs: Mapping[str, str | None],
                     *, validate_only: bool, quota: MutationQuota | None = None) -> NewTopic:
        """``quota``: the request's controller mutation quota, charged for the partitions of a
        topic that passed every check (refused there with THROTTLING_QUOTA_EXCEEDED)."""
        topic = self._check_new(name, partitions, replication_factor, assignments, configs)
        if quota is not None:
            quota.record(topic.partitions)
        if validate_only:
            return topic
        try:
            info = await self._logs.create_topic(name, topic.partitions, topic.configs)
        except TopicExistsError:
            raise ServiceError(ErrorCode.topic_already_exists,
                               f"Topic '{name}' already exists.") from None
        except KafkaStorageError as exc:
            raise ServiceError(ErrorCode.kafka_storage_error, str(exc)) from None
        if self._nodes is not None:
            self._nodes.set_replication(name, topic.replication_factor, topic.assignment)
            await self._save_replicas()
        self._changed()
        return NewTopic(name, topic.partitions, topic.replication_factor, topic.configs,
                        info.topic_id, topic.assignment)

    # Replicas (several nodes) -------------------------------------------------------------------
    def load_replicas(self) -> None:
        """Put back the stored replicas of the topics that still exist (same topic id)."""
        if self._nodes is None:
            return
        try:
            data = json.loads((self._logs.directory / REPLICAS_FILE).read_text())
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            log.warning("ignoring %s: %s", REPLICAS_FILE, exc)
            return
        for name, entry in data.get("topics", {}).items():
            info = self._logs.topic(name)
            if info is not None and str(info.topic_id) == entry.get("topic_id"):
                self._nodes.restore_replication(name, int(entry["factor"]),
                                                entry.get("assignment", []))
                for partition, placed in entry.get("reassigned", {}).items():
                    if int(partition) < info.partitions:
                        self._nodes.restore_reassigned(name, int(partition), Reassignment(
                            list(placed["replicas"]), list(placed.get("adding", [])),
                            list(placed.get("removing", []))))
        # a reassignment waiting for a node that was stopped: every node is live again
        self._nodes.complete_reassignments()

    async def save_replicas(self) -> None:
        """Store the replicas of every topic, reassigned partitions included (several nodes)."""
        if self._nodes is not None:
            await self._save_replicas()

    async def _save_replicas(self) -> None:
        assert self._nodes is not None
        topics: dict[str, dict[str, Any]] = {}
        for name, (factor, lists) in self._nodes.replication().items():
            info = self._logs.topic(name)
            if info is not None:
                topics[name] = {"topic_id": str(info.topic_id), "factor": factor,
                                "assignment": lists}
        for name, partitions in self._nodes.reassigned().items():
            info = self._logs.topic(name)
            if info is not None:
                entry = topics.setdefault(name, {"topic_id": str(info.topic_id), "factor": 1,
                                                 "assignment": []})
                entry["reassigned"] = {str(p): {"replicas": r.replicas, "adding": r.adding,
                                                "removing": r.removing}
                                       for p, r in partitions.items()}
        text = json.dumps({"version": 1, "topics": topics}, indent=1, sort_keys=True)
        await asyncio.to_thread(write_durably, self._logs.directory / REPLICAS_FILE, text)

    def _registered(self) -> list[int]:
        """The broker ids replicas may be placed on."""
        return [self._config.node_id] if self._nodes is None else self._nodes.registered()

    def check_replica_assignment(self, replicas: Sequence[int]) -> None:
        """A partition's new replicas (AlterPartitionReassignments): not empty, registered
        brokers, none twice; ServiceError INVALID_REPLICA_ASSIGNMENT otherwise."""
        self._check_assignment(replicas, None)

    def _check_assignment(self, replicas: Sequence[int], factor: int | None) -> None:
        """Kafka's validateManualPartitionAssignment."""
        if not replicas:
            raise ServiceError(ErrorCode.invalid_replica_assignment,
                               "The manual partition assignment includes an empty replica list.")
        registered = set(self._registered())
        previous = None
        for broker in sorted(replicas):
            if broker not in registered:
                raise ServiceError(ErrorCode.invalid_replica_assignment,
                                   f"The manual partition assignment includes broker {broker}, "
                                   "but no such broker is registered.")
            if broker == previous:
                raise ServiceError(ErrorCode.invalid_replica_assignment,
                                   f"The manual partition assignment includes the broker "
                                   f"{broker} more than once.")
            previous = broker
        if factor is not None and len(replicas) != factor:
            raise ServiceError(ErrorCode.invalid_replica_assignment,
                               f"The manual partition assignment includes a partition with "
                               f"{len(replicas)} replica(s), but this is not consistent with "
                               f"previous partitions, which have {factor} replica(s).")

    def _check_new(self, name: str, partitions: int, rf: int,
                   assignments: Sequence[Sequence[int]],
                   configs: Mapping[str, str | None]) -> NewTopic:
        if not valid_topic_name(name):
            raise ServiceError(
                ErrorCode.invalid_topic_exception,
                f"Topic name '{name}' is illegal, it contains a character other than ASCII "
                "alphanumerics, '.', '_' and '-'" if name else
                "Topic name is illegal, it can't be empty")
        if self._logs.topic(name) is not None:
            raise ServiceError(ErrorCode.topic_already_exists, f"Topic '{name}' already exists.")
        other = self._collides(name)
        if other is not None:
            raise ServiceError(ErrorCode.invalid_topic_exception,
                               f"Topic '{name}' collides with existing topic: {other}")
        if assignments:
            if partitions != -1 or rf != -1:
                raise ServiceError(
                    ErrorCode.invalid_request,
                    "Both numPartitions or replicationFactor and replicasAssignments were set. "
                    "Both cannot be used at the same time.")
            for replicas in assignments:
                self._check_assignment(replicas, len(assignments[0]))
            partitions, rf = len(assignments), len(assignments[0])
        if partitions == -1:
            partitions = self._config.get_int("num.partitions")
        if partitions <= 0:
            raise ServiceError(ErrorCode.invalid_partitions,
                               "Number of partitions was set to an invalid non-positive value.")
        if rf == -1:
            rf = self._config.get_int("default.replication.factor")
        if rf <= 0:
            raise ServiceError(
                ErrorCode.invalid_replication_factor,
                "Replication factor must be larger than 0, or -1 to use the default value.")
        registered = len(self._registered())
        if rf > registered:
            raise ServiceError(
                ErrorCode.invalid_replication_factor,
                f"Unable to replicate the partition {rf} time(s): The target replication factor "
                f"of {rf} cannot be reached because only {registered} broker(s) are registered.")
        return NewTopic(name, partitions, rf, _validated(configs),
                        assignment=[list(r) for r in assignments])

    def _collides(self, name: str) -> str | None:
        norm = name.replace(".", "_")
        for t in self._logs.topics():
            if t.name != name and t.name.replace(".", "_") == norm:
                return t.name
        return None

    # DeleteTopics ------------------------------------------------------------------------------
    async def delete(self, name: str | None, topic_id: uuid.UUID | None,
                     quota: MutationQuota | None = None) -> TopicInfo:
        """Delete a topic given by name, or by id when no name is given; returns what it was.
        ``quota`` is charged for its partitions last (see ``create``)."""
        if name is None and topic_id is not None and topic_id != ZERO_UUID:
            info = self._logs.topic_by_id(topic_id)
            if info is None:
                raise ServiceError(ErrorCode.unknown_topic_id,
                                   "This server does not host this topic ID.")
        else:
            info = self._logs.topic(name) if name is not None else None
            if info is None:
                raise unknown_partition()
        if self._config.get("delete.topic.enable", "true").lower() != "true":
            raise ServiceError(ErrorCode.topic_deletion_disabled, "Topic deletion is disabled.")
        if info.internal:
            raise ServiceError(INTERNAL_TOPIC_REFUSED,
                               f"Internal topic {info.name} cannot be deleted.")
        if quota is not None:
            quota.record(info.partitions)
        await self._logs.delete_topic(info.name)
        if self._nodes is not None:
            self._nodes.forget(info.name)
            await self._save_replicas()
        self._changed()
        return info

    # CreatePartitions --------------------------------------------------------------------------
    def check_added_partition_total(self, topics: Sequence[tuple[str, int]]) -> None:
        """(name, new count) per topic: more than ``MAX_PARTITIONS_PER_REQUEST`` partitions added
        in all refuses the whole request with INVALID_PARTITIONS (Kafka bounds the records of one
        controller operation at the same 10,000)."""
        total = 0
        for name, count in topics:
            info = self._logs.topic(name)
            if info is not None and count > info.partitions:
                total += count - info.partitions
        if total > MAX_PARTITIONS_PER_REQUEST:
            raise ServiceError(ErrorCode.invalid_partitions, EXCESSIVE_PARTITIONS)

    async def add_partitions(self, name: str, count: int,
                             assignments: Sequence[Sequence[int]] | None,
                             *, validate_only: bool, quota: MutationQuota | None = None) -> None:
        """``quota`` is charged for the partitions added last (see ``create``)."""
        info = self.require(name)
        if info.internal:
            raise ServiceError(INTERNAL_TOPIC_REFUSED,
                               f"The number of partitions of internal topic {name} cannot change.")
        if count < info.partitions:
            raise ServiceError(ErrorCode.invalid_partitions, (
                f"Topic currently has {info.partitions} partitions, which is higher than the "
                f"requested {count}."))
        if count == info.partitions:
            raise ServiceError(ErrorCode.invalid_partitions,
                               f"Topic already has {info.partitions} partitions.")
        if assignments is not None:
            if len(assignments) != count - info.partitions:
                raise ServiceError(ErrorCode.invalid_replica_assignment, (
                    f"Attempted to add {count - info.partitions} additional partition(s), but "
                    f"only {len(assignments)} assignment(s) were specified."))
            factor = 1 if self._nodes is None else self._nodes.replication_factor(name)
            for replicas in assignments:
                self._check_assignment(replicas, factor)
        if quota is not None:
            quota.record(count - info.partitions)
        if not validate_only:
            await self._logs.create_partitions(name, count)
            if self._nodes is not None and assignments:
                self._nodes.add_replicas(name, info.partitions, [list(r) for r in assignments])
                await self._save_replicas()
            self._changed()

    # Configs -----------------------------------------------------------------------------------
    def config_entries(self, name: str, keys: set[str] | None = None) -> list[dict[str, Any]]:
        """Every config of the topic (or only ``keys``) with value, source and synonyms."""
        info = self._logs.topic(name)
        if info is None:
            raise ServiceError(ErrorCode.unknown_topic_or_partition,
                               f"The topic '{name}' does not exist.")
        return topic_config_entries(dict(info.configs), self._config, keys)

    def new_topic_config_entries(self, topic: NewTopic) -> list[dict[str, Any]]:
        """What CreateTopics v5+ reports for a topic it created (or would create)."""
        return topic_config_entries(topic.configs, self._config)

    async def alter_configs(self, name: str,
                            change: Callable[[dict[str, str]], Mapping[str, str | None]],
                            *, validate_only: bool) -> None:
        """Replace the topic's overrides with ``change(current overrides)``, validated."""
        info = self.require(name)
        overrides = _validated(change(dict(info.configs)))
        if not validate_only:
            await self._logs.alter_topic_configs(info.name, overrides)


def _validated(configs: Mapping[str, str | None]) -> dict[str, str]:
    try:
        return validate_topic_configs(configs, min_segment_bytes=MIN_SEGMENT_BYTES)
    except InvalidConfigError as exc:
        raise ServiceError(ErrorCode.invalid_config, str(exc)) from None
