"""Record builders for ``__consumer_offsets`` (Kafka's GroupCoordinatorRecordHelpers).

Encoding itself lives in protocol/group_records.py; these return encoded (key, value) pairs.
"""

from __future__ import annotations

from kafkette.protocol.group_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    encode_group_metadata_value,
    encode_key,
    encode_member_head,
    encode_offset_key,
    encode_offset_value,
    encode_value,
)

from ..runtime.coordinator_log import RawRecord
from .classic.classic_group import ClassicGroup


def group_metadata(group: ClassicGroup, assignment: dict[str, bytes]) -> RawRecord:
    """The classic group as it is now, with ``assignment`` (member id -> bytes).

    Each member's bytes but for its assignment are kept on the member (``record_cache``), so a
    rebalance of a group whose members rejoin unchanged encodes only the assignments."""
    protocol = group.protocol_name
    members = []
    get = assignment.get
    for m in group.members.values():
        cached = m.record_cache
        if cached is None or cached[0] != protocol:
            head = encode_member_head(
                m.member_id, m.group_instance_id, m.client_id, m.client_host,
                m.rebalance_timeout_ms, m.session_timeout_ms,
                m.metadata(protocol) if protocol is not None else b"")
            m.record_cache = cached = (protocol, head)
        members.append((cached[1], get(m.member_id, b"")))
    ts = group.state_timestamp if group.state_timestamp is not None else -1
    value = encode_group_metadata_value(group.protocol_type or "", group.generation, protocol,
                                        group.leader_id, ts, members)
    return encode_key(GroupMetadataKey(group.group_id)), value


def empty_group_metadata(group: ClassicGroup) -> RawRecord:
    """What Kafka writes when it creates a classic group: no protocol, generation 0."""
    ts = group.state_timestamp if group.state_timestamp is not None else -1
    value = GroupMetadataValue("", 0, None, None, ts, ())
    return encode_key(GroupMetadataKey(group.group_id)), encode_value(value)


def group_tombstone(group_id: str) -> RawRecord:
    return encode_key(GroupMetadataKey(group_id)), None


def offset_commit(group_id: str, topic: str, partition: int, offset: int, leader_epoch: int,
                  metadata: str, commit_ms: int, expire_ms: int | None) -> RawRecord:
    return (encode_offset_key(group_id, topic, partition),
            encode_offset_value(offset, leader_epoch, metadata, commit_ms, expire_ms))


def offset_tombstone(group_id: str, topic: str, partition: int) -> RawRecord:
    return encode_offset_key(group_id, topic, partition), None
