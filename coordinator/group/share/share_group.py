"""A share group's state (Kafka's ShareGroup / ShareGroupMember) and how its
``__consumer_offsets`` records (types 10-15) build it: ``replay_record`` applies one record,
on load and for every write alike (the heartbeat op only computes records; replay changes
memory). Also the builders of those records (Kafka's GroupCoordinatorRecordHelpers, share part).

States: Empty (no members) and Stable; share groups never rebalance in phases (a member jumps
straight to its target) and never expire.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from kafkette.protocol import share_group_records as sgr

from ..assignor.spec import Assignment

STATE_EMPTY = "Empty"
STATE_STABLE = "Stable"
MEMBER_STATE_STABLE = 0  # Kafka's MemberState.STABLE, the only state a share member has

Record = tuple[sgr.ShareGroupKey, sgr.ShareGroupValue | None]


@dataclass(frozen=True, slots=True)
class ShareMember:
    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: int = MEMBER_STATE_STABLE
    assigned: Assignment = field(default_factory=dict)

    def metadata_value(self) -> sgr.ShareGroupMemberMetadataValue:
        return sgr.ShareGroupMemberMetadataValue(self.rack_id, self.client_id, self.client_host,
                                                 self.subscribed_topic_names)

    def assignment_value(self) -> sgr.ShareGroupCurrentMemberAssignmentValue:
        return sgr.ShareGroupCurrentMemberAssignmentValue(
            self.member_epoch, self.previous_member_epoch, self.state,
            topic_partitions(self.assigned))


@dataclass(slots=True)
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    metadata_hash: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)  # member id -> target
    # share-partitions whose state exists: topic id -> (topic name, partitions)
    initialized: dict[uuid.UUID, tuple[str, frozenset[int]]] = field(default_factory=dict)
    initializing: dict[uuid.UUID, tuple[str, frozenset[int]]] = field(default_factory=dict)
    deleting: dict[uuid.UUID, str] = field(default_factory=dict)

    @property
    def state(self) -> str:
        return STATE_STABLE if self.members else STATE_EMPTY

    def is_empty(self) -> bool:
        return not self.members

    def subscribed_topic_names(self) -> set[str]:
        return {name for m in self.members.values() for name in m.subscribed_topic_names}

    def tombstones(self) -> list[Record]:
        """Every record of the group as a tombstone, in Kafka's deletion order."""
        gid = self.group_id
        out: list[Record] = []
        for member_id in sorted(self.members):
            out += member_removal(gid, member_id)
        out += [(sgr.ShareGroupTargetAssignmentMetadataKey(gid), None),
                (sgr.ShareGroupMetadataKey(gid), None),
                (sgr.ShareGroupStatePartitionMetadataKey(gid), None)]
        return out


def topic_partitions(assignment: Assignment) -> tuple[sgr.TopicPartitions, ...]:
    return tuple(sgr.TopicPartitions(t, tuple(sorted(ps)))
                 for t, ps in sorted(assignment.items()) if ps)


def assignment_of(items: Iterable[sgr.TopicPartitions]) -> Assignment:
    return {tp.topic_id: frozenset(tp.partitions) for tp in items if tp.partitions}


def _infos(items: Iterable[sgr.TopicPartitionsInfo]) -> dict[uuid.UUID, tuple[str, frozenset[int]]]:
    return {i.topic_id: (i.topic_name, frozenset(i.partitions)) for i in items}


# Replay ------------------------------------------------------------------------------------------

def replay_record(groups: dict[str, ShareGroup], key: sgr.ShareGroupKey,
                  value: sgr.ShareGroupValue | None) -> None:
    """Apply one share group record (value None: a tombstone) to ``groups``."""
    group = groups.get(key.group)
    if group is None:
        if value is None:
            return
        group = groups[key.group] = ShareGroup(key.group)
    match key:
        case sgr.ShareGroupMetadataKey():
            if value is None:
                del groups[key.group]
                return
            assert isinstance(value, sgr.ShareGroupMetadataValue)
            group.group_epoch = value.epoch
            group.metadata_hash = value.metadata_hash
        case sgr.ShareGroupMemberMetadataKey(member_id=member_id):
            if value is None:
                group.members.pop(member_id, None)
                return
            assert isinstance(value, sgr.ShareGroupMemberMetadataValue)
            old = group.members.get(member_id) or ShareMember(member_id)
            group.members[member_id] = replace(
                old, rack_id=value.rack_id, client_id=value.client_id,
                client_host=value.client_host,
                subscribed_topic_names=value.subscribed_topic_names)
        case sgr.ShareGroupTargetAssignmentMetadataKey():
            group.assignment_epoch = 0 if value is None else value.assignment_epoch  # type: ignore[union-attr]  # the key's type fixes the value's type
        case sgr.ShareGroupTargetAssignmentMemberKey(member_id=member_id):
            if value is None:
                group.target.pop(member_id, None)
            else:
                assert isinstance(value, sgr.ShareGroupTargetAssignmentMemberValue)
                group.target[member_id] = assignment_of(value.topic_partitions)
        case sgr.ShareGroupCurrentMemberAssignmentKey(member_id=member_id):
            if value is None:
                member = group.members.get(member_id)
                if member is not None:
                    group.members[member_id] = replace(member, member_epoch=0,
                                                       previous_member_epoch=0, assigned={})
                return
            assert isinstance(value, sgr.ShareGroupCurrentMemberAssignmentValue)
            old = group.members.get(member_id) or ShareMember(member_id)
            group.members[member_id] = replace(
                old, member_epoch=value.member_epoch,
                previous_member_epoch=value.previous_member_epoch, state=value.state,
                assigned=assignment_of(value.assigned_partitions))
        case sgr.ShareGroupStatePartitionMetadataKey():
            if value is None:
                group.initialized, group.initializing, group.deleting = {}, {}, {}
                return
            assert isinstance(value, sgr.ShareGroupStatePartitionMetadataValue)
            group.initializing = _infos(value.initializing_topics)
            group.initialized = _infos(value.initialized_topics)
            group.deleting = {t.topic_id: t.topic_name for t in value.deleting_topics}


# Record builders ---------------------------------------------------------------------------------

def member_metadata(group_id: str, member: ShareMember) -> Record:
    return sgr.ShareGroupMemberMetadataKey(group_id, member.member_id), member.metadata_value()


def group_epoch(group_id: str, epoch: int, metadata_hash: int) -> Record:
    return sgr.ShareGroupMetadataKey(group_id), sgr.ShareGroupMetadataValue(epoch, metadata_hash)


def target_member(group_id: str, member_id: str, assignment: Assignment) -> Record:
    return (sgr.ShareGroupTargetAssignmentMemberKey(group_id, member_id),
            sgr.ShareGroupTargetAssignmentMemberValue(topic_partitions(assignment)))


def target_epoch(group_id: str, epoch: int) -> Record:
    return (sgr.ShareGroupTargetAssignmentMetadataKey(group_id),
            sgr.ShareGroupTargetAssignmentMetadataValue(epoch))


def current_assignment(group_id: str, member: ShareMember) -> Record:
    return (sgr.ShareGroupCurrentMemberAssignmentKey(group_id, member.member_id),
            member.assignment_value())


def state_partitions(group_id: str,
                     initialized: Mapping[uuid.UUID, tuple[str, frozenset[int]]]) -> Record:
    """ShareGroupStatePartitionMetadata with every share-partition initialised (kafkette
    initialises them in the heartbeat that first subscribes to them)."""
    return (sgr.ShareGroupStatePartitionMetadataKey(group_id),
            sgr.ShareGroupStatePartitionMetadataValue(
                initialized_topics=tuple(
                    sgr.TopicPartitionsInfo(t, name, tuple(sorted(ps)))
                    for t, (name, ps) in sorted(initialized.items()))))


def member_removal(group_id: str, member_id: str) -> list[Record]:
    """Tombstones of a member in Kafka's order: current assignment, target, metadata."""
    return [(sgr.ShareGroupCurrentMemberAssignmentKey(group_id, member_id), None),
            (sgr.ShareGroupTargetAssignmentMemberKey(group_id, member_id), None),
            (sgr.ShareGroupMemberMetadataKey(group_id, member_id), None)]


def encode_records(records: Iterable[Record]) -> list[tuple[bytes, bytes | None]]:
    return [(sgr.encode_key(k), None if v is None else sgr.encode_value(v)) for k, v in records]
