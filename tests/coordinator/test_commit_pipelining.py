"""OffsetCommit pipelining on one connection, over a real socket: commits behind a commit whose
append is held are handled at once (their records join the next batch), any other request
waits until everything before it is answered, and responses leave in request order; a read
after the commits sees the last of them."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import encode_request, request_type

from .env import COMMIT, FETCH, Env, entity
from .test_runtime_wire import _hold, _release


def _commit(group: str, offset: int) -> Any:
    cls = request_type(COMMIT, 9)
    part = entity(item_type(cls, "topics"), "partitions", partition_index=0,
                  committed_offset=offset, committed_leader_epoch=-1, committed_metadata="")
    return make(cls, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                group_instance_id=None, retention_time=timedelta(milliseconds=-1),
                topics=(entity(cls, "topics", name="t", partitions=(part,)),))


def _fetch(group: str) -> Any:
    cls = request_type(FETCH, 9)
    topics = (make(item_type(item_type(cls, "groups"), "topics"), name="t",
                   partition_indexes=(0,)),)
    return make(cls, groups=(entity(cls, "groups", group_id=group, member_id=None,
                                    member_epoch=-1, topics=topics),), require_stable=False)


def _memory_offset(e: Env, group: str) -> int | None:
    rows = e.run(lambda: e.coordinator.shard_for(group).fetch_offsets(group, None))
    return rows[0][1][0][1] if rows else None


def _until(predicate: Any, timeout: float = 5) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.002)


def test_commits_pipeline_behind_a_held_write_and_answer_in_order(make_env):
    e = make_env()
    e.create_topic("t", 1)
    gid = e.group_id()
    m = e.member()
    assert m.commit(gid, {("t", 0): 1}) == {("t", 0): 0}
    held = _hold(e, gid)
    client = m.client
    sent = [client.send(COMMIT, 9, _commit(gid, offset)) for offset in (2, 3, 4)]
    sent.append(client.send(FETCH, 9, _fetch(gid)))
    # The commits behind the held one are handled (applied to memory) before it is durable...
    _until(lambda: _memory_offset(e, gid) == 4)
    conn = m._conn()
    assert e.run(lambda: len(conn._waiting)) == 3
    # ...but the OffsetFetch waits in the queue until every request before it is answered.
    _until(lambda: e.run(lambda: len(conn._queue)) == 1)
    time.sleep(0.05)
    assert e.run(lambda: len(conn._queue)) == 1
    _release(e, held)
    got = [client.receive(COMMIT, 9) for _ in range(3)]
    assert [corr for corr, _r in got] == sent[:3]
    assert all(p.error_code == 0 for _c, r in got for t in r.topics for p in t.partitions)
    corr, fetched = client.receive(FETCH, 9)
    assert corr == sent[3]
    assert [p.committed_offset for p in fetched.groups[0].topics[0].partitions] == [4]


class _CountingLog:
    """Counts the appends of a partition's coordinator log."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.appends = 0

    def append(self, records: Any) -> Any:
        self.appends += 1
        return self.inner.append(records)

    def append_inline(self, records: Any) -> Any:
        self.appends += 1
        return self.inner.append_inline(records)

    def read(self) -> Any:
        return self.inner.read()


def test_many_pipelined_commits_share_appends_and_answer_in_order(make_env):
    e = make_env()
    e.create_topic("t", 1)
    gid = e.group_id()
    m = e.member()
    client = m.client
    ctx = e.coordinator.runtime.contexts[e.coordinator.partition_for(gid)]
    counting = e.run(lambda: _CountingLog(ctx.log))
    e.run(lambda: setattr(ctx, "log", counting))
    frames = [encode_request(COMMIT, 9, 100 + i, "c", _commit(gid, i)) for i in range(50)]
    frames.append(encode_request(FETCH, 9, 999, "c", _fetch(gid)))
    client.send_raw(b"".join(frames))  # one write: the broker reads them together
    corrs = []
    for _ in range(50):
        corr, r = client.receive(COMMIT, 9)
        corrs.append(corr)
        assert [p.error_code for t in r.topics for p in t.partitions] == [0]
    assert corrs == list(range(100, 150))
    corr, fetched = client.receive(FETCH, 9)
    assert corr == 999
    assert [p.committed_offset for p in fetched.groups[0].topics[0].partitions] == [49]
    assert 1 <= counting.appends < 50  # one connection's commits share appends
