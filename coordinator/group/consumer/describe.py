"""ConsumerGroupDescribe (key 69) and ListGroups views of a consumer group, as plain values
named like the response fields (kio's consumer_group_describe v1 DescribedGroup/Member), so a
handler can build the response with ``protocol.build.make``. A read op: pass the group as of
the committed offset."""

from __future__ import annotations

from dataclasses import dataclass

from ..described import DescribedTopicPartitions, TopicNamer, described_partitions
from ..overview import GroupOverview, MemberOverview
from .consumer_group_state import ConsumerGroup
from .member import ConsumerGroupMember

MEMBER_TYPE_CLASSIC = 0
MEMBER_TYPE_CONSUMER = 1

@dataclass(frozen=True, slots=True)
class DescribedMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: tuple[DescribedTopicPartitions, ...]
    target_assignment: tuple[DescribedTopicPartitions, ...]
    member_type: int


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    group_id: str
    group_state: str
    group_epoch: int
    assignment_epoch: int
    assignor_name: str
    members: tuple[DescribedMember, ...]


def describe_member(group: ConsumerGroup, member: ConsumerGroupMember,
                    name_of: TopicNamer) -> DescribedMember:
    return DescribedMember(
        member_id=member.member_id, instance_id=member.instance_id, rack_id=member.rack_id,
        member_epoch=member.member_epoch, client_id=member.client_id,
        client_host=member.client_host,
        subscribed_topic_names=tuple(sorted(member.subscribed_topic_names)),
        subscribed_topic_regex=member.subscribed_topic_regex,
        assignment=described_partitions(member.assigned_partitions, name_of),
        target_assignment=described_partitions(group.target_of(member.member_id),
                                               name_of),
        member_type=MEMBER_TYPE_CLASSIC if member.uses_classic_protocol else MEMBER_TYPE_CONSUMER)


def describe_group(group: ConsumerGroup, default_assignor: str,
                   name_of: TopicNamer) -> DescribedGroup:
    """The DescribedGroup of a consumer group; members sorted by member id."""
    return DescribedGroup(
        group_id=group.group_id, group_state=group.state.value, group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=group.preferred_assignor(default_assignor),
        members=tuple(describe_member(group, group.members[m], name_of)
                      for m in sorted(group.members)))


def group_overview(group: ConsumerGroup, default_assignor: str,
                   name_of: TopicNamer) -> GroupOverview:
    """The console's view of a consumer group (coordinator/group/overview.py)."""
    described = describe_group(group, default_assignor, name_of)
    return GroupOverview(
        group.group_id, "consumer", described.group_state, "consumer", described.assignor_name,
        described.group_epoch, None,
        tuple(MemberOverview(m.member_id, m.instance_id, m.client_id, m.client_host,
                             tuple((t.topic_name, p) for t in m.assignment for p in t.partitions))
              for m in described.members))
