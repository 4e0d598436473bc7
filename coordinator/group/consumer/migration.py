"""Pure pieces of classic <-> consumer group migration (KIP-848 §6).

Upgrade: a non-empty classic group using the ``consumer`` protocol type becomes a consumer
group at its generation, every classic member a STABLE member whose current and target
assignment is its last classic assignment (Kafka's ConsumerGroup.fromClassicGroup and
createConsumerGroupRecords). Classic members of a consumer group receive their assigned
partitions as a ConsumerProtocolAssignment in the version of their subscription metadata.
The classic group objects stay the runtime's: callers pass plain member views.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kafkette.coordinator.runtime.error_codes import GROUP_ID_NOT_FOUND, CoordinatorError
from kafkette.protocol.consumer_group_records import ClassicMemberMetadata, ClassicProtocol
from kafkette.protocol.consumer_protocol import (
    HIGHEST_VERSION,
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    version_of,
)
from kafkette.protocol.group_records import GroupMetadataKey, GroupMetadataValue, MemberMetadata

from . import consumer_record_builders as records
from .consumer_group_state import ConsumerGroup
from .consumer_record_builders import Record
from .member import Assignment, ConsumerGroupMember, MemberState, make_assignment

HIGHEST_PROTOCOL_VERSION = HIGHEST_VERSION


def read_subscription(data: bytes) -> tuple[int, Any]:
    """(version, ConsumerProtocolSubscription) — protocol.consumer_protocol's reading rules."""
    return version_of(data), decode_subscription(data)


def read_assignment(data: bytes) -> tuple[int, Any]:
    return version_of(data), decode_assignment(data)


write_assignment = encode_assignment


def _subscription_version(subscription: bytes) -> int:
    """The protocol version a member speaks (its subscription's), v3 when unreadable."""
    with contextlib.suppress(ConsumerProtocolError):
        return min(read_subscription(subscription)[0], HIGHEST_PROTOCOL_VERSION)
    return HIGHEST_PROTOCOL_VERSION


TopicIdOf = Callable[[str], "uuid.UUID | None"]
TopicNameOf = Callable[[uuid.UUID], "str | None"]


@dataclass(frozen=True, slots=True)
class ClassicMemberView:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]  # (name, subscription metadata) as joined
    assignment: bytes  # its last SyncGroup assignment (ConsumerProtocolAssignment)


def upgrade_refusal(*, policy_allows: bool, protocol_type: str | None, size: int,
                    max_size: int) -> str | None:
    """Why a non-empty classic group cannot be upgraded online (None = it can)."""
    if not policy_allows:
        return "the online upgrade is disabled"
    if protocol_type != "consumer":
        return "the group does not use the consumer embedded protocol"
    if size > max_size:
        return "the group size exceeds the consumer group maximum size"
    return None


def _assignment(data: bytes, topic_id_of: TopicIdOf) -> tuple[Assignment, bool]:
    """(partitions by topic id, whether it carries user data); unknown topics are dropped."""
    if not data:
        return {}, False
    _, decoded = read_assignment(data)
    by_id: dict[uuid.UUID, set[int]] = {}
    for tp in decoded.assigned_partitions:
        topic, partitions = tp.topic, tp.partitions
        topic_id = topic_id_of(topic)
        if topic_id is not None:
            by_id.setdefault(topic_id, set()).update(partitions)
    return make_assignment(by_id), bool(decoded.user_data)


def members_from_classic(group_id: str, generation: int, protocol_name: str,
                         members: Iterable[ClassicMemberView], topic_id_of: TopicIdOf
                         ) -> list[ConsumerGroupMember]:
    """The consumer-group members of an upgraded classic group, sorted by member id.

    GROUP_ID_NOT_FOUND when an embedded protocol does not decode, when an assignment carries
    user data (a custom client-side assignor: KAFKA-18134 refuses the upgrade) or when two
    members were given the same partition (the consumer group could not track its owner)."""
    out = []
    seen: set[tuple[uuid.UUID, int]] = set()
    for m in sorted(members, key=lambda v: v.member_id):
        metadata = dict(m.protocols).get(protocol_name, b"")
        try:
            _, subscription = read_subscription(metadata)
            assigned, has_user_data = _assignment(m.assignment, topic_id_of)
        except ConsumerProtocolError as exc:
            raise CoordinatorError(GROUP_ID_NOT_FOUND, (
                f"Cannot upgrade the classic group {group_id} to consumer group because the "
                "embedded consumer protocol is malformed.")) from exc
        if has_user_data:
            raise CoordinatorError(GROUP_ID_NOT_FOUND, (
                f"Cannot upgrade the classic group {group_id} to consumer group because an "
                "assignment carries user data (a custom client-side assignor)."))
        owned = {(t, p) for t, ps in assigned.items() for p in ps}
        if owned & seen:  # a client-side assignor gave a partition twice: cannot be epochs
            raise CoordinatorError(GROUP_ID_NOT_FOUND, (
                f"Cannot upgrade the classic group {group_id} to consumer group because a "
                "partition is assigned to more than one member."))
        seen |= owned
        out.append(ConsumerGroupMember(
            m.member_id, member_epoch=generation, previous_member_epoch=generation,
            state=MemberState.STABLE, instance_id=m.instance_id,
            rack_id=getattr(subscription, "rack_id", None),
            rebalance_timeout_ms=m.rebalance_timeout_ms, client_id=m.client_id,
            client_host=m.client_host, subscribed_topic_names=frozenset(subscription.topics),
            assigned_partitions=assigned,
            classic_member_metadata=ClassicMemberMetadata(
                m.session_timeout_ms, tuple(ClassicProtocol(n, md) for n, md in m.protocols))))
    return out


def upgrade_records(group_id: str, generation: int, members: list[ConsumerGroupMember]
                    ) -> list[Record]:
    """Records creating the consumer group (after the classic GroupMetadata tombstone):
    member subscriptions, group epoch, targets (= current assignments), target epoch, current
    assignments — Kafka's order."""
    return ([records.member_subscription(group_id, m) for m in members]
            + [records.group_epoch(group_id, generation)]
            + [records.target_member(group_id, m.member_id, m.assigned_partitions)
               for m in members]
            + [records.target_epoch(group_id, generation)]
            + [records.current_assignment(group_id, m) for m in members])


def classic_assignment_bytes(member: ConsumerGroupMember, name_of: TopicNameOf) -> bytes:
    """SyncGroup assignment of a classic member of a consumer group: its assigned partitions,
    in the ConsumerProtocolAssignment version of its (first) subscription metadata."""
    meta = member.classic_member_metadata
    version = (_subscription_version(meta.supported_protocols[0].metadata)
               if meta is not None and meta.supported_protocols else HIGHEST_PROTOCOL_VERSION)
    return write_assignment(_by_name(member.assigned_partitions, name_of), version)


def select_classic_protocol(members: Iterable[ConsumerGroupMember]) -> str | None:
    """Kafka's ClassicGroup.selectProtocol: among the protocols every member supports, the one
    most members list first (ties: by name); None when they share none."""
    prefs = [[p.name for p in m.classic_member_metadata.supported_protocols]
             for m in members if m.classic_member_metadata is not None]
    if not prefs:
        return None
    common = set(prefs[0]).intersection(*prefs[1:])
    votes: dict[str, int] = {}
    for names in prefs:
        vote = next((n for n in names if n in common), None)
        if vote is not None:
            votes[vote] = votes.get(vote, 0) + 1
    return min(votes, key=lambda n: (-votes[n], n)) if votes else None


def downgrade_records(group: ConsumerGroup, leaving_member_id: str, name_of: TopicNameOf,
                      now_ms: int, joining: ConsumerGroupMember | None = None) -> list[Record]:
    """The last consumer-protocol member leaves (or a classic static member replaces it,
    ``joining``): tombstones of the whole consumer group, then a GroupMetadata record of a
    STABLE classic group at the group epoch whose members keep their target assignments
    (Kafka's ClassicGroup.fromConsumerGroup + createClassicGroupRecords). The caller checks
    the policy and group.max.size, builds the in-memory classic group and starts a rebalance."""
    remaining = [m for mid, m in sorted(group.members.items()) if mid != leaving_member_id]
    if joining is not None:
        remaining.append(joining)
    if any(m.classic_member_metadata is None for m in remaining):
        raise ValueError("every remaining member must use the classic protocol")
    protocol = select_classic_protocol(remaining)
    members = []
    for m in remaining:
        meta = dict((p.name, p.metadata) for p in m.classic_member_metadata.supported_protocols)  # type: ignore[union-attr]  # checked above: every remaining member has classic metadata
        subscription = meta.get(protocol or "", b"")
        source = leaving_member_id if joining is not None and m is joining else m.member_id
        assignment = write_assignment(_by_name(group.target_of(source), name_of),
                                      _subscription_version(subscription))
        members.append(MemberMetadata(
            m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
            m.classic_member_metadata.session_timeout_ms, subscription, assignment))  # type: ignore[union-attr]  # checked above: every remaining member has classic metadata
    ids = [m.member_id if m.member_id != leaving_member_id or joining is None else joining.member_id
           for m in group.members.values()]
    out = records.group_deletion(group.group_id, ids, group.resolved_regexes)
    value = GroupMetadataValue("consumer", group.group_epoch, protocol,
                               members[0].member_id if members else None, now_ms, tuple(members))
    out.append((GroupMetadataKey(group.group_id), value))  # type: ignore[arg-type]  # the downgrade's last record is the classic group's, written among the consumer group's tombstones
    return out


def _by_name(assignment: Assignment, name_of: TopicNameOf
             ) -> tuple[tuple[str, tuple[int, ...]], ...]:
    out = []
    for topic_id in sorted(assignment):
        name = name_of(topic_id)
        if name is not None:
            out.append((name, tuple(sorted(assignment[topic_id]))))
    return tuple(out)
