"""The records an OffsetCommit writes (offset_manager.commit) and their replay: a commit stores
its own records as it builds them (their values not decoded again), which leaves exactly the
state the same bytes leave when replayed from the log; they are byte-exact with Kafka's
encoding."""

from __future__ import annotations

from typing import Any

import pytest

from kafkette.coordinator.group.group_config import CoordinatorConfig
from kafkette.coordinator.group.group_shard import GroupCoordinatorShard
from kafkette.coordinator.group.offsets.offset_manager import CommitPartition
from kafkette.coordinator.group.offsets.offset_store import built_entry, decode_rest
from kafkette.coordinator.group.requests import OffsetCommitRequest
from kafkette.coordinator.runtime.clock import ManualClock
from kafkette.coordinator.runtime.error_codes import NONE, OFFSET_METADATA_TOO_LARGE
from kafkette.protocol.group_records import (
    OffsetCommitValue,
    encode_offset_key,
    encode_value,
)

from .test_offset_store import _state
from .test_shard_unit import FakeContext

NOW = 1_700_000_000_000


def _shard(metadata_max_bytes: int = 4096) -> tuple[GroupCoordinatorShard, FakeContext]:
    clock = ManualClock(NOW)
    ctx = FakeContext(clock)
    ctx.shard = GroupCoordinatorShard(
        0, ctx, CoordinatorConfig(offset_metadata_max_bytes=metadata_max_bytes))
    ctx.shard.on_loaded()
    return ctx.shard, ctx


CASES: dict[str, tuple[list[CommitPartition], int]] = {
    "one": ([CommitPartition("t", 0, 5, -1, "")], -1),
    "none-metadata": ([CommitPartition("t", 0, 5, 3, None)], -1),
    "metadata": ([CommitPartition("t", p, 10 + p, 2, "meta") for p in range(4)], -1),
    "unicode": ([CommitPartition("t", 1, 7, -1, "é😀"), CommitPartition("u", 0, 8, 1, "")], -1),
    "retention": ([CommitPartition("t", 0, 5, -1, ""), CommitPartition("t", 1, 6, -1, "m")],
                  60_000),
    "retention-one": ([CommitPartition("t", 0, 5, 4, "")], 60_000),
    "topics": ([CommitPartition(t, p, p, -1, "") for t in ("a", "b", "a") for p in (0, 2)], -1),
    "sparse": ([CommitPartition("t", 1 << 20, 1, -1, ""), CommitPartition("t", -3, 2, -1, "")],
               -1),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_commit_stores_what_replaying_its_records_stores(case: str) -> None:
    partitions, retention = CASES[case]
    live, c1 = _shard()
    from_log, c2 = _shard()
    try:
        for round_ in range(6):  # the second and later rounds take the cached-prefix path
            if round_ % 2 == 0:  # two commits a millisecond: the second one's entry is stored
                c1.clock.advance(1)
                c2.clock.advance(1)
            partitions = [CommitPartition(p.topic, p.partition, p.offset + 100 * round_,
                                          p.leader_epoch + round_, p.metadata)
                          for p in CASES[case][0]]
            request = OffsetCommitRequest("g", -1, "", None, retention)
            result = live.commit_offsets((request, partitions))
            assert not result.replay  # stored by the commit itself
            assert result.response == [NONE] * len(partitions)
            now = c1.clock.now_ms()
            expire = None if retention == -1 else now + retention
            assert list(result.records) == [
                (encode_offset_key("g", p.topic, p.partition),
                 encode_value(OffsetCommitValue(p.offset, p.leader_epoch, p.metadata or "",
                                                now, expire)))
                for p in partitions]
            from_log.replay_all(list(result.records))  # decoded as the log's records are
            assert _state(live) == _state(from_log), round_
    finally:
        c1.close()
        c2.close()


@pytest.mark.parametrize(("metadata", "expire"), [("", None), ("x", None), ("é😀", 5), ("", 9)])
def test_built_entry_is_what_the_rest_bytes_decode_to(metadata: str, expire: int | None) -> None:
    value = encode_value(OffsetCommitValue(42, 7, metadata, NOW, expire))
    head = 14 if expire is None else 10
    assert built_entry(metadata, NOW, expire) == decode_rest(value[:2] + value[head:])


@pytest.mark.parametrize(("metadata", "too_large"), [
    ("", False), ("abcd", False), ("abcde", True), ("😀😀", False), ("😀😀a", True),
    ("é" * 4, False), ("é" * 5, True), ("a😀a", False), ("😀" * 3, True)])
def test_metadata_limit_counts_utf16_units(metadata: str, too_large: bool) -> None:
    shard, ctx = _shard(metadata_max_bytes=4)
    try:
        result = shard.commit_offsets((OffsetCommitRequest("g", -1, "", None),
                                       [CommitPartition("t", 0, 1, -1, metadata),
                                        CommitPartition("t", 1, 1, -1, None)]))
        assert result.response == [OFFSET_METADATA_TOO_LARGE if too_large else NONE, NONE]
        assert len(result.records) == (1 if too_large else 2)
        stored = shard.fetch_offsets("g", [("t", [0, 1])])[0][1]
        assert [offset for _p, offset, *_rest in stored] == [-1 if too_large else 1, 1]
    finally:
        ctx.close()


def test_empty_metadata_is_too_large_under_a_negative_limit() -> None:
    shard, ctx = _shard(metadata_max_bytes=-1)
    try:
        result: Any = shard.commit_offsets((OffsetCommitRequest("g", -1, "", None),
                                            [CommitPartition("t", 0, 1, -1, ""),
                                             CommitPartition("t", 1, 1, -1, None)]))
        assert result.response == [OFFSET_METADATA_TOO_LARGE, NONE]
    finally:
        ctx.close()
