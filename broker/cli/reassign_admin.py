"""The Admin calls of ``kafkette reassign-partitions`` (broker/cli/reassign_command.py) over the
admin client's connection: alterPartitionReassignments, listPartitionReassignments, the
partitions' replicas (Metadata) and the live brokers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import timedelta

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import request_type

from .admin_client import METADATA, AdminClient, AdminError, error_name

API_VERSIONS, ALTER_REASSIGNMENTS, LIST_REASSIGNMENTS = 18, 45, 46
OURS = {ALTER_REASSIGNMENTS: (0, 1), LIST_REASSIGNMENTS: (0, 0)}
TIMEOUT = timedelta(seconds=60)  # Kafka's default.api.timeout.ms

Partition = tuple[str, int]
# (replicas, adding replicas, removing replicas) of a reassignment in progress
Ongoing = tuple[list[int], list[int], list[int]]


class ReassignAdmin:
    def __init__(self, admin: AdminClient) -> None:
        self.admin = admin
        answer = admin.request(API_VERSIONS, 0)
        theirs = {int(k.api_key): (int(k.min_version), int(k.max_version))
                  for k in answer.api_keys}
        self.versions: dict[int, int] = {}
        for key, (lo, hi) in OURS.items():
            if key in theirs and min(hi, theirs[key][1]) >= max(lo, theirs[key][0]):
                self.versions[key] = min(hi, theirs[key][1])

    def _version(self, key: int, name: str) -> int:
        version = self.versions.get(key)
        if version is None:
            raise AdminError(f"The broker does not support {name}")
        return version

    def alter(self, moves: Mapping[Partition, list[int] | None], *,
              allow_replication_factor_change: bool = True
              ) -> dict[Partition, tuple[str, str | None]]:
        """AlterPartitionReassignments (None cancels): (error name, message) of each partition
        that failed."""
        version = self._version(ALTER_REASSIGNMENTS, "AlterPartitionReassignments")
        if not allow_replication_factor_change and version < 1:
            raise AdminError("The broker does not support the AllowReplicationFactorChange "
                             "option for the AlterPartitionReassignments API.")
        topic_cls = item_type(request_type(ALTER_REASSIGNMENTS, version), "topics")
        part_cls = item_type(topic_cls, "partitions")
        by_topic: dict[str, list[tuple[int, list[int] | None]]] = {}
        for (topic, partition), replicas in moves.items():
            by_topic.setdefault(topic, []).append((partition, replicas))
        r = self.admin.request(
            ALTER_REASSIGNMENTS, version, timeout=TIMEOUT,
            allow_replication_factor_change=allow_replication_factor_change,
            topics=tuple(make(topic_cls, name=t, partitions=tuple(
                make(part_cls, partition_index=p, replicas=None if rs is None else tuple(rs))
                for p, rs in sorted(ps, key=lambda e: e[0]))) for t, ps in sorted(by_topic.items())))
        if r.error_code != ErrorCode.none:
            return {tp: (error_name(r.error_code), r.error_message) for tp in moves}
        return {(t.name, int(p.partition_index)): (error_name(p.error_code), p.error_message)
                for t in r.responses for p in t.partitions if p.error_code != ErrorCode.none}

    def ongoing(self, partitions: Iterable[Partition] | None = None) -> dict[Partition, Ongoing]:
        """ListPartitionReassignments: every reassignment in progress, or those of
        ``partitions``."""
        version = self._version(LIST_REASSIGNMENTS, "ListPartitionReassignments")
        topic_cls = item_type(request_type(LIST_REASSIGNMENTS, version), "topics")
        topics = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in partitions:
                by_topic.setdefault(topic, []).append(partition)
            topics = tuple(make(topic_cls, name=t, partition_indexes=tuple(sorted(ps)))
                           for t, ps in sorted(by_topic.items()))
        r = self.admin.request(LIST_REASSIGNMENTS, version, timeout=TIMEOUT, topics=topics)
        if r.error_code != ErrorCode.none:
            raise AdminError(r.error_message or error_name(r.error_code))
        return {(t.name, int(p.partition_index)): (list(p.replicas), list(p.adding_replicas),
                                                   list(p.removing_replicas))
                for t in r.topics for p in t.partitions}

    def replicas(self, topics: Iterable[str]) -> dict[Partition, list[int]]:
        """The replicas of every partition of the existing ``topics`` (Metadata)."""
        wanted = sorted(set(topics))
        version = self.admin.versions.get(METADATA)
        if version is None or not wanted:
            return {}
        topic_cls = item_type(request_type(METADATA, version), "topics")
        _, r = self.admin.call(METADATA, topics=tuple(make(topic_cls, name=t, topic_id=None)
                                                      for t in wanted),
                               allow_auto_topic_creation=False,
                               include_cluster_authorized_operations=False,
                               include_topic_authorized_operations=False)
        return {(t.name, int(p.partition_index)): [int(n) for n in p.replica_nodes]
                for t in r.topics if t.error_code == ErrorCode.none for p in t.partitions}

    def brokers(self) -> list[int]:
        return sorted(self.admin.brokers())
