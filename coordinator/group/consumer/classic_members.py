"""Classic-protocol members of a consumer group (KIP-848 §6, mixed groups during a rolling
upgrade): JoinGroup, SyncGroup, Heartbeat and LeaveGroup against a non-empty consumer group, as
pure operations like ``heartbeat`` (Kafka's classicGroupJoinToConsumerGroup,
classicGroupSyncToConsumerGroup, classicGroupHeartbeatToConsumerGroup and the consumer branch of
classicGroupLeave). The group is read, never changed: records come back to be replayed.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace

from kafkette.coordinator.runtime.error_codes import (
    FENCED_INSTANCE_ID,
    GROUP_MAX_SIZE_REACHED,
    ILLEGAL_GENERATION,
    INCONSISTENT_GROUP_PROTOCOL,
    MEMBER_ID_REQUIRED,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
    CoordinatorError,
)
from kafkette.protocol.consumer_group_records import ClassicMemberMetadata, ClassicProtocol
from kafkette.protocol.consumer_protocol import ConsumerProtocolError

from .consumer_group_state import ConsumerGroup, TopicLookup
from .consumer_record_builders import Record
from .heartbeat import (
    HeartbeatRequest,
    HeartbeatSettings,
    _existing_member,
    apply_member_update,
    fence_member,
)
from .member import Assignment, ConsumerGroupMember, MemberState
from .migration import classic_assignment_bytes, read_subscription

CONSUMER_PROTOCOL_TYPE = "consumer"


@dataclass(frozen=True, slots=True)
class ClassicJoin:
    group_id: str
    member_id: str
    instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    client_id: str
    client_host: str
    api_version: int


@dataclass(frozen=True, slots=True)
class ClassicJoined:
    records: list[Record]
    member_id: str
    generation: int  # the member epoch
    protocol_name: str
    replaced_member_id: str | None = None
    member: ConsumerGroupMember | None = None  # as reconciled


def _validate_member(group: ConsumerGroup, member_id: str,
                     instance_id: str | None) -> ConsumerGroupMember:
    """Kafka's validateConsumerGroupMember + throwIfMemberDoesNotUseClassicProtocol."""
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            raise CoordinatorError(UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of "
                                   f"group {group.group_id}.")
    else:
        member = group.static_member(instance_id)
        if member is None:
            raise CoordinatorError(UNKNOWN_MEMBER_ID, f"Member with instance id {instance_id} "
                                   f"is not a member of group {group.group_id}.")
        if member.member_id != member_id:
            raise CoordinatorError(FENCED_INSTANCE_ID, (
                f"Static member {member_id} with instance id {instance_id} was fenced by "
                f"member {member.member_id}."))
    if not member.uses_classic_protocol:
        raise CoordinatorError(UNKNOWN_MEMBER_ID, f"Member {member_id} does not use the "
                               "classic protocol.")
    return member


def _check_generation(member: ConsumerGroupMember, generation: int) -> None:
    if generation != member.member_epoch:
        raise CoordinatorError(ILLEGAL_GENERATION, (
            f"The member {member.member_id} uses generation {generation} while the member "
            f"epoch is {member.member_epoch}."))


def _owned(subscription: object, lookup: TopicLookup) -> Assignment:
    owned: dict[uuid.UUID, frozenset[int]] = {}
    for tp in getattr(subscription, "owned_partitions", None) or ():
        found = lookup(tp.topic)
        if found is not None:
            owned[found[0]] = owned.get(found[0], frozenset()) | frozenset(
                int(p) for p in tp.partitions)
    return owned


def classic_join(group: ConsumerGroup, request: ClassicJoin, settings: HeartbeatSettings,
                 lookup: TopicLookup, *, metadata_version: int = 0) -> ClassicJoined:
    """A classic JoinGroup to a non-empty consumer group. CoordinatorError(MEMBER_ID_REQUIRED)
    carries the new member id as its message."""
    member_id = request.member_id
    unknown = member_id == ""
    if unknown:
        member_id = str(uuid.uuid4())
    if len(group.members) >= settings.max_size and member_id not in group.members:
        raise CoordinatorError(GROUP_MAX_SIZE_REACHED, (
            "The consumer group has reached its maximum capacity of "
            f"{settings.max_size} members."))
    names = [name for name, _ in request.protocols]
    if request.protocol_type != CONSUMER_PROTOCOL_TYPE or not names or not _supported(
            group, member_id, names):
        raise CoordinatorError(INCONSISTENT_GROUP_PROTOCOL, (
            f"Member {member_id} uses a protocol type or protocols the group's classic "
            "members do not support."))
    if unknown and request.instance_id is None and request.api_version >= 4:
        raise CoordinatorError(MEMBER_ID_REQUIRED, member_id)
    try:
        _version, subscription = read_subscription(request.protocols[0][1])
    except ConsumerProtocolError as exc:
        raise CoordinatorError(INCONSISTENT_GROUP_PROTOCOL,
                               "The embedded consumer protocol is malformed.") from exc

    out: list[Record] = []
    as_heartbeat = HeartbeatRequest(group.group_id, member_id, 0,
                                    instance_id=request.instance_id, owned={},
                                    rebalance_timeout_ms=request.rebalance_timeout_ms)
    member, replaced_id = _existing_member(group, as_heartbeat, out)
    updated = replace(member.with_request(
        instance_id=request.instance_id,
        rack_id=getattr(subscription, "rack_id", None) or None,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        subscribed_topic_names=tuple(subscription.topics),
        client_id=request.client_id, client_host=request.client_host),
        classic_member_metadata=ClassicMemberMetadata(
            request.session_timeout_ms,
            tuple(ClassicProtocol(n, m) for n, m in request.protocols)))
    applied = apply_member_update(group, member, updated, replaced_id,
                                  _owned(subscription, lookup), settings, lookup, out,
                                  metadata_version=metadata_version)
    return ClassicJoined(out, applied.member.member_id, applied.member.member_epoch, names[0],
                         replaced_id, applied.member)


def _supported(group: ConsumerGroup, member_id: str, names: Sequence[str]) -> bool:
    """Every other classic member supports one of ``names`` in common (Kafka's
    throwIfClassicProtocolIsNotSupported)."""
    common = set(names)
    for other in group.members.values():
        meta = other.classic_member_metadata
        if other.member_id == member_id or meta is None:
            continue
        common &= {p.name for p in meta.supported_protocols}
    return bool(common)


def classic_sync(group: ConsumerGroup, member_id: str, instance_id: str | None,
                 generation: int, protocol_type: str | None, protocol_name: str | None,
                 name_of) -> tuple[ConsumerGroupMember, bytes]:
    """SyncGroup of a classic member: (member, its assigned partitions as bytes)."""
    member = _validate_member(group, member_id, instance_id)
    _check_generation(member, generation)
    meta = member.classic_member_metadata
    assert meta is not None
    if (protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE) or (
            protocol_name is not None
            and protocol_name != meta.supported_protocols[0].name):
        raise CoordinatorError(INCONSISTENT_GROUP_PROTOCOL,
                               "The protocol type or name does not match the member's.")
    if group.group_epoch > member.member_epoch and \
            member.state != MemberState.UNREVOKED_PARTITIONS:
        raise CoordinatorError(REBALANCE_IN_PROGRESS, (
            f"A new rebalance is triggered in group {group.group_id} and member {member_id} "
            "should rejoin to catch up."))
    return member, classic_assignment_bytes(member, name_of)


def waiting_on_unreleased_partition(group: ConsumerGroup, member: ConsumerGroupMember) -> bool:
    """A partition of the member's target it does not have yet is still owned by another."""
    for topic_id, partitions in group.target_of(member.member_id).items():
        have = member.assigned_partitions.get(topic_id, frozenset())
        for p in partitions - have:
            if group.partition_epoch(topic_id, p) != -1:
                return True
    return False


def classic_heartbeat(group: ConsumerGroup, member_id: str, instance_id: str | None,
                      generation: int) -> tuple[ConsumerGroupMember, int]:
    """(member, error): REBALANCE_IN_PROGRESS when it must rejoin (epoch behind, partitions to
    revoke, or partitions it waited for are free now)."""
    member = _validate_member(group, member_id, instance_id)
    _check_generation(member, generation)
    rejoin = (member.member_epoch < group.group_epoch
              or member.state == MemberState.UNREVOKED_PARTITIONS
              or (member.state == MemberState.UNRELEASED_PARTITIONS
                  and not waiting_on_unreleased_partition(group, member)))
    return member, REBALANCE_IN_PROGRESS if rejoin else 0


def classic_leave(group: ConsumerGroup, members: list[tuple[str, str | None]],
                  lookup: TopicLookup) -> tuple[list[Record], list[tuple[str, str | None, int]],
                                                list[str]]:
    """LeaveGroup against a consumer group (any member, KAFKA-18188): records, per-member
    results and the ids of the members removed."""
    out: list[Record] = []
    results: list[tuple[str, str | None, int]] = []
    removed: list[str] = []
    view = group
    for member_id, instance_id in members:
        if instance_id is None:
            target = group.members.get(member_id)
            code = 0 if target is not None else UNKNOWN_MEMBER_ID
        else:
            target = group.static_member(instance_id)
            if target is None:
                code = UNKNOWN_MEMBER_ID
            elif member_id and target.member_id != member_id:
                code, target = FENCED_INSTANCE_ID, None
            else:
                code = 0
        results.append((member_id, instance_id, code))
        if target is None or target.member_id in removed:
            continue
        # fence one by one against a preview of the group (epochs bump once per member)
        records = fence_member(view, target.member_id, lookup)
        out += records
        removed.append(target.member_id)
        view = _preview(group, out)
    return out, results, removed


def _preview(group: ConsumerGroup, out: list[Record]) -> ConsumerGroup:
    copy = ConsumerGroup(group.group_id)
    for key, value in _records_of(group) + out:
        copy.replay(key, value)
    return copy


def _records_of(group: ConsumerGroup) -> list[Record]:
    """The records that rebuild ``group`` (its current state, for previews)."""
    from . import consumer_record_builders as records

    gid = group.group_id
    out: list[Record] = [records.member_subscription(gid, m) for m in group.members.values()]
    out += [records.resolved_regex(gid, r, v.topics, v.version, v.timestamp)
            for r, v in group.resolved_regexes.items()]
    out.append(records.subscription_metadata(gid, group.subscription_metadata))
    out.append(records.group_epoch(gid, group.group_epoch))
    out += [records.target_member(gid, m, a) for m, a in group.target.items()]
    if group.assignment_epoch != -1:
        out.append(records.target_epoch(gid, group.assignment_epoch))
    out += [records.current_assignment(gid, m) for m in group.members.values()]
    return out
