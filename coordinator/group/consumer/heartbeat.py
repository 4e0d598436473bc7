"""ConsumerGroupHeartbeat as a pure operation (KIP-848 §4.3-4.10, Kafka's
GroupMetadataManager.consumerGroupHeartbeat / consumerGroupLeave / fence).

``heartbeat(group, request, ...)`` reads the group (it never mutates it) and returns the records
to append — all of one heartbeat form one atomic batch — the response fields, and what the
runtime must do with its timers. The runtime replays the records into the shard (creating the
ConsumerGroup on the first record of an unknown group id) and answers once they are durable.
Errors are raised as ``CoordinatorError`` before any record exists.

Classic groups and migration are the caller's: pass ``group=None`` for an unknown id (or an
empty classic group, after writing its tombstones); a non-empty classic group is
GROUP_ID_NOT_FOUND until online upgrade exists.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from kafkette.coordinator.group.assignor.spec import (
    Assignment,
    PartitionAssignor,
    PartitionAssignorError,
)
from kafkette.coordinator.runtime.error_codes import (
    FENCED_INSTANCE_ID,
    GROUP_ID_NOT_FOUND,
    GROUP_MAX_SIZE_REACHED,
    INVALID_REQUEST,
    UNKNOWN_MEMBER_ID,
    UNKNOWN_SERVER_ERROR,
    UNRELEASED_INSTANCE_ID,
    UNSUPPORTED_ASSIGNOR,
    CoordinatorError,
)

from . import consumer_record_builders as records
from .consumer_group_state import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroup,
    TopicLookup,
    check_member_epoch,
)
from .consumer_record_builders import Record
from .member import ConsumerGroupMember, MemberState, assignment_from_pairs
from .reconcile import reconcile
from .regex import TopicFilter, resolve_regexes, validate_regex
from .target import build_target_assignment

CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION = 1


@dataclass(slots=True)
class HeartbeatRequest:
    """ConsumerGroupHeartbeat v0/v1 fields; None / -1 = unchanged since the last heartbeat.
    Treated as immutable (``replace``); not frozen: one is built per heartbeat, and a frozen
    dataclass's __init__ costs several times more."""
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Assignment | None = None  # TopicPartitions
    api_version: int = 1
    client_id: str = ""
    client_host: str = ""
    # which topics this member may see (the broker's: those its principal may DESCRIBE);
    # a regex resolution this heartbeat asks for keeps only those. None = every topic.
    topic_filter: TopicFilter | None = field(default=None, compare=False, repr=False)

    @staticmethod
    def owned_from(topic_partitions: Iterable[tuple[uuid.UUID, Iterable[int]]] | None
                   ) -> Assignment | None:
        """The request's TopicPartitions as an assignment (None stays None)."""
        return None if topic_partitions is None else assignment_from_pairs(topic_partitions)


@dataclass(frozen=True, slots=True)
class HeartbeatSettings:
    assignors: Sequence[PartitionAssignor]  # first = default (group.consumer.assignors)
    heartbeat_interval_ms: int = 5000
    max_size: int = 2**31 - 1  # group.consumer.max.size
    assignor_names: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "assignor_names", tuple(a.name for a in self.assignors))

    def assignor(self, name: str) -> PartitionAssignor:
        for assignor in self.assignors:
            if assignor.name == name:
                return assignor
        return self.assignors[0]


@dataclass(slots=True)
class HeartbeatResult:  # immutable by convention; not frozen (built per heartbeat, see above)
    records: list[Record]
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: Assignment | None  # None = not sent in this response
    # timers of the member (keys: session-timeout-<group>-<member>, rebalance-timeout-...)
    arm_session_timeout: bool = True  # re-arm; False with cancel_timers on a leave
    arm_rebalance_timeout_ms: int | None = None  # entered UNREVOKED_PARTITIONS at member_epoch
    cancel_rebalance_timeout: bool = False  # left UNREVOKED_PARTITIONS
    cancel_timers: bool = False  # the member left (epoch -1): cancel all of its timers
    replaced_member_id: str | None = None  # static member replaced: cancel its timers
    regex_refresh_needed: bool = False  # run ``refresh_regexes`` for this group
    # the subscription metadata was recomputed: the group epoch it is current for (Kafka's
    # setMetadataRefreshDeadline), None when this heartbeat did not look at the topics
    metadata_refreshed_epoch: int | None = None


def _invalid(message: str) -> CoordinatorError:
    return CoordinatorError(INVALID_REQUEST, message)


def _blank(value: str) -> bool:
    return not value.strip()


def validate_request(request: HeartbeatRequest, assignor_names: Sequence[str]) -> None:
    """Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid, same order and messages."""
    invalid = _invalid
    blank = _blank  # null fields are unchanged, not blank: tested for None first, inline
    epoch = request.member_epoch
    member_id = request.member_id
    if ((request.api_version >= CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION
         or epoch > 0 or epoch == LEAVE_GROUP_MEMBER_EPOCH)
            and member_id is not None and blank(member_id)):
        raise invalid("MemberId can't be empty.")
    if request.group_id is not None and blank(request.group_id):
        raise invalid("GroupId can't be empty.")
    if request.instance_id is not None and blank(request.instance_id):
        raise invalid("InstanceId can't be empty.")
    if request.rack_id is not None and blank(request.rack_id):
        raise invalid("RackId can't be empty.")
    if epoch == 0:
        if request.rebalance_timeout_ms == -1:
            raise invalid("RebalanceTimeoutMs must be provided in first request.")
        if request.owned is None or request.owned:
            raise invalid("TopicPartitions must be empty when (re-)joining.")
        if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
            raise invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null "
                          "when (re-)joining.")
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if request.instance_id is None:
            raise invalid("InstanceId can't be null.")
    elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise invalid("MemberEpoch is invalid.")
    if request.server_assignor is not None and request.server_assignor not in assignor_names:
        raise CoordinatorError(UNSUPPORTED_ASSIGNOR, (
            f"ServerAssignor {request.server_assignor} is not supported. "
            f"Supported assignors: {', '.join(assignor_names)}."))


def _unknown_member(group: ConsumerGroup, member_id: str) -> CoordinatorError:
    return CoordinatorError(UNKNOWN_MEMBER_ID,
                            f"Member {member_id} is not a member of group {group.group_id}.")


def _existing_member(group: ConsumerGroup, request: HeartbeatRequest,
                     out: list[Record]) -> tuple[ConsumerGroupMember, str | None]:
    """The member the heartbeat is about (new when joining), and the id of a static member it
    replaces (its replacement records are appended to ``out``)."""
    joining = request.member_epoch == 0
    member_id = request.member_id
    if request.instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            if not joining:
                raise _unknown_member(group, member_id)
            return ConsumerGroupMember(member_id), None
        if not joining:  # KAFKA-19233: a known member may rejoin with epoch 0
            check_member_epoch(member, request.member_epoch, request.owned)
        return member, None

    holder = group.static_member(request.instance_id)
    if not joining:
        if holder is None:
            raise CoordinatorError(UNKNOWN_MEMBER_ID,
                                   f"Instance id {request.instance_id} is unknown.")
        if holder.member_id != member_id:
            raise CoordinatorError(FENCED_INSTANCE_ID, (
                f"Static member {member_id} with instance id {request.instance_id} was fenced "
                f"by member {holder.member_id}."))
        check_member_epoch(holder, request.member_epoch, request.owned)
        return holder, None
    if holder is None:
        return group.members.get(member_id) or ConsumerGroupMember(member_id), None
    if holder.member_id == member_id:
        return holder, None  # the same incarnation rejoins
    if not holder.uses_classic_protocol and holder.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise CoordinatorError(UNRELEASED_INSTANCE_ID, (
            f"Static member {member_id} with instance id {request.instance_id} cannot join the "
            f"group because the instance id is owned by {holder.member_id} member."))
    new = replace(holder.with_member_id(member_id), member_epoch=0, previous_member_epoch=0)
    out += records.member_removal(group.group_id, holder.member_id)
    out += [records.member_subscription(group.group_id, new),
            records.target_member(group.group_id, member_id, group.target_of(holder.member_id)),
            records.current_assignment(group.group_id, new)]
    return new, holder.member_id


def heartbeat(group: ConsumerGroup | None, request: HeartbeatRequest,
              settings: HeartbeatSettings, lookup: TopicLookup, *,
              metadata_version: int = 0, metadata_changed: bool | None = None
              ) -> HeartbeatResult:
    """One ConsumerGroupHeartbeat against ``group`` (None = no group with this id).

    ``lookup`` maps a topic name to (topic id, partition count); ``metadata_version`` (a
    counter bumped on topic creation/deletion) tells whether resolved regexes are stale;
    ``metadata_changed`` = the group's subscription metadata may be stale (Kafka's
    ``hasMetadataExpired``: a topic was created, deleted or grew since the group last computed
    it): True recomputes it from ``lookup`` (O(members + topics)) and writes it, with a group
    epoch bump, if it differs; False trusts it (the regular heartbeat); None = True when the
    group has members.
    """
    validate_request(request, settings.assignor_names)
    if group is not None and not metadata_changed and metadata_changed is not None:
        steady = _steady(group, request, settings)
        if steady is not None:
            return steady
    if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
        if group is None:
            raise CoordinatorError(GROUP_ID_NOT_FOUND,
                                   f"Consumer group {request.group_id} not found.")
        return leave(group, request, settings, lookup)

    if group is None:
        if request.member_epoch != 0:
            raise CoordinatorError(GROUP_ID_NOT_FOUND,
                                   f"Consumer group {request.group_id} not found.")
        group = ConsumerGroup(request.group_id)
    if len(group.members) >= settings.max_size and (
            not request.member_id or request.member_id not in group.members):
        raise CoordinatorError(GROUP_MAX_SIZE_REACHED, (
            "The consumer group has reached its maximum capacity of "
            f"{settings.max_size} members."))
    if not request.member_id:  # heartbeat v0: the coordinator names the member
        request = replace(request, member_id=str(uuid.uuid4()))

    out: list[Record] = []
    member, replaced_id = _existing_member(group, request, out)
    updated = member.with_request(
        instance_id=request.instance_id, rack_id=request.rack_id,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        subscribed_topic_names=request.subscribed_topic_names,
        subscribed_topic_regex=request.subscribed_topic_regex,
        server_assignor=request.server_assignor,
        client_id=request.client_id, client_host=request.client_host)
    applied = apply_member_update(group, member, updated, replaced_id, request.owned, settings,
                                  lookup, out, metadata_version=metadata_version,
                                  metadata_changed=metadata_changed)
    result_member = applied.member
    arm_rebalance = applied.arm_rebalance_timeout_ms
    cancel_rebalance = applied.cancel_rebalance_timeout
    refresh = applied.regex_refresh_needed

    full = request.member_epoch == 0 or (
        request.rebalance_timeout_ms != -1 and request.owned is not None
        and (request.subscribed_topic_names is not None
             or request.subscribed_topic_regex is not None))
    changed = result_member.assigned_partitions != member.assigned_partitions
    return HeartbeatResult(
        records=out, member_id=result_member.member_id, member_epoch=result_member.member_epoch,
        heartbeat_interval_ms=settings.heartbeat_interval_ms,
        assignment=result_member.assigned_partitions if full or changed else None,
        arm_rebalance_timeout_ms=arm_rebalance, cancel_rebalance_timeout=cancel_rebalance,
        replaced_member_id=replaced_id, regex_refresh_needed=refresh,
        metadata_refreshed_epoch=applied.metadata_refreshed_epoch)


def _steady(group: ConsumerGroup, request: HeartbeatRequest, settings: HeartbeatSettings
            ) -> HeartbeatResult | None:
    """The regular heartbeat, answered without the general path: a known member at its
    current epoch, nothing in the request changes it, fully reconciled to a target that is
    current (group epoch = assignment epoch), no regexes, subscription metadata not stale.
    The general path gives the same answer (no records, same epoch); None = take it."""
    member_epoch = request.member_epoch
    if member_epoch <= 0:
        return None
    if request.instance_id is None:
        member = group.members.get(request.member_id)
    else:
        member = group.static_member(request.instance_id)
    if member is None or member.member_id != request.member_id \
            or member.member_epoch != member_epoch or group.has_regex_subscribers:
        return None
    epoch = group.assignment_epoch
    if group.group_epoch != epoch or not member.is_reconciled_to(epoch):
        return None
    if request.instance_id is None and request.rack_id is None \
            and request.rebalance_timeout_ms == -1 and request.subscribed_topic_names is None \
            and request.subscribed_topic_regex is None and request.server_assignor is None \
            and member.classic_member_metadata is None and request.client_id == member.client_id \
            and request.client_host == member.client_host:
        pass  # every field unchanged (null/-1), same client: what with_request finds, cheaper
    elif member.with_request(
            instance_id=request.instance_id, rack_id=request.rack_id,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            subscribed_topic_names=request.subscribed_topic_names,
            subscribed_topic_regex=request.subscribed_topic_regex,
            server_assignor=request.server_assignor,
            client_id=request.client_id, client_host=request.client_host) is not member:
        return None
    full = (request.rebalance_timeout_ms != -1 and request.owned is not None
            and (request.subscribed_topic_names is not None
                 or request.subscribed_topic_regex is not None))
    return HeartbeatResult(
        records=[], member_id=member.member_id, member_epoch=member_epoch,
        heartbeat_interval_ms=settings.heartbeat_interval_ms,
        assignment=member.assigned_partitions if full else None)


@dataclass(slots=True)
class AppliedUpdate:
    member: ConsumerGroupMember  # reconciled
    arm_rebalance_timeout_ms: int | None
    cancel_rebalance_timeout: bool
    regex_refresh_needed: bool
    metadata_refreshed_epoch: int | None  # see HeartbeatResult


def apply_member_update(group: ConsumerGroup, member: ConsumerGroupMember,
                        updated: ConsumerGroupMember, replaced_id: str | None,
                        owned: Assignment | None, settings: HeartbeatSettings,
                        lookup: TopicLookup, out: list[Record], *, metadata_version: int = 0,
                        metadata_changed: bool | None = None) -> AppliedUpdate:
    """Steps 1-3 of a heartbeat (or of a classic JoinGroup to a consumer group) once the member
    is known: member record, epoch bump, new target, reconciliation; records go to ``out``."""
    if metadata_changed is None:
        metadata_changed = bool(group.members)
    group_id = group.group_id

    # 1. member record; bump on a new group or changed topic names / regex resolution
    bump = group.group_epoch == 0
    if updated is not member and updated != member:
        out.append(records.member_subscription(group_id, updated))
        bump = bump or updated.subscribed_topic_names != member.subscribed_topic_names
    regex_bump, refresh = _regex_changes(group, member, updated, out, metadata_version)
    bump = bump or regex_bump

    group_epoch = group.group_epoch
    metadata = group.subscription_metadata
    refreshed_epoch = None
    if bump or metadata_changed:
        # Kafka: the member's subscription changed or the group's metadata refresh deadline
        # passed (hasMetadataExpired); otherwise the stored subscription metadata stands
        metadata = group.compute_subscription_metadata(lookup, updated, replaced_id)
        if group.subscription_metadata_changed(metadata):
            out.append(records.subscription_metadata(group_id, metadata))
            bump = True
        if bump:
            group_epoch += 1
            out.append(records.group_epoch(group_id, group_epoch))
        refreshed_epoch = group_epoch

    # 2. a new target when the group epoch moved past the assignment epoch
    target: Mapping[uuid.UUID, frozenset[int]] | None
    if group_epoch > group.assignment_epoch:
        target_epoch = group_epoch
        target = _new_target(group, group_epoch, updated, replaced_id, metadata, settings, out)
    else:
        target_epoch = group.assignment_epoch
        target = group.target.get(updated.member_id)
        if target is None and replaced_id is not None:
            target = group.target_of(replaced_id)
        target = target or {}

    # 3. reconcile the member towards its target
    result_member = updated
    arm_rebalance = None
    cancel_rebalance = False
    if not updated.is_reconciled_to(target_epoch):
        reconciled = reconcile(updated, target_epoch, target,
                               _partition_epoch_without(group, replaced_id), owned)
        if reconciled != updated:
            out.append(records.current_assignment(group_id, reconciled))
            if not reconciled.uses_classic_protocol:
                if reconciled.state == MemberState.UNREVOKED_PARTITIONS:
                    arm_rebalance = reconciled.rebalance_timeout_ms
                else:
                    cancel_rebalance = True
        result_member = reconciled
    return AppliedUpdate(result_member, arm_rebalance, cancel_rebalance, refresh,
                         refreshed_epoch)


def _partition_epoch_without(group: ConsumerGroup, replaced_id: str | None):
    """Partition epochs as they will be once a replaced static member's tombstones apply."""
    if replaced_id is None:
        return group.partition_epoch
    old = group.members[replaced_id]
    freed = {(t, p) for a in (old.assigned_partitions, old.partitions_pending_revocation)
             for t, ps in a.items() for p in ps}

    def epoch(topic_id: uuid.UUID, partition: int) -> int:
        return -1 if (topic_id, partition) in freed else group.partition_epoch(topic_id, partition)
    return epoch


def _new_target(group: ConsumerGroup, group_epoch: int, updated: ConsumerGroupMember,
                replaced_id: str | None, metadata, settings: HeartbeatSettings,
                out: list[Record]) -> Assignment:
    name = group.preferred_assignor(settings.assignors[0].name, updated=updated)
    changes: dict[str, ConsumerGroupMember | None] = {updated.member_id: updated}
    if replaced_id is not None:
        changes[replaced_id] = None
    try:
        result = build_target_assignment(
            group_id=group.group_id, group_epoch=group_epoch, assignor=settings.assignor(name),
            members=group.members, target=group.target, topics=metadata,
            resolved_regexes={r: v.topics for r, v in group.resolved_regexes.items()},
            updated=changes, static_members=group.static_members)
    except PartitionAssignorError as exc:
        raise CoordinatorError(UNKNOWN_SERVER_ERROR, (
            f"Failed to compute a new target assignment for epoch {group_epoch}: {exc}")) from exc
    out += result.records
    return result.assignment.get(updated.member_id, {})


def _regex_changes(group: ConsumerGroup, member: ConsumerGroupMember,
                   updated: ConsumerGroupMember, out: list[Record],
                   metadata_version: int) -> tuple[bool, bool]:
    """Kafka's maybeUpdateRegularExpressions minus the executor throttling (the runtime's):
    returns (bump the group epoch, a regex refresh is needed)."""
    old, new = member.subscribed_topic_regex, updated.subscribed_topic_regex
    if old == new and not group.has_regex_subscribers:
        return False, False  # the regular heartbeat of a group without regexes
    subscribers = group.regex_subscribers()
    bump = refresh = False
    if old != new:
        if old and subscribers[old] == 1:
            out.append(records.resolved_regex_tombstone(group.group_id, old))
        if new:
            if subscribers[new] == 0:
                validate_regex(new)
                refresh = True
            else:
                bump = new in group.resolved_regexes
        if old:
            subscribers[old] -= 1
        if new:
            subscribers[new] += 1
    in_use = {r for r, n in subscribers.items() if n > 0}
    if in_use:
        refresh = refresh or len(in_use) != len(group.resolved_regexes) or any(
            v.version < metadata_version for v in group.resolved_regexes.values())
    return bump, refresh and bool(in_use)


def refresh_regexes(group: ConsumerGroup, lookup: TopicLookup, topic_names: Iterable[str],
                    metadata_version: int, now_ms: int,
                    topic_filter: TopicFilter | None = None) -> list[Record]:
    """Resolve every regex the group uses against ``topic_names`` (a write op of its own,
    Kafka's handleRegularExpressionsResult): one RegularExpression record per regex, then
    PartitionMetadata and a group epoch bump if a resolution changed the subscription.
    ``topic_filter`` is the one of the heartbeat that asked for the refresh: the matches it
    refuses are left out of every regex (Kafka's filterTopicDescribeAuthorizedTopics, with
    the context of the member that triggered the refresh)."""
    out: list[Record] = []
    bump = False
    resolved = {r: v.topics for r, v in group.resolved_regexes.items()}
    in_use = sorted(r for r, n in group.regex_subscribers().items() if n > 0)
    for regex, topics in resolve_regexes(in_use, topic_names, topic_filter).items():
        previous = group.resolved_regexes.get(regex)
        if previous is None or previous.topics != topics:
            bump = True
        resolved[regex] = topics
        out.append(records.resolved_regex(group.group_id, regex, topics, metadata_version, now_ms))
    metadata = group.compute_subscription_metadata(lookup, resolved=resolved)
    if group.subscription_metadata_changed(metadata):
        out.append(records.subscription_metadata(group.group_id, metadata))
        bump = True
    if bump:
        out.append(records.group_epoch(group.group_id, group.group_epoch + 1))
    return out


def leave(group: ConsumerGroup, request: HeartbeatRequest, settings: HeartbeatSettings,
          lookup: TopicLookup) -> HeartbeatResult:
    """Epoch -1 (leave) or -2 (static member leaves for now) — Kafka's consumerGroupLeave."""
    if request.instance_id is None:
        member = group.members.get(request.member_id)
        if member is None:
            raise _unknown_member(group, request.member_id)
    else:
        member = group.static_member(request.instance_id)
        if member is None:
            raise CoordinatorError(UNKNOWN_MEMBER_ID,
                                   f"Instance id {request.instance_id} is unknown.")
        if member.member_id != request.member_id:
            raise CoordinatorError(FENCED_INSTANCE_ID, (
                f"Static member {request.member_id} with instance id {request.instance_id} was "
                f"fenced by member {member.member_id}."))
        if request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            away = replace(member, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                           partitions_pending_revocation={})
            return HeartbeatResult(
                records=[records.current_assignment(group.group_id, away)],
                member_id=member.member_id, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                heartbeat_interval_ms=0, assignment=None, arm_session_timeout=False)
    return HeartbeatResult(
        records=fence_member(group, member.member_id, lookup),
        member_id=request.member_id, member_epoch=request.member_epoch, heartbeat_interval_ms=0,
        assignment=None, arm_session_timeout=False, cancel_timers=True)


def fence_member(group: ConsumerGroup, member_id: str, lookup: TopicLookup) -> list[Record]:
    """Records removing a member (leave, session or rebalance timeout): its tombstones, the
    regex tombstone if it was the regex's last subscriber, new subscription metadata if it
    changes, and the group epoch bump. Empty when the member is gone already (timers)."""
    member = group.members.get(member_id)
    if member is None:
        return []
    out = records.member_removal(group.group_id, member_id)
    regex = member.subscribed_topic_regex
    last_of_regex = regex is not None and regex != "" and group.regex_subscribers()[regex] == 1
    if regex is not None and last_of_regex:
        out.append(records.resolved_regex_tombstone(group.group_id, regex))
    resolved = {r: v.topics for r, v in group.resolved_regexes.items()
                if not (last_of_regex and r == regex)}
    probe_metadata = group.compute_subscription_metadata(lookup, removed=member_id,
                                                         resolved=resolved)
    if group.subscription_metadata_changed(probe_metadata):
        out.append(records.subscription_metadata(group.group_id, probe_metadata))
    out.append(records.group_epoch(group.group_id, group.group_epoch + 1))
    return out


def rebalance_timeout_expired(group: ConsumerGroup | None, member_id: str, member_epoch: int,
                              lookup: TopicLookup) -> list[Record]:
    """The rebalance timer armed when the member entered UNREVOKED_PARTITIONS at
    ``member_epoch`` fired: fence it if it is still there, at that epoch, still revoking."""
    member = group.members.get(member_id) if group is not None else None
    if (group is None or member is None or member.member_epoch != member_epoch
            or member.state != MemberState.UNREVOKED_PARTITIONS):
        return []
    return fence_member(group, member_id, lookup)


def session_timeout_expired(group: ConsumerGroup | None, member_id: str,
                            lookup: TopicLookup) -> list[Record]:
    """The session timer of the member fired: fence it (static members at -2 included)."""
    return [] if group is None else fence_member(group, member_id, lookup)
