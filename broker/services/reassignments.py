"""Partition reassignments (AlterPartitionReassignments, ListPartitionReassignments) as Kafka's
controller answers them (ReplicationControlManager.alterPartitionReassignments and
listPartitionReassignments).

Each partition is answered on its own: an unknown topic or partition is
UNKNOWN_TOPIC_OR_PARTITION; null replicas cancel the partition's reassignment in progress
(NO_REASSIGNMENT_IN_PROGRESS without one); other replicas must be a valid manual assignment
(INVALID_REPLICA_ASSIGNMENT: empty, a broker twice, a broker not registered) and, when the
request forbids it (v1 AllowReplicationFactorChange=false), keep the replication factor
(INVALID_REPLICATION_FACTOR). The replicas move in the multi-node emulation
(broker/cluster/nodes.py), which completes a move once its target replicas are live; the new
lists are stored with the topics' replicas, so they survive a restart. A ``__consumer_offsets``
partition whose leader moves takes its groups' coordinator along (unloaded where it was, loaded
again on the new leader), as a stopped node's do. One node has one valid target, itself: moving
there changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from ..cluster.node_control import coordinators_follow_leaders
from ..cluster.nodes import OFFSETS_TOPIC
from ..cluster.reassignment import Reassignment, UncleanRevertError
from .errors import ServiceError

if TYPE_CHECKING:
    from kafkette.coordinator.group.group_service import GroupCoordinator

    from .cluster import ClusterInfo
    from .topic_service import TopicService

NO_REASSIGNMENT = "No partition reassignment is in progress."  # Kafka's message for the code
UNCLEAN_KEY = "unclean.leader.election.enable"


@dataclass(frozen=True, slots=True)
class PartitionAnswer:
    partition: int
    error: ErrorCode = ErrorCode.none
    message: str | None = None


class PartitionReassignments:
    """Reassign or list; made per request over the broker's topics and cluster view."""

    def __init__(self, topics: TopicService, cluster: ClusterInfo, config: Any,
                 coordinator: GroupCoordinator | None = None) -> None:
        self._topics = topics
        self._cluster = cluster
        self._config = config
        self._coordinator = coordinator  # None while it loads (or with one node: no moves)

    async def alter(self, requested: Sequence[tuple[str, Sequence[tuple[int, list[int] | None]]]],
                    *, allow_replication_factor_change: bool = True
                    ) -> list[tuple[str, list[PartitionAnswer]]]:
        """(topic, [(partition, target replicas or None to cancel)]) -> the answer of each
        partition, in the request's order; the new replicas are stored before it returns."""
        answers = []
        changed = False
        offsets_partitions = []
        for topic, partitions in requested:
            answered = []
            for partition, target in partitions:
                try:
                    changed |= self._alter_one(topic, partition, target,
                                               allow_replication_factor_change)
                    answered.append(PartitionAnswer(partition))
                    if topic == OFFSETS_TOPIC:
                        offsets_partitions.append(partition)
                except ServiceError as exc:
                    answered.append(PartitionAnswer(partition, exc.code, exc.message))
            answers.append((topic, answered))
        if changed:
            await self._topics.save_replicas()
        await self._follow_leaders(offsets_partitions)
        return answers

    async def _follow_leaders(self, offsets_partitions: list[int]) -> None:
        """Move the group coordinators of the ``__consumer_offsets`` partitions whose leader
        changed to it."""
        if offsets_partitions and self._cluster.nodes is not None:
            await coordinators_follow_leaders(self._cluster.nodes, self._coordinator)

    def _alter_one(self, topic: str, partition: int, target: list[int] | None,
                   allow_rf_change: bool) -> bool:
        info = self._topics.get(topic)
        if info is None:
            raise ServiceError(ErrorCode.unknown_topic_or_partition,
                               f"Unable to find a topic named {topic}.")
        if not 0 <= partition < info.partitions:
            raise ServiceError(ErrorCode.unknown_topic_or_partition,
                               f"Unable to find partition {topic}:{partition}.")
        cluster = self._cluster
        if target is None:
            allow_unclean = str(info.configs.get(
                UNCLEAN_KEY, self._config.get(UNCLEAN_KEY, "false"))).lower() == "true"
            try:
                cancelled = cluster.cancel_reassignment(topic, partition,
                                                        allow_unclean=allow_unclean)
            except UncleanRevertError:
                raise ServiceError(ErrorCode.invalid_replica_assignment, (
                    f"Unable to revert partition assignment for {topic}:{partition} because "
                    "it would require an unclean leader election.")) from None
            if not cancelled:
                raise ServiceError(ErrorCode.no_reassignment_in_progress, NO_REASSIGNMENT)
            return True
        self._topics.check_replica_assignment(target)
        if not allow_rf_change:
            ongoing = cluster.reassignment(topic, partition)
            current = (ongoing.target if ongoing is not None
                       else cluster.partition_state(topic, partition)[1])
            if len(current) != len(target):
                raise ServiceError(ErrorCode.invalid_replication_factor,
                                   f"The replication factor is changed from {len(current)} "
                                   f"to {len(target)}")
        cluster.reassign(topic, partition, list(target))
        return True

    def ongoing(self, wanted: Sequence[tuple[str, Sequence[int]]] | None
                ) -> list[tuple[str, list[tuple[int, Reassignment]]]]:
        """(topic, [(partition, reassignment)]) of the reassignments in progress: every one
        (``wanted`` None) or those of the partitions asked; unknown topics and partitions, and
        topics with none, are left out."""
        cluster = self._cluster
        if wanted is None:
            wanted = sorted(cluster.reassigning().items())
        out = []
        for topic, partitions in wanted:
            if self._topics.get(topic) is None:
                continue
            found = []
            for partition in partitions:
                reassignment = cluster.reassignment(topic, partition)
                if reassignment is not None:
                    found.append((partition, reassignment))
            if found:
                out.append((topic, found))
        return out
