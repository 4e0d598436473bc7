"""The dispatcher's per-connection shortcuts must never answer a request from a stale decode.

broker/connection.py reuses the decoded header and body of the last Heartbeat / ConsumerGroupHeartbeat
of a connection when a frame repeats it byte for byte (but for the correlation id), and the plan
of the last OffsetCommit when a frame repeats it but for its committed offsets
(broker/request_memo.py); protocol/headers.py keeps the last client id of a connection. Frames
that differ in one byte, in the version, or that are malformed after a good repeat must be decoded
(and refused) afresh.
"""

from __future__ import annotations

import logging
import struct
from datetime import timedelta

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import make
from kafkette.protocol.codec import (
    codec,
    decode_response,
    encode_request,
    request_type,
    response_type,
)
from tests.hostile.healthy import HEARTBEAT, HealthyClient
from tests.transactions.helpers import create_topic
from tests.wire import WireClient, entity

NONE, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID = 0, 22, 25


def _beat(version: int, corr: int, group: str, generation: int, member: str,
          client_id: str | None = "memo") -> bytes:
    fields = dict(group_id=group, generation_id=generation, member_id=member)
    if version >= 3:
        fields["group_instance_id"] = None
    return encode_request(HEARTBEAT, version, corr, client_id,
                          make(request_type(HEARTBEAT, version), **fields))


def _answer(client: WireClient, version: int) -> tuple[int, int]:
    corr, body = decode_response(HEARTBEAT, version, client.read_frame())
    return corr, int(body.error_code)


def test_repeated_heartbeats_are_decoded_by_their_bytes(kafka_broker):
    with HealthyClient(kafka_broker) as member, WireClient(kafka_broker) as client:
        group, gen, mid = member.group, member.generation, member.member_id
        other = ("x" if mid[0] != "x" else "y") + mid[1:]  # same length, another member
        sent = [
            (4, 1, gen, mid, NONE),
            (4, 2, gen, mid, NONE),  # a repeat: memoized
            (4, 3, gen + 1, mid, ILLEGAL_GENERATION),  # same length, one byte differs
            (4, 4, gen, mid, NONE),
            (4, 5, gen, other, UNKNOWN_MEMBER_ID),
            (3, 6, gen, mid, NONE),  # another version of the same request
            (4, 7, gen, mid, NONE),
            (4, 8, gen, mid, NONE),
        ]
        # Pipelined: all in flight at once, answered in order with their correlation ids.
        client.send_raw(b"".join(_beat(v, c, group, g, m) for v, c, g, m, _ in sent))
        for version, corr, _g, _m, error in sent:
            assert _answer(client, version) == (corr, error)


def test_malformed_frame_after_a_memoized_heartbeat_closes_the_connection(kafka_broker):
    with HealthyClient(kafka_broker) as member, WireClient(kafka_broker) as client:
        good = _beat(4, 1, member.group, member.generation, member.member_id)
        client.send_raw(good + _beat(4, 2, member.group, member.generation, member.member_id))
        assert _answer(client, 4) == (1, NONE)
        assert _answer(client, 4) == (2, NONE)
        # Same size and version, but the group id's compact length now runs past the frame.
        body_at = 4 + 10 + len(b"memo") + 1  # size, key/version/corr/client id length, tags
        bad = bytearray(good)
        bad[body_at] = 0x7F
        client.send_raw(bytes(bad))
        assert client.is_closed_by_peer()
        member.round(1)  # the broker lives on
        assert member.errors == []


def test_client_id_is_read_afresh_when_it_changes(kafka_broker, caplog):
    caplog.set_level(logging.DEBUG, logger="kafkette.requests")
    with HealthyClient(kafka_broker) as member, WireClient(kafka_broker) as client:
        args = (member.group, member.generation, member.member_id)
        client.send_raw(_beat(4, 1, *args, client_id="aaaa") + _beat(4, 2, *args, client_id="aaaa")
                        + _beat(4, 3, *args, client_id="bbbb") + _beat(4, 4, *args, client_id=None))
        assert [_answer(client, 4) for _ in range(4)] == [(c, NONE) for c in (1, 2, 3, 4)]
        lines = [r.getMessage() for r in caplog.records
                 if r.name == "kafkette.requests" and "Heartbeat v4" in r.getMessage()]
        assert [line.split(" from ")[0] for line in lines] == [
            "Heartbeat v4 correlation=1 client_id=aaaa", "Heartbeat v4 correlation=2 client_id=aaaa",
            "Heartbeat v4 correlation=3 client_id=bbbb", "Heartbeat v4 correlation=4 client_id=None"]
        # A client id of the same length that is not UTF-8 is refused as before.
        frame = bytearray(_beat(4, 5, *args, client_id="aaaa"))
        frame[4 + 10] = 0xFF
        client.send_raw(bytes(frame))
        assert client.is_closed_by_peer()


def test_heartbeat_after_unsupported_version_is_unaffected(kafka_broker):
    """A refused version (v5 does not exist) must not reach the memo of v4."""
    with HealthyClient(kafka_broker) as member, WireClient(kafka_broker) as client:
        good = _beat(4, 1, member.group, member.generation, member.member_id)
        client.send_raw(good)
        assert _answer(client, 4) == (1, NONE)
        client.send_raw(good[:6] + struct.pack(">h", 99) + good[8:])  # version 99, same bytes
        assert client.is_closed_by_peer()


def test_repeated_answers_are_framed_byte_for_byte(kafka_broker):
    """The connection reframes a repeated response object by patching size and correlation id
    (broker/connection.py _send): every frame must equal a fresh encoding of its answer, across
    answers that alternate, versions with and without the flexible header, and extreme ids."""
    with HealthyClient(kafka_broker) as member, WireClient(kafka_broker) as client:
        group, gen, mid = member.group, member.generation, member.member_id
        sent = []
        for i, corr in enumerate((0, 1, 2, 2**31 - 1, -(2**31), -1, 7, 8, 9, 10)):
            version = 3 if i in (4, 5) else 4
            generation = gen + 1 if i in (2, 7) else gen
            sent.append((version, corr, generation,
                         ILLEGAL_GENERATION if generation != gen else NONE))
        client.send_raw(b"".join(_beat(v, c, group, g, mid) for v, c, g, _ in sent))
        for version, corr, _g, error in sent:
            frame = client.read_frame()
            expected = make(response_type(HEARTBEAT, version), throttle_time=timedelta(0),
                            error_code=ErrorCode(error))
            assert frame == codec(HEARTBEAT, version).encode_response(corr, expected)[4:]


# OffsetCommit: a repeat but for its committed offsets runs on the memo's plan -----------------

OFFSET_COMMIT, OFFSET_FETCH, UNKNOWN_TOPIC_OR_PARTITION = 8, 9, 3


def _commit(version: int, corr: int, group: str, topic: str, parts: list[tuple[int, int, str]],
            client_id: str | None = "memo") -> bytes:
    cls = request_type(OFFSET_COMMIT, version)
    topic_cls = entity(cls, "topics", name=topic, partitions=()).__class__
    part = [entity(topic_cls, "partitions", partition_index=p, committed_offset=o,
                   committed_leader_epoch=-1, committed_metadata=m) for p, o, m in parts]
    return encode_request(OFFSET_COMMIT, version, corr, client_id, make(
        cls, group_id=group, generation_id_or_member_epoch=-1, member_id="",
        group_instance_id=None, topics=(entity(cls, "topics", name=topic, partitions=tuple(part)),)))


def _commit_answer(client: WireClient, version: int) -> tuple[int, list[int]]:
    corr, body = decode_response(OFFSET_COMMIT, version, client.read_frame())
    return corr, [int(p.error_code) for t in body.topics for p in t.partitions]


def _committed(client: WireClient, group: str, topic: str, partitions: int
               ) -> dict[int, tuple[int, str]]:
    cls = request_type(OFFSET_FETCH, 9)
    group_cls = entity(cls, "groups", group_id=group, member_id=None, member_epoch=-1,
                       topics=None).__class__
    body = client.request(OFFSET_FETCH, 9, groups=(make(group_cls, group_id=group, member_id=None,
                                                        member_epoch=-1, topics=(entity(
                                                            group_cls, "topics", name=topic,
                                                            partition_indexes=tuple(
                                                                range(partitions))),)),),
                          require_stable=False)
    return {p.partition_index: (int(p.committed_offset), p.metadata)
            for t in body.groups[0].topics for p in t.partitions}


def test_repeated_commits_take_their_own_offsets_and_fields(kafka_broker):
    create_topic(kafka_broker, "memo-commits", 3)
    group, topic = "memo-commit-group", "memo-commits"
    sent = [
        (9, 1, [(0, 10, "a")], [0]),
        (9, 2, [(0, 11, "a")], [0]),  # offset only: the memo's plan, offset 11
        (9, 3, [(0, 12, "a")], [0]),
        (9, 4, [(0, 13, "b")], [0]),  # same length, metadata differs: decoded afresh
        (9, 5, [(0, 14, "b")], [0]),
        (9, 6, [(1, 15, "b")], [0]),  # another partition, same length
        (9, 7, [(7, 16, "b")], [UNKNOWN_TOPIC_OR_PARTITION]),  # no partition 7
        (9, 8, [(1, 17, "b")], [0]),
        (8, 9, [(1, 18, "b")], [0]),  # another version
        (9, 10, [(0, 20, "c"), (2, 30, "c")], [0, 0]),  # two windows
        (9, 11, [(0, 21, "c"), (2, 31, "c")], [0, 0]),
        (9, 12, [(0, 31, "c"), (2, 21, "c")], [0, 0]),  # the offsets swapped
        (9, 13, [(0, 40, "d"), (2, 40, "d")], [0, 0]),  # equal offsets: no memo, still right
        (9, 14, [(0, 41, "d"), (2, 41, "d")], [0, 0]),
        (9, 15, [(0, 41, "d"), (2, 41, "d")], [0, 0]),  # byte-identical: the memo's body
        (9, 16, [(0, 41, "d"), (2, 42, "d")], [0, 0]),  # no longer identical
        (9, 17, [(0, 2**40 + 5, "d"), (2, 42, "d")], [0, 0]),
        (9, 18, [(0, 2**40 + 6, "d"), (2, 43, "d")], [0, 0]),  # a repeat of that one
    ]
    with WireClient(kafka_broker) as client:
        # Pipelined on one connection: the commits are handled while earlier ones wait.
        client.send_raw(b"".join(_commit(v, c, group, topic, parts) for v, c, parts, _ in sent))
        for version, corr, _parts, errors in sent:
            assert _commit_answer(client, version) == (corr, errors)
        assert _committed(client, group, topic, 3) == {
            0: (2**40 + 6, "d"), 1: (18, "b"), 2: (43, "d")}


def test_a_fault_registered_after_a_repeat_still_applies(kafka_broker):
    create_topic(kafka_broker, "memo-fault", 1)
    group, topic = "memo-fault-group", "memo-fault"
    with WireClient(kafka_broker) as client:
        for corr in (1, 2):
            client.send_raw(_commit(9, corr, group, topic, [(0, corr, "")]))
            assert _commit_answer(client, 9) == (corr, [0])
        kafka_broker.inject("OffsetCommit", "NOT_COORDINATOR", count=1)
        client.send_raw(_commit(9, 3, group, topic, [(0, 3, "")]))
        assert _commit_answer(client, 9) == (3, [int(ErrorCode.not_coordinator)])
        client.send_raw(_commit(9, 4, group, topic, [(0, 4, "")]))
        assert _commit_answer(client, 9) == (4, [0])
        assert _committed(client, group, topic, 1) == {0: (4, "")}


def test_malformed_frame_after_a_memoized_commit_closes_the_connection(kafka_broker):
    create_topic(kafka_broker, "memo-bad", 1)
    with WireClient(kafka_broker) as client:
        good = _commit(9, 1, "memo-bad-group", "memo-bad", [(0, 5, "")])
        client.send_raw(good + _commit(9, 2, "memo-bad-group", "memo-bad", [(0, 6, "")]))
        assert _commit_answer(client, 9) == (1, [0])
        assert _commit_answer(client, 9) == (2, [0])
        # Same size and version; the partitions' compact array length (after the offset's
        # window) now claims far more entries than the frame holds.
        bad = bytearray(_commit(9, 3, "memo-bad-group", "memo-bad", [(0, 7, "")]))
        at = bytes(bad).index(struct.pack(">q", 7)) - 4 - 1  # partition index, then the count
        bad[at] = 0x7F
        client.send_raw(bytes(bad))
        assert client.is_closed_by_peer()


def test_pipelined_repeated_commits_log_their_own_correlation_ids(kafka_broker, caplog):
    caplog.set_level(logging.DEBUG, logger="kafkette.requests")
    create_topic(kafka_broker, "memo-log", 1)
    with WireClient(kafka_broker) as client:
        client.send_raw(b"".join(_commit(9, corr, "memo-log-group", "memo-log", [(0, corr, "")])
                                 for corr in range(1, 7)))
        assert [_commit_answer(client, 9) for _ in range(6)] == [(c, [0]) for c in range(1, 7)]
    lines = [r.getMessage() for r in caplog.records
             if r.name == "kafkette.requests" and r.getMessage().startswith("OffsetCommit v9")]
    assert sorted(line.split(" client_id=")[0] for line in lines) == [
        f"OffsetCommit v9 correlation={c}" for c in range(1, 7)]
