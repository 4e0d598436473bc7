"""What a server-side assignor sees and returns (Kafka: GroupSpec, SubscribedTopicDescriber,
GroupAssignment, ConsumerGroupPartitionAssignor).

An assignment is ``{topic id: frozenset(partitions)}``; assignors return one per member id.
Assignors are pure and deterministic: they iterate member ids and topic ids sorted, never in
dict/set order, so the same input always gives the same output.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

# topic id -> partitions; values are frozensets and the dicts are never mutated once built
Assignment = Mapping[uuid.UUID, frozenset[int]]
GroupAssignment = dict[str, Assignment]


def make_assignment(items: Mapping[uuid.UUID, Iterable[int]]) -> Assignment:
    """Normalized assignment: frozenset values, topics with no partitions dropped."""
    normalized = {tid: frozenset(ps) for tid, ps in items.items()}
    return {tid: ps for tid, ps in normalized.items() if ps}


class PartitionAssignorError(Exception):
    """The assignor cannot compute an assignment (the heartbeat answers UNKNOWN_SERVER_ERROR)."""


class SubscriptionType(enum.Enum):
    HOMOGENEOUS = "homogeneous"  # every member subscribes to the same topics
    HETEROGENEOUS = "heterogeneous"


@dataclass(frozen=True, slots=True)
class MemberSubscription:
    subscribed_topic_ids: frozenset[uuid.UUID] = frozenset()
    instance_id: str | None = None
    rack_id: str | None = None


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """The members' subscriptions and their *current target* assignments (for stickiness)."""
    members: Mapping[str, MemberSubscription]
    subscription_type: SubscriptionType = SubscriptionType.HOMOGENEOUS
    current: Mapping[str, Assignment] = field(default_factory=dict)

    def current_of(self, member_id: str) -> Assignment:
        return self.current.get(member_id, {})


class TopicDescriber(Protocol):
    def num_partitions(self, topic_id: uuid.UUID) -> int:
        """Partition count of a subscribed topic, -1 when the topic is unknown."""
        ...


@dataclass(frozen=True, slots=True)
class TopicPartitionCounts:
    """The simplest TopicDescriber: topic id -> partition count."""
    counts: Mapping[uuid.UUID, int]

    def num_partitions(self, topic_id: uuid.UUID) -> int:
        return self.counts.get(topic_id, -1)


class PartitionAssignor(Protocol):
    name: str

    def assign(self, spec: GroupSpec, topics: TopicDescriber) -> GroupAssignment:
        """One assignment per member id of ``spec`` (empty ones included)."""
        ...


def partition_counts(spec: GroupSpec, topics: TopicDescriber) -> dict[uuid.UUID, int]:
    """Partition count of every subscribed topic; an unknown topic is an assignor error."""
    counts: dict[uuid.UUID, int] = {}
    for tid in sorted({t for sub in spec.members.values() for t in sub.subscribed_topic_ids}):
        n = topics.num_partitions(tid)
        if n < 0:
            raise PartitionAssignorError(
                f"Members are subscribed to topic {tid} which doesn't exist in the topic metadata.")
        counts[tid] = n
    return counts


def is_homogeneous(spec: GroupSpec) -> bool:
    return len({sub.subscribed_topic_ids for sub in spec.members.values()}) <= 1
