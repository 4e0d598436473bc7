"""``__share_group_state`` rows -> share-partition state records (Arrow, for mapInArrow).

Keys and values are decoded by ``protocol.share_state_records`` (the broker's own codec, byte
exact with Kafka's share coordinator). One row per record: the share-partition (group, topic
id, partition), the record type, its start offset (-1 in a ShareUpdate that leaves it as it
was), its delivery-complete count (records past the start offset already acknowledged or
archived; -1 when not written) and its position in the log: all records of one share-partition
sit in one ``__share_group_state`` partition, so log order is the order they were written.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from kafkette.protocol.share_state_records import (
    SHARE_SNAPSHOT,
    ShareStateRecordError,
    decode_key,
    decode_snapshot_value,
    decode_update_value,
)

from .offsets import _timestamp_us

log = logging.getLogger("kafkette.pipeline")

SHARE_STATE_TOPIC = "__share_group_state"
CATALOG = "kafkette-topics.json"  # the broker's topic catalog in each log dir (names and ids)
SCHEMA = pa.schema([
    ("group", pa.string()), ("topic_id", pa.string()), ("partition", pa.int32()),
    ("record_type", pa.string()), ("start_offset", pa.int64()),
    ("delivery_complete_count", pa.int32()), ("tombstone", pa.bool_()),
    ("log_partition", pa.int32()), ("log_offset", pa.int64()),
    ("record_time", pa.timestamp("us", tz="UTC")),
])
DDL = ("group string, topic_id string, partition int, record_type string, start_offset bigint,"
       " delivery_complete_count int, tombstone boolean, log_partition int, log_offset bigint,"
       " record_time timestamp")


def decode_arrow(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow function: raw ``__share_group_state`` rows -> rows of ``SCHEMA``."""
    for batch in batches:
        cols = batch.to_pydict()
        rows: list[dict[str, object]] = []
        for part, offset, ts, key, value in zip(cols["partition"], cols["offset"],
                                                cols["timestamp"], cols["key"], cols["value"],
                                                strict=True):
            if key is None:
                continue
            try:
                k = decode_key(key)
                snapshot = k.record_type == SHARE_SNAPSHOT
                v = None if value is None else (
                    decode_snapshot_value(value) if snapshot else decode_update_value(value))
            except ShareStateRecordError as exc:
                log.warning("skipping undecodable %s record at %d/%d: %s", SHARE_STATE_TOPIC,
                            part, offset, exc)
                continue
            rows.append({
                "group": k.group_id, "topic_id": str(k.topic_id), "partition": k.partition,
                "record_type": "snapshot" if snapshot else "update",
                "start_offset": None if v is None else v.start_offset,
                "delivery_complete_count": None if v is None else v.delivery_complete_count,
                "tombstone": v is None, "log_partition": part, "log_offset": offset,
                "record_time": _timestamp_us(ts)})
        yield pa.RecordBatch.from_pylist(rows, schema=SCHEMA)


def topic_names(log_dirs: str) -> dict[str, str]:
    """Topic id (as ``str(uuid)``) -> topic name, from the topic catalog of each log dir."""
    names: dict[str, str] = {}
    for directory in log_dirs.split(","):
        path = Path(directory) / CATALOG
        if not path.exists():
            continue
        for entry in json.loads(path.read_text()).get("topics", []):
            names[str(uuid.UUID(entry["topic_id"]))] = entry["name"]
    return names
