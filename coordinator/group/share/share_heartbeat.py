"""ShareGroupHeartbeat as a pure operation (KIP-932, Kafka's GroupMetadataManager.
shareGroupHeartbeat / shareGroupLeave / shareGroupFenceMember).

``heartbeat(group, request, settings, lookup)`` reads the group (never mutates it) and returns
the records to append, in Kafka's order — member metadata (10), state partition metadata (15),
group epoch (11), target members (13) and target epoch (12), the member's current assignment
(14) — and the response fields. The runtime replays the records into the shard. Errors are
raised as ``CoordinatorError`` before any record exists.

Share-partition initialisation is done in the heartbeat that first subscribes to a partition:
it is written as initialised (record 15) at once and assigned in the same heartbeat; the
broker's share partitions create their state lazily on first fetch.
"""

from __future__ import annotations

import uuid
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from kafkette.coordinator.runtime.error_codes import (
    FENCED_MEMBER_EPOCH,
    GROUP_ID_NOT_FOUND,
    GROUP_MAX_SIZE_REACHED,
    INVALID_REQUEST,
    UNKNOWN_MEMBER_ID,
    CoordinatorError,
)

from ..assignor.spec import Assignment
from . import simple_assignor
from .share_group import (
    Record,
    ShareGroup,
    ShareMember,
    current_assignment,
    group_epoch,
    member_metadata,
    member_removal,
    state_partitions,
    target_epoch,
    target_member,
)

LEAVE_GROUP_MEMBER_EPOCH = -1

# topic name -> (topic id, partition count), None when there is no such topic
TopicLookup = Callable[[str], "tuple[uuid.UUID, int] | None"]


@dataclass(frozen=True, slots=True)
class ShareHeartbeatRequest:
    """ShareGroupHeartbeat v1; ``subscribed_topic_names`` None = unchanged."""
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    subscribed_topic_names: tuple[str, ...] | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class ShareHeartbeatSettings:
    heartbeat_interval_ms: int = 5000  # group.share.heartbeat.interval.ms (or the group's own)
    max_size: int = 200  # group.share.max.size


@dataclass(frozen=True, slots=True)
class ShareHeartbeatResult:
    records: list[Record]
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: Assignment | None  # None = not sent in this response
    left: bool = False  # the member left (epoch -1): cancel its session timer


def _invalid(message: str) -> CoordinatorError:
    return CoordinatorError(INVALID_REQUEST, message)


def validate_request(request: ShareHeartbeatRequest) -> None:
    """Kafka's throwIfShareGroupHeartbeatRequestIsInvalid, same order."""
    if not request.member_id.strip():
        raise _invalid("MemberId can't be empty.")
    if not request.group_id.strip():
        raise _invalid("GroupId can't be empty.")
    if request.rack_id is not None and not request.rack_id.strip():
        raise _invalid("RackId can't be empty.")
    if request.member_epoch == 0:
        if not request.subscribed_topic_names:
            raise _invalid("SubscribedTopicNames must be set in first request.")
    elif request.member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
        raise _invalid("MemberEpoch is invalid.")


def _check_epoch(member: ShareMember, received: int) -> None:
    if received > member.member_epoch:
        raise CoordinatorError(FENCED_MEMBER_EPOCH, (
            f"The share group member has a greater member epoch ({received}) than the one "
            f"known by the group coordinator ({member.member_epoch}). The member must abandon "
            "all its partitions and rejoin."))
    if received < member.member_epoch and received != member.previous_member_epoch:
        # the previous epoch is accepted: the response with the bumped one may have been lost
        raise CoordinatorError(FENCED_MEMBER_EPOCH, (
            f"The share group member has a smaller member epoch ({received}) than the one "
            f"known by the group coordinator ({member.member_epoch}), and it does not match the "
            f"previous member epoch ({member.previous_member_epoch}). The member must abandon "
            "all its partitions and rejoin."))


def not_found(group_id: str) -> CoordinatorError:
    return CoordinatorError(GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")


def not_a_share_group(group_id: str) -> CoordinatorError:
    return CoordinatorError(GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")


def heartbeat(group: ShareGroup | None, request: ShareHeartbeatRequest,
              settings: ShareHeartbeatSettings, lookup: TopicLookup, *,
              metadata_changed: bool = True) -> ShareHeartbeatResult:
    """One ShareGroupHeartbeat against ``group`` (None = no group with this id; the caller
    raises ``not_a_share_group`` for an id of another type). ``metadata_changed`` False: no
    topic was created, deleted or grew since this group's last heartbeat (the steady path)."""
    validate_request(request)
    epoch = request.member_epoch
    if epoch == LEAVE_GROUP_MEMBER_EPOCH:
        if group is None:
            raise not_found(request.group_id)
        if request.member_id not in group.members:
            raise _unknown(request)
        return ShareHeartbeatResult(fence_member(group, request.member_id, lookup),
                                    request.member_id, LEAVE_GROUP_MEMBER_EPOCH, 0, None,
                                    left=True)
    if group is None:
        if epoch != 0:
            raise not_found(request.group_id)
        group = ShareGroup(request.group_id)
    member = group.members.get(request.member_id)
    if member is None:
        if epoch != 0:
            raise _unknown(request)
        if len(group.members) >= settings.max_size:
            raise CoordinatorError(GROUP_MAX_SIZE_REACHED, (
                f"The share group has reached its maximum capacity of {settings.max_size} "
                "members."))
        member = ShareMember(request.member_id)
        new_member = True
    else:
        new_member = False
        if epoch != 0:  # a known member may rejoin with epoch 0 (as KIP-848's KAFKA-19233)
            _check_epoch(member, epoch)
            if not metadata_changed:
                steady = _steady(group, member, request, settings)
                if steady is not None:
                    return steady

    out: list[Record] = []
    gid = group.group_id
    updated = replace(
        member,
        rack_id=member.rack_id if request.rack_id is None else request.rack_id,
        client_id=request.client_id, client_host=request.client_host,
        subscribed_topic_names=(member.subscribed_topic_names
                                if request.subscribed_topic_names is None
                                else tuple(sorted(set(request.subscribed_topic_names)))))
    bump = group.group_epoch == 0
    if new_member or updated.metadata_value() != member.metadata_value():
        out.append(member_metadata(gid, updated))
        bump = bump or updated.subscribed_topic_names != member.subscribed_topic_names \
            or new_member

    members = dict(group.members)
    members[updated.member_id] = updated
    initialized, metadata_hash = _subscribed_partitions(members, lookup, group.initialized)
    if initialized != group.initialized:
        out.append(state_partitions(gid, initialized))
        bump = True
    if metadata_hash != group.metadata_hash:
        bump = True
    new_epoch = group.group_epoch + 1 if bump else group.group_epoch
    if bump:
        out.append(group_epoch(gid, new_epoch, metadata_hash))

    if new_epoch > group.assignment_epoch:
        target = _new_target(group, members, initialized, lookup, out)
        assigned_epoch = new_epoch
        out.append(target_epoch(gid, new_epoch))
        own_target = target.get(updated.member_id, {})
    else:
        assigned_epoch = group.assignment_epoch
        own_target = group.target.get(updated.member_id, {})

    reconciled = updated
    if updated.member_epoch != assigned_epoch or updated.assigned != own_target:
        reconciled = replace(updated, member_epoch=assigned_epoch,
                             previous_member_epoch=updated.member_epoch, assigned=own_target)
        out.append(current_assignment(gid, reconciled))
    # Kafka sends the assignment to a member that (re)joins and when it changed
    return ShareHeartbeatResult(
        out, reconciled.member_id, reconciled.member_epoch, settings.heartbeat_interval_ms,
        reconciled.assigned if epoch == 0 or reconciled.assigned != member.assigned else None)


def _unknown(request: ShareHeartbeatRequest) -> CoordinatorError:
    return CoordinatorError(UNKNOWN_MEMBER_ID, (
        f"Member {request.member_id} is not a member of group {request.group_id}."))


def _steady(group: ShareGroup, member: ShareMember, request: ShareHeartbeatRequest,
            settings: ShareHeartbeatSettings) -> ShareHeartbeatResult | None:
    """The regular heartbeat: a known member at the current epoch, reconciled, nothing in the
    request changes it. The general path gives the same answer (no records); None = take it."""
    if request.member_epoch != member.member_epoch \
            or group.group_epoch != group.assignment_epoch \
            or member.member_epoch != group.assignment_epoch \
            or request.subscribed_topic_names is not None \
            or (request.rack_id is not None and request.rack_id != member.rack_id) \
            or request.client_id != member.client_id \
            or request.client_host != member.client_host \
            or member.assigned != group.target.get(member.member_id, {}):
        return None
    return ShareHeartbeatResult([], member.member_id, member.member_epoch,
                                settings.heartbeat_interval_ms, None)


def _subscribed_partitions(
        members: Mapping[str, ShareMember], lookup: TopicLookup,
        initialized: Mapping[uuid.UUID, tuple[str, frozenset[int]]] | None = None,
) -> tuple[dict[uuid.UUID, tuple[str, frozenset[int]]], int]:
    """The initialised share-partitions: those already initialised whose topic still exists,
    plus every partition of every subscribed topic (initialised at once); and a hash of the
    subscribed topics' metadata (names, ids, partition counts)."""
    out: dict[uuid.UUID, tuple[str, frozenset[int]]] = {}
    for topic_id, (name, partitions) in (initialized or {}).items():
        found = lookup(name)
        if found is not None and found[0] == topic_id:
            out[topic_id] = (name, frozenset(p for p in partitions if p < found[1]))
    digest = 0
    for name in sorted({n for m in members.values() for n in m.subscribed_topic_names}):
        found = lookup(name)
        if found is None:
            continue
        topic_id, count = found
        out[topic_id] = (name, frozenset(range(count)))
        digest = zlib.crc32(f"{name}:{topic_id}:{count}".encode(), digest)
    return out, digest


def _new_target(group: ShareGroup, members: Mapping[str, ShareMember],
                initialized: Mapping[uuid.UUID, tuple[str, frozenset[int]]],
                lookup: TopicLookup, out: list[Record]) -> dict[str, Assignment]:
    """Run the simple assignor over the initialised partitions; record 13 for every member
    whose target changed."""
    subscriptions: dict[str, frozenset[uuid.UUID]] = {}
    for member_id, m in members.items():
        ids = set()
        for name in m.subscribed_topic_names:
            found = lookup(name)
            if found is not None:
                ids.add(found[0])
        subscriptions[member_id] = frozenset(ids)
    partitions = {t: tuple(sorted(ps)) for t, (_name, ps) in initialized.items()}
    target = simple_assignor.assign(subscriptions, partitions, group.target)
    for member_id in sorted(target):
        if target[member_id] != group.target.get(member_id, {}) or member_id not in group.target:
            out.append(target_member(group.group_id, member_id, target[member_id]))
    return target


def fence_member(group: ShareGroup, member_id: str, lookup: TopicLookup) -> list[Record]:
    """Records removing a member (leave or session timeout): its tombstones (14, 13, 10) and the
    group epoch bump (11). Empty when the member is gone already (timers)."""
    if member_id not in group.members:
        return []
    out = member_removal(group.group_id, member_id)
    remaining = {m: v for m, v in group.members.items() if m != member_id}
    _initialized, metadata_hash = _subscribed_partitions(remaining, lookup)
    out.append(group_epoch(group.group_id, group.group_epoch + 1, metadata_hash))
    return out
