"""Compaction of __consumer_offsets: the log shrinks to live state and a restart still finds it."""

from __future__ import annotations

from collections import Counter

from kafkette.broker.services.offsets_log import OFFSETS_TOPIC

from .env import DELETE, DESCRIBE, Env
from .test_join_sync import form


def test_compaction_keeps_live_state_across_restart(make_env):
    e: Env = make_env(**{"offsets.topic.num.partitions": 1,
                         "offsets.topic.segment.bytes": 1024,
                         "log.cleaner.delete.retention.ms": 0})
    e.create_topic("t", 4)
    m = e.member()
    history = "simple"
    for rnd in range(60):
        assert m.commit(history, {("t", p): rnd * 10 + p for p in range(4)}) == {
            ("t", p): 0 for p in range(4)}
    gone = "gone"
    assert m.commit(gone, {("t", 0): 5}) == {("t", 0): 0}
    r = m.request(DELETE, 2, groups_names=(gone,))
    assert [x.error_code for x in r.results] == [0]
    gid, (a, b), leader, _f = form(e, 2, session=60_000)

    before = e.raw_offsets_records()
    plog = e.broker.broker.logs.partition(OFFSETS_TOPIC, 0)
    assert len(plog.segments) > 3  # small segments: most of the history is sealed
    assert e.broker.run(e.broker.broker.logs.run_compaction()) == 1
    after = e.raw_offsets_records()
    assert len(after) < len(before) / 4
    sealed_keys = Counter(k for k, _v in after[:len(after) - _active_records(e)])
    assert max(sealed_keys.values()) == 1  # one record per key left in the cleaned segments

    e.broker.restart()
    m.reconnect()
    a.reconnect()
    assert m.fetch(history, [("t", p) for p in range(4)]) == {
        ("t", p): (590 + p, -1, "", 0) for p in range(4)}
    assert m.fetch(gone, [("t", 0)]) == {("t", 0): (-1, -1, "", 0)}
    described = m.request(DESCRIBE, 5, groups=(gone, gid),
                          include_authorized_operations=False).groups
    assert [d.group_state for d in described] == ["Dead", "Stable"]
    assert sorted(x.member_id for x in described[1].members) == sorted(
        [a.member_id, b.member_id])
    assert e.group(gid).leader_id == leader.member_id
    assert a.heartbeat(gid) == 0


def _active_records(e: Env) -> int:
    """Records in the active (not yet compactable) segment of __consumer_offsets-0."""
    from kafkette.protocol.records import decode_records

    plog = e.broker.broker.logs.partition(OFFSETS_TOPIC, 0)
    base = plog.segments[-1].base_offset

    def count() -> int:
        return sum(1 for _h, data in plog.iter_batches(base) for r in decode_records(data)
                   if r.offset >= base)
    return e.broker.run(count)
