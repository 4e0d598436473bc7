"""The compact offset store (coordinator/group/offsets/offset_store.py) and bulk batch replay
(coordinator/group/offsets/offset_replay.py): whatever layout a batch has, replaying it as
RawBatches gives exactly the state record-by-record replay gives."""

from __future__ import annotations

import logging
import random
import struct
from array import array
from typing import Any

import pytest

from kafkette.coordinator.group.group_config import CoordinatorConfig
from kafkette.coordinator.group.group_shard import GroupCoordinatorShard
from kafkette.coordinator.group.offsets.offset_replay import RawBatches
from kafkette.coordinator.group.offsets.offset_store import TopicOffsets
from kafkette.coordinator.runtime.clock import ManualClock
from kafkette.coordinator.runtime.coordinator_log import TxnMarker, TxnRecordKey
from kafkette.protocol.control_records import marker_batch
from kafkette.protocol.group_records import (
    OffsetCommitValue,
    encode_key,
    encode_offset_key,
    encode_offset_value,
    encode_value,
)
from kafkette.protocol.records import build_batch

from .test_shard_unit import FakeContext

TS = 1_700_000_000_000


def value(offset: int, epoch: int = -1, metadata: str = "", ts: int = TS,
          expire: int | None = None) -> bytes:
    return encode_offset_value(offset, epoch, metadata, ts, expire)


# TopicOffsets ------------------------------------------------------------------------------------

def test_put_get_pop_and_partitions() -> None:
    t = TopicOffsets()
    assert t.put(3, value(30, 5, "m"))
    assert t.put(0, value(0))
    assert t.put(3, value(31, 6, "m"))  # overwrites
    assert len(t) == 2 and 3 in t and 1 not in t
    assert t.get(3)[:2] == (31, 6) and t.get(3)[2].metadata == "m"
    assert t.value(0) == OffsetCommitValue(0, -1, "", TS, None)
    assert t.partitions() == [0, 3]
    assert t.pop(3) and not t.pop(3) and t.get(3) is None
    assert t.partitions() == [0] and len(t) == 1
    assert t.pop(0) and not t


def test_every_value_version_round_trips() -> None:
    t = TopicOffsets()
    v1 = value(7, -1, "meta", TS, TS + 5)  # written as v1 (expire timestamp)
    assert v1[:2] == b"\x00\x01"
    assert t.put(0, v1)
    assert t.value(0) == OffsetCommitValue(7, -1, "meta", TS, TS + 5)
    v0 = b"\x00\x00" + struct.pack(">qh", 9, 2) + b"md" + struct.pack(">q", TS)
    assert t.put(1, v0) and t.value(1) == OffsetCommitValue(9, -1, "md", TS, None)
    v4 = b"\x00\x04" + struct.pack(">qi", 11, 3) + b"\x03ab" + struct.pack(">q", TS) + b"\x00"
    assert t.put(2, v4) and t.value(2) == OffsetCommitValue(11, 3, "ab", TS, None)


def test_implausible_value_is_refused_and_undecodable_reads_missing() -> None:
    t = TopicOffsets()
    assert t.put(0, value(5))
    assert not t.put(0, b"\x00\x09" + bytes(30))  # unknown version: previous value kept
    assert not t.put(0, b"\x00\x03" + bytes(5))  # too short
    assert t.get(0)[0] == 5
    bad = b"\x00\x03" + struct.pack(">qih", 6, 0, 50) + bytes(8)  # metadata runs past the end
    assert t.put(0, bad)
    assert t.get(0) is None and 0 in t
    assert list(t.items()) == [(0, -1, -1, None)]


def test_hostile_partition_numbers_stay_sparse() -> None:
    t = TopicOffsets()
    for p in (2**31 - 1, -5, 1_000_000):
        assert t.put(p, value(p))
    assert len(t.metas) < 2048
    assert t.partitions() == [-5, 1_000_000, 2**31 - 1]
    assert t.get(2**31 - 1)[0] == 2**31 - 1
    assert t.pop(-5) and t.get(-5) is None and len(t) == 2


def test_table_of_rare_fields_stays_bounded() -> None:
    t = TopicOffsets()
    for i in range(10_000):  # a new commit timestamp every commit of 4 partitions
        for p in range(4):
            t.put(p, value(i, -1, "", TS + i))
    assert len(t.table) < 64
    assert t.value(3) == OffsetCommitValue(9999, -1, "", TS + 9999, None)


def test_memory_per_offset_is_small() -> None:
    t = TopicOffsets()
    for p in range(1000):
        t.put(p, value(p, 0, "", TS))
    assert t.nbytes() / 1000 < 20


def test_set_run_counts_and_bounds() -> None:
    t = TopicOffsets()
    t.put(1, value(1))
    meta = t.meta_index(b"\x00\x03" + value(0)[14:])
    assert t.set_run(0, array("q", (10, 11, 12)), array("i", (0, 0, 0)), meta)
    assert len(t) == 3 and t.get(2)[0] == 12
    assert not t.set_run(10**9, array("q", (1,)), array("i", (0,)), meta)


# Bulk replay ---------------------------------------------------------------------------------------

def _shard() -> tuple[GroupCoordinatorShard, FakeContext]:
    ctx = FakeContext(ManualClock())
    ctx.shard = GroupCoordinatorShard(0, ctx, CoordinatorConfig())
    return ctx.shard, ctx


def _state(shard: GroupCoordinatorShard) -> dict[str, Any]:
    om = shard.offset_manager
    out: dict[str, Any] = {"groups": sorted(shard.groups)}
    for group, topics in om.offsets.items():
        for topic, parts in topics.items():
            out[f"{group}/{topic}"] = [(p, o, e, v and (v.metadata, v.commit_timestamp,
                                                     v.expire_timestamp))
                                       for p, o, e, v in parts.items()]
    out["unstable"] = sorted(om.txn.open)
    return out


def _both(batches: list[bytes], records: list[tuple[Any, bytes | None]]) -> dict[str, Any]:
    """Replay as RawBatches and record by record: the same state; returns it."""
    bulk, c1 = _shard()
    per_record, c2 = _shard()
    try:
        bulk.replay_all(RawBatches([b"".join(batches)]))
        assert list(RawBatches([b"".join(batches)])) == records
        per_record.replay_all(records)
        assert _state(bulk) == _state(per_record)
        return _state(bulk)
    finally:
        c1.close()
        c2.close()


def _commit_batch(group: str, topic: str, parts: list[int], offset: int = 0, epochs: Any = None,
                  metadata: str = "", compression: int = 0, expire: int | None = None
                  ) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    recs = [(encode_offset_key(group, topic, p),
             value(offset + i, -1 if epochs is None else epochs(p), metadata, TS, expire))
            for i, p in enumerate(parts)]
    return build_batch(recs, compression=compression), recs


@pytest.mark.parametrize("n", [1, 8, 63, 64, 65, 200, 1000, 5000])
def test_one_commit_request_per_batch(n: int) -> None:
    batch, recs = _commit_batch("g", "topic", list(range(n)), 100)
    state = _both([batch], recs)
    assert state["g/topic"][-1][:2] == (n - 1, 100 + n - 1)


@pytest.mark.parametrize("case", ["epochs", "shuffled", "duplicates", "metadata", "gzip",
                                  "expire", "offset-from-3", "past-65536", "negative"])
def test_layouts(case: str) -> None:
    parts = list(range(300))
    kwargs: dict[str, Any] = {}
    if case == "epochs":
        kwargs["epochs"] = lambda p: p % 7
    elif case == "shuffled":
        random.Random(1).shuffle(parts)
    elif case == "duplicates":
        parts = [p % 50 for p in parts]
    elif case == "metadata":
        kwargs["metadata"] = "x" * 100
    elif case == "gzip":
        kwargs["compression"] = 1
    elif case == "expire":
        kwargs["expire"] = TS + 1000
    elif case == "offset-from-3":
        parts = [p + 3 for p in parts]
    elif case == "past-65536":
        parts = [p + 65400 for p in parts]
    elif case == "negative":
        parts = [p - 150 for p in parts]
    batch, recs = _commit_batch("g", "t", parts, **kwargs)
    _both([batch], recs)


def test_mixed_batches_tombstones_groups_and_transactions() -> None:
    b1, r1 = _commit_batch("g1", "t", list(range(100)))
    b2, r2 = _commit_batch("g2", "t", list(range(100)), 7)
    mixed = r1[:5] + [(encode_offset_key("g1", "t", 3), None)] + r2[:70]
    b3 = build_batch(mixed)
    txn = [(encode_offset_key("g1", "t", p), value(900 + p)) for p in range(70)]
    b4 = build_batch(txn, producer_id=5, producer_epoch=0, transactional=True)
    b5, r5 = _commit_batch("g1", "t", list(range(100)), 2000)  # while g1/t has open txn offsets
    b6 = marker_batch(5, 0, True, 0, TS)
    b7, r7 = _commit_batch("g1", "t", list(range(100)), 3000)
    group_record = (encode_key(__import__("kafkette.protocol.group_records", fromlist=["x"])
                               .GroupMetadataKey("g3")),
                    encode_value(__import__("kafkette.protocol.group_records", fromlist=["x"])
                                 .GroupMetadataValue("", 0, None, None, -1, ())))
    b8 = build_batch([group_record] * 10)
    records = (r1 + r2 + mixed + [(TxnRecordKey(5, 0, k), v) for k, v in txn] + r5
               + [(TxnMarker(5, 0, True), None)] + r7 + [group_record] * 10)
    state = _both([b1, b2, b3, b4, b5, b6, b7, b8], records)
    assert state["g1/t"][50][:2] == (50, 3050)
    assert state["groups"] == ["g1", "g2", "g3"]


def test_aborted_transaction_does_not_materialise() -> None:
    txn = [(encode_offset_key("g", "t", p), value(900 + p)) for p in range(20)]
    b1, r1 = _commit_batch("g", "t", list(range(20)))
    b2 = build_batch(txn, producer_id=5, producer_epoch=0, transactional=True)
    b3 = marker_batch(5, 0, False, 0, TS)
    state = _both([b1, b2, b3], r1 + [(TxnRecordKey(5, 0, k), v) for k, v in txn]
                  + [(TxnMarker(5, 0, False), None)])
    assert [row[1] for row in state["g/t"]] == list(range(20))
    assert state["unstable"] == []


def test_corrupt_value_in_a_bulk_batch_keeps_previous_and_logs_once(caplog: Any) -> None:
    b1, r1 = _commit_batch("g", "t", list(range(20)))
    bad = [(encode_offset_key("g", "t", p), b"\x00\x09" + bytes(22)) for p in range(20)]
    with caplog.at_level(logging.WARNING, "kafkette.coordinator"):
        state = _both([b1, build_batch(bad)], r1 + bad)
    assert [row[1] for row in state["g/t"]] == list(range(20))
    assert sum("undecodable" in r.message for r in caplog.records) == 2 * 20  # both replays


def test_many_small_batches() -> None:
    batches, records = [], []
    for i in range(300):
        b, r = _commit_batch(f"g{i % 7}", f"t{i % 3}", [i % 11], i)
        batches.append(b)
        records += r
    _both(batches, records)


@pytest.mark.parametrize("case", ["consecutive", "epochs", "shuffled", "v1", "gzip"])
def test_commit_batches_take_the_bulk_path(case: str, monkeypatch: Any) -> None:
    parts = list(range(500))
    kwargs: dict[str, Any] = {"epochs": lambda p: p % 3} if case == "epochs" else {}
    if case == "shuffled":
        random.Random(2).shuffle(parts)
    if case == "v1":
        kwargs["expire"] = TS + 5
    if case == "gzip":
        kwargs["compression"] = 1
    batch, recs = _commit_batch("g", "t", parts, 10, **kwargs)
    shard, ctx = _shard()
    seen = _replayed_record_by_record(shard, batch, monkeypatch)
    assert seen == [1]  # only the first record of a new (group, topic) goes record by record
    assert shard.fetch_offsets("g", None) == _state_rows(recs)
    ctx.close()


def _replayed_record_by_record(shard: GroupCoordinatorShard, batch: bytes,
                               monkeypatch: Any) -> list[int]:
    """Replay ``batch`` as the log's chunk; the sizes of what went record by record."""
    seen: list[int] = []
    offsets = shard.offset_manager
    real = offsets.replay_records

    def spy(records: Any, replay_other: Any) -> int:
        if type(records) is not RawBatches:
            seen.append(len(records))
        return real(records, replay_other)

    monkeypatch.setattr(offsets, "replay_records", spy)
    shard.replay_all(RawBatches([batch]))
    return seen


def _state_rows(recs: list[tuple[bytes, bytes]]) -> list[Any]:
    shard, ctx = _shard()
    shard.replay_all(recs)
    try:
        return shard.fetch_offsets("g", None)
    finally:
        ctx.close()


def test_undecodable_key_in_a_bulk_shaped_batch_goes_record_by_record(caplog: Any) -> None:
    bad_key = b"\x00\x01\x00\x05g\xff\xfe\xfd\xfc\x00\x01t"  # group name not UTF-8
    recs = [(bad_key + p.to_bytes(4, "big"), value(p)) for p in range(100)]
    with caplog.at_level(logging.WARNING, "kafkette.coordinator"):
        state = _both([build_batch(recs)], recs)
    assert list(state) == ["groups", "unstable"]
    assert sum("undecodable" in r.message for r in caplog.records) == 2 * 100


def test_small_batch_parser_matches_key_values() -> None:
    from kafkette.coordinator.group.offsets.offset_replay import _plain_records
    from kafkette.protocol.records import Record, key_values

    key = encode_offset_key("g" * 100, "t" * 100, 3)  # two-byte length varints
    plain = build_batch([(key, value(1)), (None, b"x"), (key, None)])
    assert _plain_records(plain, 3) == [kv for kv in key_values(plain) if kv[0] is not None]
    with_headers = build_batch([Record(0, TS, key, value(2), [("h", b"v")])])
    assert _plain_records(with_headers, 1) is None  # left to key_values
    assert _plain_records(plain, 2) is None  # a count that does not match the bytes
    assert _plain_records(plain[:-3], 3) is None  # truncated
    _both([plain, with_headers], [(key, value(1)), (key, None), (key, value(2))])


@pytest.mark.parametrize("sizes", [[1000, 1000, 3], [5, 70, 200], [64, 64, 1]])
def test_group_commit_batch_of_several_requests_takes_the_bulk_path(sizes: list[int],
                                                                     monkeypatch: Any) -> None:
    """One append of a group commit: the records of several commit requests (other groups,
    other topics) follow each other in one batch; each request's records are one bulk run."""
    per_group = [_commit_batch(f"group-{i}", f"topic-{i % 2}", list(range(size)), 7 * i)[1]
                 for i, size in enumerate(sizes)]
    recs = [r for group_recs in per_group for r in group_recs]
    batch = build_batch(recs)
    state = _both([batch], recs)
    assert state[f"group-{len(sizes) - 1}/topic-{(len(sizes) - 1) % 2}"][-1][0] == sizes[-1] - 1
    shard, ctx = _shard()
    seen = _replayed_record_by_record(shard, batch, monkeypatch)
    assert seen == [1] * len(sizes)  # the first record of each new (group, topic) only
    per_record, ctx2 = _shard()
    per_record.replay_all(recs)
    for i in range(len(sizes)):
        assert shard.fetch_offsets(f"group-{i}", None) == per_record.fetch_offsets(f"group-{i}",
                                                                                 None)
    ctx.close()
    ctx2.close()


def test_group_commit_batch_with_a_request_of_the_same_group_again() -> None:
    """A, B, A: bisection guesses wrong over B; the records still replay as record by record."""
    recs = [r for i, size in enumerate([40, 3, 40])
            for r in _commit_batch(f"group-{i % 2}", "t", list(range(size)), 10 * i)[1]]
    state = _both([build_batch(recs)], recs)
    assert state["group-0/t"][0][:2] == (0, 20)
