"""The ``kafkette`` Spark Python Data Source: rows of kafkette's topic logs, read in parallel.

    spark.dataSource.register(KafketteDataSource)
    df = spark.read.format("kafkette").load("/var/lib/kafkette/data")   # comma-separate log dirs

Options (all optional): ``topics`` / ``exclude_topics`` (comma-separated names),
``columns`` = ``all`` (default) or ``meta`` (topic, partition, offset, timestamp only: skips key,
value and headers, several times faster), ``split_bytes`` (default 64 MiB: one input partition per
segment, or per range of that many bytes of a larger segment), ``check_crc`` (default true),
``include_control`` (default false: transaction markers are not rows), ``decoder`` = ``fast``
(default) or ``reference`` (protocol.records, one Python object per record: the baseline).

Every row says whether it was written in a transaction (``transactional``), is a transaction
marker (``control``, only with ``include_control``) or belongs to an aborted transaction
(``aborted``: from the partition's ``.txnindex`` files, Kafka's aborted-transaction index; such
records never reach a read_committed consumer). A transaction still open reads as not aborted.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from kafkette.protocol import txn_index

from .fastdecode import AbortedRanges, Columns, decode_batches
from .segments import DEFAULT_SPLIT_BYTES, Split, plan_splits

log = logging.getLogger("kafkette.pipeline")

META_SCHEMA = ("topic string, partition int, offset bigint, timestamp timestamp,"
               " transactional boolean, control boolean, aborted boolean")
FULL_SCHEMA = (META_SCHEMA + ", key binary, value binary,"
               " headers array<struct<key: string, value: binary>>")
# Decoded records per Arrow batch handed to Spark: big enough to amortise per-batch costs.
_CHUNK_BYTES = 16 * 1024 * 1024


def _csv(value: str | None) -> list[str] | None:
    if value is None or not value.strip():
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


def _flag(options: dict, name: str, default: bool) -> bool:
    value = options.get(name)
    return default if value is None else str(value).strip().lower() in ("1", "true", "yes")


class SplitPartition(InputPartition):
    def __init__(self, split: Split) -> None:
        super().__init__(split)
        self.split = split


class KafketteDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "kafkette"

    def _meta(self) -> bool:
        columns = str(self.options.get("columns", "all")).lower()
        if columns not in ("all", "meta"):
            raise ValueError(f"kafkette source: columns must be 'all' or 'meta', not {columns!r}")
        return columns == "meta"

    def schema(self) -> str:
        return META_SCHEMA if self._meta() else FULL_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafketteReader(dict(self.options), schema, payload=not self._meta())


class KafketteReader(DataSourceReader):
    def __init__(self, options: dict, schema: StructType, payload: bool) -> None:
        paths = _csv(options.get("path")) or _csv(options.get("log_dirs"))
        if not paths:
            raise ValueError("kafkette source: give the log dirs with .load(path) or option log_dirs")
        self.log_dirs = paths
        self.topics = _csv(options.get("topics"))
        self.exclude = set(_csv(options.get("exclude_topics")) or [])
        self.split_bytes = int(options.get("split_bytes", DEFAULT_SPLIT_BYTES))
        self.check_crc = _flag(options, "check_crc", True)
        self.include_control = _flag(options, "include_control", False)
        self.payload = payload
        decoder = str(options.get("decoder", "fast")).lower()
        if decoder not in ("fast", "reference"):
            raise ValueError(f"kafkette source: decoder must be 'fast' or 'reference', not {decoder!r}")
        self.reference = decoder == "reference"
        self.schema = schema

    def partitions(self) -> Sequence[InputPartition]:
        splits = plan_splits(self.log_dirs, self.topics, self.split_bytes)
        parts = [SplitPartition(s) for s in splits if s.topic not in self.exclude]
        # Spark needs at least one partition; an empty one reads nothing.
        return parts or [InputPartition(None)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        split = getattr(partition, "split", None)
        if split is None:
            return
        arrow_schema = to_arrow_schema(self.schema, timezone="UTC")
        try:
            with open(split.path, "rb") as f:
                f.seek(split.start)
                data = f.read(split.size)
        except FileNotFoundError:
            # Retention deleted the segment between planning and reading: its records are gone.
            log.warning("segment %s disappeared before it was read", split.path)
            return
        aborted = aborted_transactions(os.path.dirname(split.path))
        for cols in decode_batches(data, payload=self.payload, check_crc=self.check_crc,
                                   include_control=self.include_control, max_chunk=_CHUNK_BYTES,
                                   reference=self.reference, aborted=aborted):
            yield to_record_batch(cols, split.topic, split.partition, arrow_schema)


def aborted_transactions(partition_dir: str) -> AbortedRanges:
    """The partition's aborted transactions from its .txnindex files (one per segment holding
    ABORT markers; the broker keeps them current, and rewrites them from the log at startup)."""
    out: AbortedRanges = {}
    for name in sorted(os.listdir(partition_dir)):
        if not name.endswith(txn_index.SUFFIX):
            continue
        try:
            entries = txn_index.parse_entries(Path(partition_dir, name).read_bytes())
        except FileNotFoundError:  # its segment was deleted meanwhile
            continue
        for producer_id, first, last, _lso in entries:
            out.setdefault(producer_id, []).append((first, last))
    return out


def to_record_batch(cols: Columns, topic: str, partition: int, schema: pa.Schema) -> pa.RecordBatch:
    n = len(cols)
    ts_type = schema.field("timestamp").type
    arrays = [
        pa.nulls(n, pa.string()).fill_null(topic) if n else pa.array([], pa.string()),
        pa.array(np.full(n, partition, dtype=np.int32)),
        pa.array(cols.offset),
        pa.array(cols.timestamp * 1000).cast(ts_type),
        pa.array(cols.transactional, pa.bool_()),
        pa.array(cols.control, pa.bool_()),
        pa.array(cols.aborted, pa.bool_()),
    ]
    if len(schema) > 7:
        assert cols.headers is not None  # decoded with record bodies: keys, values, headers
        arrays += [cols.key, cols.value, cols.headers.cast(schema.field("headers").type)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
