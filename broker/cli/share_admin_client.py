"""The admin client behind ``kafkette share-groups`` (broker/cli/share_groups_command.py):
share-group admin over the wire, as kafka-share-groups.sh's Admin calls (ListGroups with the
share type, ShareGroupDescribe, Describe/Alter/DeleteShareGroupOffsets, DeleteGroups,
FindCoordinator, ListOffsets). The consumer-group client's connection, negotiation and
ListOffsets, with the share APIs added."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import request_type

from .admin_client import (
    LIST_GROUPS,
    OURS,
    AdminClient,
    AdminError,
    error_name,
)

FIND_COORDINATOR = 10
SHARE_GROUP_DESCRIBE = 77
DESCRIBE_SHARE_GROUP_OFFSETS, ALTER_SHARE_GROUP_OFFSETS, DELETE_SHARE_GROUP_OFFSETS = 90, 91, 92
SHARE_OURS: dict[int, tuple[int, int]] = {
    **OURS, LIST_GROUPS: (0, 5), FIND_COORDINATOR: (0, 6), SHARE_GROUP_DESCRIBE: (1, 1),
    DESCRIBE_SHARE_GROUP_OFFSETS: (0, 1), ALTER_SHARE_GROUP_OFFSETS: (0, 0),
    DELETE_SHARE_GROUP_OFFSETS: (0, 0),
}


@dataclass(frozen=True, slots=True)
class ShareMemberRow:
    member_id: str
    client_id: str
    client_host: str
    member_epoch: int
    partitions: list[tuple[str, int]]


@dataclass(frozen=True, slots=True)
class ShareGroupRow:
    """ShareGroupDescribe of one group; an unknown group is Dead (as Kafka's admin reports it)."""

    group_id: str
    state: str
    group_epoch: int = -1
    assignment_epoch: int = -1
    members: tuple[ShareMemberRow, ...] = ()


@dataclass(frozen=True, slots=True)
class OffsetRow:
    """One share-partition's offsets: None where Kafka's tool prints "-"."""

    topic: str
    partition: int
    start_offset: int | None
    leader_epoch: int | None
    lag: int | None


def _known(value: int) -> int | None:
    return None if value < 0 else value


class ShareAdminClient(AdminClient):
    known_versions = SHARE_OURS

    # Groups ------------------------------------------------------------------------------------
    def list_share_groups(self) -> list[tuple[str, str]]:
        """(group id, state) of every share group, by group id."""
        version, r = self.call(LIST_GROUPS, states_filter=(),
                               types_filter=("share",))
        if r.error_code != ErrorCode.none:
            raise AdminError(f"ListGroups failed: {error_name(r.error_code)}")
        return sorted((g.group_id, getattr(g, "group_state", ""))
                      for g in r.groups
                      if (g.group_type == "share" if version >= 5 else g.protocol_type == "share"))

    def describe_share_groups(self, groups: Iterable[str]) -> dict[str, ShareGroupRow]:
        ids = tuple(groups)
        if not ids:
            return {}
        _, r = self.call(SHARE_GROUP_DESCRIBE, group_ids=ids, include_authorized_operations=False)
        out: dict[str, ShareGroupRow] = {}
        for g in r.groups:
            if g.error_code == ErrorCode.group_id_not_found:
                out[g.group_id] = ShareGroupRow(g.group_id, "Dead")
                continue
            if g.error_code != ErrorCode.none:
                raise AdminError(f"ShareGroupDescribe {g.group_id!r} failed: "
                                 f"{g.error_message or error_name(g.error_code)}")
            members = tuple(ShareMemberRow(
                m.member_id, m.client_id, m.client_host, int(m.member_epoch),
                [(tp.topic_name, int(p)) for tp in m.assignment.topic_partitions
                 for p in tp.partitions]) for m in g.members)
            out[g.group_id] = ShareGroupRow(g.group_id, g.group_state, int(g.group_epoch),
                                            int(g.assignment_epoch), members)
        return out

    # Offsets -----------------------------------------------------------------------------------
    def share_offsets(self, group: str) -> list[OffsetRow]:
        """DescribeShareGroupOffsets of every partition the group has (raises on a group
        error: GROUP_ID_NOT_FOUND for an unknown group)."""
        version = self.versions.get(DESCRIBE_SHARE_GROUP_OFFSETS)
        if version is None:
            raise AdminError("the broker does not support DescribeShareGroupOffsets")
        group_cls = item_type(request_type(DESCRIBE_SHARE_GROUP_OFFSETS, version), "groups")
        _, r = self.call(DESCRIBE_SHARE_GROUP_OFFSETS,
                         groups=(make(group_cls, group_id=group, topics=None),))
        (g,) = r.groups
        if g.error_code != ErrorCode.none:
            raise AdminError(g.error_message or error_name(g.error_code))
        rows = []
        for t in g.topics:
            for p in t.partitions:
                start = _known(int(p.start_offset))
                rows.append(OffsetRow(
                    t.topic_name, int(p.partition_index), start,
                    None if start is None else _known(int(p.leader_epoch)),
                    None if start is None else _known(int(getattr(p, "lag", -1)))))
        return sorted(rows, key=lambda row: (row.topic, row.partition))

    def alter_share_offsets(self, group: str, offsets: Mapping[tuple[str, int], int]
                            ) -> tuple[int, str | None, dict[tuple[str, int], tuple[int, str | None]]]:
        """(top-level error, its message, (error, message) of each partition)."""
        req = request_type(ALTER_SHARE_GROUP_OFFSETS, 0)
        topic_cls = item_type(req, "topics")
        part_cls = item_type(topic_cls, "partitions")
        by_topic: dict[str, list[tuple[int, int]]] = {}
        for (topic, partition), offset in offsets.items():
            by_topic.setdefault(topic, []).append((partition, offset))
        topics = tuple(make(topic_cls, topic_name=t, partitions=tuple(
            make(part_cls, partition_index=p, start_offset=o) for p, o in sorted(ps)))
            for t, ps in sorted(by_topic.items()))
        _, r = self.call(ALTER_SHARE_GROUP_OFFSETS, group_id=group, topics=topics)
        return int(r.error_code), r.error_message, {
            (t.topic_name, int(p.partition_index)): (int(p.error_code), p.error_message)
            for t in r.responses for p in t.partitions}

    def delete_share_offsets(self, group: str, topics: Iterable[str]
                             ) -> tuple[int, str | None, dict[str, tuple[int, str | None]]]:
        """(top-level error, its message, (error, message) of each topic)."""
        topic_cls = item_type(request_type(DELETE_SHARE_GROUP_OFFSETS, 0), "topics")
        _, r = self.call(DELETE_SHARE_GROUP_OFFSETS, group_id=group,
                         topics=tuple(make(topic_cls, topic_name=t) for t in sorted(set(topics))))
        return int(r.error_code), r.error_message, {
            t.topic_name: (int(t.error_code), t.error_message) for t in r.responses}


__all__ = ["OffsetRow", "ShareAdminClient", "ShareGroupRow", "ShareMemberRow"]
