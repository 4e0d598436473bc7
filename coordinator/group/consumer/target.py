"""The group's new target assignment (KIP-848 §4.7, Kafka's TargetAssignmentBuilder).

Turns the members (with this heartbeat's changes applied) into an assignor input — subscribed
topic *ids* from names plus resolved regexes, current target for stickiness — runs the
assignor and returns the records: one ConsumerGroupTargetAssignmentMember per member whose
target changed (always one for a member without a previous target), then the
ConsumerGroupTargetAssignmentMetadata with the group epoch.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from kafkette.coordinator.group.assignor.spec import (
    Assignment,
    GroupSpec,
    MemberSubscription,
    PartitionAssignor,
    SubscriptionType,
    TopicPartitionCounts,
    make_assignment,
)
from kafkette.protocol.consumer_group_records import TopicMetadata

from . import consumer_record_builders as records
from .consumer_record_builders import Record
from .member import ConsumerGroupMember


@dataclass(frozen=True, slots=True)
class TargetAssignmentResult:
    records: list[Record]
    assignment: dict[str, Assignment]  # the full new target, member id -> assignment


def subscribed_topic_names(member: ConsumerGroupMember,
                           resolved_regexes: Mapping[str, frozenset[str]]) -> frozenset[str]:
    """Names the member subscribes to: its list plus what its regex resolved to (if yet)."""
    if not member.subscribed_topic_regex:
        return member.subscribed_topic_names
    return member.subscribed_topic_names | resolved_regexes.get(member.subscribed_topic_regex,
                                                                frozenset())


def subscription_type(members: Mapping[str, ConsumerGroupMember]) -> SubscriptionType:
    """HOMOGENEOUS when all members subscribe to the same names and no regex, or all use the
    same single regex and no names; HETEROGENEOUS otherwise (Kafka's ConsumerGroup rule)."""
    if not members:
        return SubscriptionType.HOMOGENEOUS
    shapes = {(m.subscribed_topic_names, m.subscribed_topic_regex or None)
              for m in members.values()}
    if len(shapes) > 1:
        return SubscriptionType.HETEROGENEOUS
    names, regex = shapes.pop()
    if regex is None or not names:
        return SubscriptionType.HOMOGENEOUS
    return SubscriptionType.HETEROGENEOUS


def build_target_assignment(
    *, group_id: str, group_epoch: int, assignor: PartitionAssignor,
    members: Mapping[str, ConsumerGroupMember],
    target: Mapping[str, Assignment],
    topics: Mapping[str, TopicMetadata],
    resolved_regexes: Mapping[str, frozenset[str]] | None = None,
    updated: Mapping[str, ConsumerGroupMember | None] | None = None,
    static_members: Mapping[str, str] | None = None,
) -> TargetAssignmentResult:
    """New target for ``members`` as changed by ``updated`` (member id -> new member, or None
    for a member that is being removed).

    ``topics`` is the subscription metadata by topic name (names that do not exist are simply
    not subscribed); ``static_members`` maps instance id -> current member id, so a static
    member replacing a departed incarnation starts from the departed one's target.
    Raises ``PartitionAssignorError`` from the assignor.
    """
    resolved_regexes = resolved_regexes or {}
    static_members = static_members or {}
    effective: dict[str, ConsumerGroupMember] = dict(members)
    inherited: dict[str, Assignment] = {}
    for member_id, member in (updated or {}).items():
        if member is None:
            effective.pop(member_id, None)
            continue
        effective[member_id] = member
        previous_id = static_members.get(member.instance_id) if member.instance_id else None
        if previous_id is not None and previous_id != member_id:
            inherited[member_id] = target.get(previous_id, {})

    ids_by_name = {name: t.topic_id for name, t in topics.items()}
    specs: dict[str, MemberSubscription] = {}
    current: dict[str, Assignment] = {}
    for member_id, member in effective.items():
        names = subscribed_topic_names(member, resolved_regexes)
        topic_ids = frozenset(ids_by_name[n] for n in names if n in ids_by_name)
        specs[member_id] = MemberSubscription(topic_ids, member.instance_id, member.rack_id)
        current[member_id] = inherited.get(member_id, target.get(member_id, {}))

    counts: dict[uuid.UUID, int] = {t.topic_id: t.num_partitions for t in topics.values()}
    spec = GroupSpec(specs, subscription_type(effective), current)
    new = assignor.assign(spec, TopicPartitionCounts(counts))

    result: dict[str, Assignment] = {}
    out: list[Record] = []
    for member_id in sorted(effective):
        assignment = make_assignment(new.get(member_id, {}))
        result[member_id] = assignment
        old = target.get(member_id)
        if old is None or make_assignment(old) != assignment:
            out.append(records.target_member(group_id, member_id, assignment))
    out.append(records.target_epoch(group_id, group_epoch))
    return TargetAssignmentResult(out, result)
