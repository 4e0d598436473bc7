"""The dispatcher's per-connection shortcuts must never answer a request from a stale decode.

broker/connection.py reuses the decoded header and body of the last Heartbeat / ConsumerGroupHeartbeat
of a connection when a frame repeats it byte for byte (but for the correlation id), and
protocol/headers.py keeps the last client id of a connection. Frames that differ in one byte, in
the version, or that are malformed after a good repeat must be decoded (and refused) afresh.
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
from tests.wire import WireClient

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
