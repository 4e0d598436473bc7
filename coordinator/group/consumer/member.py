"""A consumer-protocol group member (KIP-848) as an immutable value, and its record forms.

Every change makes a new member (``dataclasses.replace``), so a group can swap members in its
maps and a reverted write only has to put the old reference back (Kafka's ConsumerGroupMember).
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from kafkette.coordinator.group.assignor.spec import Assignment, make_assignment
from kafkette.protocol.consumer_group_records import (
    ClassicMemberMetadata,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupTargetAssignmentMemberValue,
    TopicPartitions,
)


class MemberState(enum.IntEnum):
    STABLE = 0
    UNREVOKED_PARTITIONS = 1  # must revoke partitions before it gets new ones
    UNRELEASED_PARTITIONS = 2  # waits for partitions other members still own
    UNKNOWN = 127  # written by a newer coordinator

    @classmethod
    def from_value(cls, value: int) -> MemberState:
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN


_STABLE = MemberState.STABLE  # every heartbeat compares: a global is read in ~10 ns, the member ~70


def assignment_from_pairs(pairs: Iterable[tuple[uuid.UUID, Iterable[int]]]) -> Assignment:
    """Merge (topic id, partitions) pairs (a topic may repeat) into an assignment."""
    merged: dict[uuid.UUID, set[int]] = {}
    for topic_id, partitions in pairs:
        merged.setdefault(topic_id, set()).update(partitions)
    return make_assignment(merged)


def assignment_from_records(tps: Iterable[TopicPartitions]) -> Assignment:
    return assignment_from_pairs((tp.topic_id, tp.partitions) for tp in tps)


def assignment_to_records(assignment: Assignment) -> tuple[TopicPartitions, ...]:
    """Sorted by topic id and partition, so equal assignments give equal bytes."""
    return tuple(TopicPartitions(tid, tuple(sorted(assignment[tid])))
                 for tid in sorted(assignment) if assignment[tid])


def target_record(assignment: Assignment) -> ConsumerGroupTargetAssignmentMemberValue:
    return ConsumerGroupTargetAssignmentMemberValue(assignment_to_records(assignment))


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset[str] = frozenset()
    # Kafka's default is "" (written as an empty string, not null); "" and None mean no regex
    subscribed_topic_regex: str | None = ""
    server_assignor: str | None = None
    assigned_partitions: Assignment = field(default_factory=dict)
    partitions_pending_revocation: Assignment = field(default_factory=dict)
    classic_member_metadata: ClassicMemberMetadata | None = None

    # -- derived -------------------------------------------------------------------------------

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic_member_metadata is not None

    def is_reconciled_to(self, target_epoch: int) -> bool:
        return self.state == _STABLE and self.member_epoch == target_epoch

    @property
    def has_subscription(self) -> bool:
        return bool(self.subscribed_topic_names) or bool(self.subscribed_topic_regex)

    # -- changes ---------------------------------------------------------------------------------

    def with_epoch(self, member_epoch: int) -> ConsumerGroupMember:
        """The member moved to ``member_epoch``; its current epoch becomes the previous one."""
        return replace(self, member_epoch=member_epoch, previous_member_epoch=self.member_epoch)

    def with_request(self, *, instance_id: str | None = None, rack_id: str | None = None,
                     rebalance_timeout_ms: int = -1,
                     subscribed_topic_names: Iterable[str] | None = None,
                     subscribed_topic_regex: str | None = None,
                     server_assignor: str | None = None,
                     client_id: str | None = None,
                     client_host: str | None = None) -> ConsumerGroupMember:
        """Apply the non-null fields of a ConsumerGroupHeartbeat (null/-1 = unchanged).

        An empty regex string clears the regex (kept as "", as Kafka writes it). The classic
        member metadata is dropped: a heartbeat comes from a consumer-protocol member.
        """
        # Only the fields that differ: a regular heartbeat (every field null, same client)
        # changes nothing and gets this very member back, without a copy.
        changes: dict[str, object] = {}
        if self.classic_member_metadata is not None:
            changes["classic_member_metadata"] = None
        if instance_id is not None and instance_id != self.instance_id:
            changes["instance_id"] = instance_id
        if rack_id is not None and rack_id != self.rack_id:
            changes["rack_id"] = rack_id
        if rebalance_timeout_ms != -1 and rebalance_timeout_ms != self.rebalance_timeout_ms:
            changes["rebalance_timeout_ms"] = rebalance_timeout_ms
        if subscribed_topic_names is not None:
            names = frozenset(subscribed_topic_names)
            if names != self.subscribed_topic_names:
                changes["subscribed_topic_names"] = names
        if subscribed_topic_regex is not None \
                and subscribed_topic_regex != self.subscribed_topic_regex:
            changes["subscribed_topic_regex"] = subscribed_topic_regex
        if server_assignor is not None and server_assignor != self.server_assignor:
            changes["server_assignor"] = server_assignor
        if client_id is not None and client_id != self.client_id:
            changes["client_id"] = client_id
        if client_host is not None and client_host != self.client_host:
            changes["client_host"] = client_host
        if not changes:
            return self
        return replace(self, **changes)  # type: ignore[arg-type]  # each value in changes has its field's type; a **dict is typed by the union of its values

    def with_member_id(self, member_id: str) -> ConsumerGroupMember:
        """A static member's new incarnation inherits everything but the id."""
        return replace(self, member_id=member_id)

    # -- records ---------------------------------------------------------------------------------

    def metadata_record(self) -> ConsumerGroupMemberMetadataValue:
        return ConsumerGroupMemberMetadataValue(
            instance_id=self.instance_id, rack_id=self.rack_id, client_id=self.client_id,
            client_host=self.client_host,
            subscribed_topic_names=tuple(sorted(self.subscribed_topic_names)),
            subscribed_topic_regex=self.subscribed_topic_regex,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            server_assignor=self.server_assignor,
            classic_member_metadata=self.classic_member_metadata)

    def assignment_record(self) -> ConsumerGroupCurrentMemberAssignmentValue:
        return ConsumerGroupCurrentMemberAssignmentValue(
            member_epoch=self.member_epoch, previous_member_epoch=self.previous_member_epoch,
            state=int(self.state),
            assigned_partitions=assignment_to_records(self.assigned_partitions),
            partitions_pending_revocation=assignment_to_records(self.partitions_pending_revocation))

    def replay_metadata(self, value: ConsumerGroupMemberMetadataValue) -> ConsumerGroupMember:
        return replace(
            self, instance_id=value.instance_id, rack_id=value.rack_id, client_id=value.client_id,
            client_host=value.client_host,
            subscribed_topic_names=frozenset(value.subscribed_topic_names),
            subscribed_topic_regex=value.subscribed_topic_regex,
            rebalance_timeout_ms=value.rebalance_timeout_ms,
            server_assignor=value.server_assignor,
            classic_member_metadata=value.classic_member_metadata)

    def replay_assignment(self, value: ConsumerGroupCurrentMemberAssignmentValue
                          ) -> ConsumerGroupMember:
        return replace(
            self, member_epoch=value.member_epoch,
            previous_member_epoch=value.previous_member_epoch,
            state=MemberState.from_value(value.state),
            assigned_partitions=assignment_from_records(value.assigned_partitions),
            partitions_pending_revocation=assignment_from_records(
                value.partitions_pending_revocation))
