"""Builders of the consumer-group records (Kafka: GroupCoordinatorRecordHelpers, consumer part).

A record is ``(key, value)`` with the dataclasses of ``protocol.consumer_group_records``;
value None is a tombstone. Encode with ``consumer_group_records.encode_key/encode_value``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kafkette.protocol.consumer_group_records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupKey,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    ConsumerGroupValue,
    TopicMetadata,
    encode_key,
    encode_value,
)

from ...runtime.coordinator_log import RawRecord
from .member import Assignment, ConsumerGroupMember, target_record

Record = tuple[ConsumerGroupKey, ConsumerGroupValue | None]


def member_subscription(group_id: str, member: ConsumerGroupMember) -> Record:
    return ConsumerGroupMemberMetadataKey(group_id, member.member_id), member.metadata_record()


def member_subscription_tombstone(group_id: str, member_id: str) -> Record:
    return ConsumerGroupMemberMetadataKey(group_id, member_id), None


def group_epoch(group_id: str, epoch: int) -> Record:
    return ConsumerGroupMetadataKey(group_id), ConsumerGroupMetadataValue(epoch)


def group_epoch_tombstone(group_id: str) -> Record:
    return ConsumerGroupMetadataKey(group_id), None


def subscription_metadata(group_id: str, topics: Mapping[str, TopicMetadata]) -> Record:
    """The subscribed topics' metadata, sorted by name (Kafka writes its map's order)."""
    value = ConsumerGroupPartitionMetadataValue(tuple(topics[n] for n in sorted(topics)))
    return ConsumerGroupPartitionMetadataKey(group_id), value


def subscription_metadata_tombstone(group_id: str) -> Record:
    return ConsumerGroupPartitionMetadataKey(group_id), None


def target_member(group_id: str, member_id: str, assignment: Assignment) -> Record:
    return ConsumerGroupTargetAssignmentMemberKey(group_id, member_id), target_record(assignment)


def target_member_tombstone(group_id: str, member_id: str) -> Record:
    return ConsumerGroupTargetAssignmentMemberKey(group_id, member_id), None


def target_epoch(group_id: str, assignment_epoch: int) -> Record:
    return (ConsumerGroupTargetAssignmentMetadataKey(group_id),
            ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch))


def target_epoch_tombstone(group_id: str) -> Record:
    return ConsumerGroupTargetAssignmentMetadataKey(group_id), None


def current_assignment(group_id: str, member: ConsumerGroupMember) -> Record:
    return (ConsumerGroupCurrentMemberAssignmentKey(group_id, member.member_id),
            member.assignment_record())


def current_assignment_tombstone(group_id: str, member_id: str) -> Record:
    return ConsumerGroupCurrentMemberAssignmentKey(group_id, member_id), None


def resolved_regex(group_id: str, regex: str, topics: Iterable[str], version: int,
                   timestamp_ms: int) -> Record:
    value = ConsumerGroupRegularExpressionValue(tuple(sorted(topics)), version, timestamp_ms)
    return ConsumerGroupRegularExpressionKey(group_id, regex), value


def resolved_regex_tombstone(group_id: str, regex: str) -> Record:
    return ConsumerGroupRegularExpressionKey(group_id, regex), None


def member_removal(group_id: str, member_id: str) -> list[Record]:
    """A member leaves or is fenced: current assignment, target, then subscription tombstones
    (replay checks rely on this order)."""
    return [current_assignment_tombstone(group_id, member_id),
            target_member_tombstone(group_id, member_id),
            member_subscription_tombstone(group_id, member_id)]


def group_deletion(group_id: str, member_ids: Iterable[str], regexes: Iterable[str]
                   ) -> list[Record]:
    """Every tombstone of a consumer group in Kafka's order (offsets not included)."""
    ids = sorted(member_ids)
    return ([current_assignment_tombstone(group_id, m) for m in ids]
            + [target_member_tombstone(group_id, m) for m in ids]
            + [target_epoch_tombstone(group_id)]
            + [member_subscription_tombstone(group_id, m) for m in ids]
            + [resolved_regex_tombstone(group_id, r) for r in sorted(regexes)]
            + [subscription_metadata_tombstone(group_id), group_epoch_tombstone(group_id)])


def encode_records(items: Iterable[Record]) -> list[RawRecord]:
    """The records as the raw (key, value) bytes a coordinator Result appends."""
    return [(encode_key(key), None if value is None else encode_value(value))
            for key, value in items]
