"""__consumer_offsets rows -> commit and group rows (no Spark: the mapInArrow function itself)."""

from __future__ import annotations

import datetime as dt
import struct

import pytest

pa = pytest.importorskip("pyarrow")

from kafkette.pipeline.offsets import SCHEMA, decode_arrow, parse_assignment  # noqa: E402
from kafkette.protocol import consumer_group_records as cgr  # noqa: E402
from kafkette.protocol import group_records as gr  # noqa: E402

T = 1_700_000_000_000


def _assignment(topic: str, partitions: list[int]) -> bytes:
    raw = topic.encode()
    return (struct.pack(">hih", 1, 1, len(raw)) + raw + struct.pack(">i", len(partitions))
            + b"".join(struct.pack(">i", p) for p in partitions) + struct.pack(">i", -1))


def _rows(records: list[tuple[bytes | None, bytes | None]]) -> list[dict]:
    ts = dt.datetime.fromtimestamp(T / 1000, dt.UTC)
    batch = pa.RecordBatch.from_pydict({
        "partition": pa.array([7] * len(records), pa.int32()),
        "offset": pa.array(range(len(records)), pa.int64()),
        "timestamp": pa.array([ts] * len(records), pa.timestamp("us", tz="UTC")),
        "key": pa.array([k for k, _ in records], pa.binary()),
        "value": pa.array([v for _, v in records], pa.binary()),
    })
    out = list(decode_arrow(iter([batch])))
    assert all(b.schema.equals(SCHEMA) for b in out)
    return [row for b in out for row in b.to_pylist()]


def test_commits_groups_tombstones_and_unknown_records() -> None:
    member = gr.MemberMetadata("m-1", "static-1", "client-1", "/10.0.0.1", 300000, 45000,
                               b"\x00\x01", _assignment("orders", [0, 2]))
    key = gr.encode_key(gr.OffsetCommitKey("g", "orders", 2))
    records = [
        (gr.encode_key(gr.GroupMetadataKey("g")),
         gr.encode_value(gr.GroupMetadataValue("consumer", 3, "range", "m-1", T - 5, (member,)))),
        (key, gr.encode_value(gr.OffsetCommitValue(42, 5, "meta", T + 1))),
        (key, gr.encode_value(gr.OffsetCommitValue(43, -1, "", T + 2, T + 99))),  # v1 value
        (key, None),  # offset deleted
        (cgr.encode_key(cgr.ConsumerGroupMetadataKey("cg")),  # KIP-848 group epoch: a row
         cgr.encode_value(cgr.ConsumerGroupMetadataValue(4))),
        (cgr.encode_key(cgr.ConsumerGroupTargetAssignmentMetadataKey("cg")),  # skipped
         cgr.encode_value(cgr.ConsumerGroupTargetAssignmentMetadataValue(4))),
        (b"\x00", b"junk"),  # undecodable: skipped with a warning
        (gr.encode_key(gr.GroupMetadataKey("g")), None),  # group deleted
    ]
    rows = _rows(records)
    assert [r["kind"] for r in rows] == ["group", "commit", "commit", "commit", "group", "group"]
    group, c1, c2, c3, consumer_group, dead = rows
    assert (consumer_group["group"], consumer_group["protocol_type"],
            consumer_group["generation"], consumer_group["tombstone"]) == ("cg", "consumer", 4,
                                                                           False)
    assert (group["generation"], group["protocol"], group["leader"], group["member_count"]) == (
        3, "range", "m-1", 1)
    assert group["state_time"] == dt.datetime.fromtimestamp((T - 5) / 1000, dt.UTC)
    (m,) = group["members"]
    assert (m["member_id"], m["group_instance_id"], m["client_id"], m["client_host"]) == (
        "m-1", "static-1", "client-1", "/10.0.0.1")
    assert m["assigned_partitions"] == [{"topic": "orders", "partitions": [0, 2]}]
    assert (c1["topic"], c1["partition"], c1["committed_offset"], c1["leader_epoch"],
            c1["metadata"], c1["tombstone"], c1["log_offset"]) == ("orders", 2, 42, 5, "meta",
                                                                    False, 1)
    assert c2["expire_time"] == dt.datetime.fromtimestamp((T + 99) / 1000, dt.UTC)
    assert c3["tombstone"] and c3["committed_offset"] is None
    assert dead["tombstone"] and dead["generation"] is None and dead["log_offset"] == 7


def test_parse_assignment_is_lenient() -> None:
    assert parse_assignment(_assignment("t", [])) == [{"topic": "t", "partitions": []}]
    assert parse_assignment(b"\x00") is None
