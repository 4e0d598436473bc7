"""``__consumer_offsets`` rows -> offset-commit and group-metadata tables (Arrow, for mapInArrow).

Keys and values are decoded by ``protocol.group_records`` (the broker's own codec). Input batches
carry the source's columns ``partition, offset, timestamp, key, value``; output rows keep the
record's position (``log_partition``, ``log_offset``) because, for one group, all its records sit
in one ``__consumer_offsets`` partition and their log order is the order things happened.
Keys go through ``protocol.consumer_group_records`` (a superset of ``group_records``): a KIP-848
consumer group's epoch record (type 3) becomes a "group" row with protocol type ``consumer`` and
generation = group epoch, so its rebalances show like classic generations; its other records
(types 4-8, 16) and records of unknown types (share groups) are skipped, as Kafka's loader does.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from kafkette.protocol.consumer_group_records import (
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    decode_key,
    decode_value,
)
from kafkette.protocol.consumer_protocol import ConsumerProtocolError, decode_assignment
from kafkette.protocol.group_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    RecordDecodeError,
)

log = logging.getLogger("kafkette.pipeline")

OFFSETS_TOPIC = "__consumer_offsets"
_TS = pa.timestamp("us", tz="UTC")

_ASSIGNED = pa.list_(pa.struct([("topic", pa.string()), ("partitions", pa.list_(pa.int32()))]))
_MEMBER = pa.struct([
    ("member_id", pa.string()), ("group_instance_id", pa.string()), ("client_id", pa.string()),
    ("client_host", pa.string()), ("rebalance_timeout_ms", pa.int32()),
    ("session_timeout_ms", pa.int32()), ("subscription", pa.binary()), ("assignment", pa.binary()),
    ("assigned_partitions", _ASSIGNED),
])
# One decode pass yields both kinds of rows; ``kind`` is "commit" or "group".
SCHEMA = pa.schema([
    ("kind", pa.string()), ("group", pa.string()),
    ("topic", pa.string()), ("partition", pa.int32()), ("committed_offset", pa.int64()),
    ("leader_epoch", pa.int32()), ("metadata", pa.string()), ("commit_time", _TS),
    ("expire_time", _TS),
    ("protocol_type", pa.string()), ("generation", pa.int32()), ("protocol", pa.string()),
    ("leader", pa.string()), ("state_time", _TS), ("member_count", pa.int32()),
    ("members", pa.list_(_MEMBER)),
    ("tombstone", pa.bool_()), ("log_partition", pa.int32()), ("log_offset", pa.int64()),
    ("record_time", _TS),
])
DDL = (
    "kind string, group string, topic string, partition int, committed_offset bigint,"
    " leader_epoch int, metadata string, commit_time timestamp, expire_time timestamp,"
    " protocol_type string, generation int, protocol string, leader string,"
    " state_time timestamp, member_count int, members array<struct<member_id: string,"
    " group_instance_id: string, client_id: string, client_host: string,"
    " rebalance_timeout_ms: int, session_timeout_ms: int, subscription: binary,"
    " assignment: binary, assigned_partitions: array<struct<topic: string,"
    " partitions: array<int>>>>>, tombstone boolean, log_partition int, log_offset bigint,"
    " record_time timestamp")
COMMIT_COLUMNS = ["group", "topic", "partition", "committed_offset", "leader_epoch", "metadata",
                  "commit_time", "expire_time", "tombstone", "log_partition", "log_offset",
                  "record_time"]
GROUP_COLUMNS = ["group", "protocol_type", "generation", "protocol", "leader", "state_time",
                 "member_count", "members", "tombstone", "log_partition", "log_offset",
                 "record_time"]


def _ms(value: int | None) -> int | None:
    return None if value is None or value < 0 else value * 1000


def parse_assignment(data: bytes) -> list[dict] | None:
    """ConsumerProtocol Assignment (any version) -> [{topic, partitions}], or None."""
    try:
        assignment = decode_assignment(data)
    except ConsumerProtocolError:
        return None
    return [{"topic": tp.topic, "partitions": [int(p) for p in tp.partitions]}
            for tp in assignment.assigned_partitions]


def _decode(batch: pa.RecordBatch) -> Iterator[tuple[OffsetCommitKey | GroupMetadataKey | ConsumerGroupMetadataKey, Any, int, int, int]]:
    cols = batch.to_pydict()
    for part, offset, ts, key, value in zip(cols["partition"], cols["offset"], cols["timestamp"],
                                            cols["key"], cols["value"], strict=True):
        if key is None:
            continue
        try:
            k = decode_key(key)
            if not isinstance(k, OffsetCommitKey | GroupMetadataKey | ConsumerGroupMetadataKey):
                continue
            v = decode_value(k, value)
        except RecordDecodeError as exc:
            log.warning("skipping undecodable %s record at %d/%d: %s", OFFSETS_TOPIC, part,
                        offset, exc)
            continue
        yield k, v, part, offset, ts


def _timestamp_us(ts: Any) -> int:
    # to_pydict gives datetimes for timestamp columns.
    return int(ts.timestamp() * 1_000_000) if hasattr(ts, "timestamp") else int(ts)


def _commit_fields(v: OffsetCommitValue | None) -> dict[str, object]:
    if v is None:
        return {}
    return {"committed_offset": v.offset, "leader_epoch": v.leader_epoch, "metadata": v.metadata,
            "commit_time": _ms(v.commit_timestamp), "expire_time": _ms(v.expire_timestamp)}


def _group_fields(v: GroupMetadataValue | ConsumerGroupMetadataValue | None
                  ) -> dict[str, object]:
    if v is None:
        return {}
    if isinstance(v, ConsumerGroupMetadataValue):  # KIP-848: the group epoch
        return {"protocol_type": "consumer", "generation": v.epoch}
    members = [{
        "member_id": m.member_id, "group_instance_id": m.group_instance_id,
        "client_id": m.client_id, "client_host": m.client_host,
        "rebalance_timeout_ms": m.rebalance_timeout, "session_timeout_ms": m.session_timeout,
        "subscription": m.subscription, "assignment": m.assignment,
        "assigned_partitions": (parse_assignment(m.assignment)
                                if v.protocol_type == "consumer" else None),
    } for m in v.members]
    return {"protocol_type": v.protocol_type, "generation": v.generation, "protocol": v.protocol,
            "leader": v.leader, "state_time": _ms(v.current_state_timestamp),
            "member_count": len(v.members), "members": members}


def decode_arrow(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow function: raw ``__consumer_offsets`` rows -> rows of ``SCHEMA``."""
    for batch in batches:
        rows: list[dict[str, object]] = []
        for k, v, part, offset, ts in _decode(batch):
            row: dict[str, object] = {"group": k.group, "tombstone": v is None,
                                      "log_partition": part, "log_offset": offset,
                                      "record_time": _timestamp_us(ts)}
            if isinstance(k, OffsetCommitKey):
                row.update(kind="commit", topic=k.topic, partition=k.partition)
                row.update(_commit_fields(v))
            else:
                row["kind"] = "group"
                row.update(_group_fields(v))
            rows.append(row)
        yield pa.RecordBatch.from_pylist(rows, schema=SCHEMA)
