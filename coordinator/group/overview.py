"""What a person or a dashboard sees of a group, whatever its type (classic, KIP-848 consumer,
share): one plain value per group, built by the manager that owns the group. The admin console
and ``/metrics`` read groups only through these (``GroupCoordinatorShard.group_overviews``), so a
new group type shows up there by implementing ``OverviewSource``; nothing in the admin server
branches on the type."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class MemberOverview:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    assignment: tuple[tuple[str, int], ...]  # (topic, partition), sorted


@dataclass(frozen=True, slots=True)
class GroupOverview:
    group_id: str
    group_type: str  # ListGroups' GroupType: "classic", "consumer", "share"
    state: str  # as ListGroups/DescribeGroups name it ("Stable", "Empty"...)
    protocol_type: str  # "consumer" for consumer groups, "share" for share groups
    protocol: str | None  # the classic protocol (assignor), or the server assignor
    epoch: int  # the classic generation, or the group epoch
    leader: str | None  # classic groups only
    members: tuple[MemberOverview, ...] = ()


class OverviewSource(Protocol):
    """A group manager's overviews (groups of one type in one shard)."""

    def overview(self, group_id: str) -> GroupOverview | None: ...

    def overviews(self) -> list[GroupOverview]: ...
