"""The listener that is up before the broker is ready (broker/boot.py).

It answers ApiVersions with bytes encoded by hand (api_versions.early_answer); they must be the
bytes the broker's kio-based handler answers, for every version and transaction.version. Any
other request waits, unread, until the broker adopts the listener, then is answered in order.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
import threading

import pytest
from kio.schema.errors import ErrorCode

from kafkette.broker.api_versions import (
    _response,
    early_answer,
    response_body,
    unsupported_api_versions_response,
    unsupported_body,
)
from kafkette.broker.boot import listen_early
from kafkette.broker.config import BrokerConfig
from kafkette.broker.server import Broker
from kafkette.broker.testing.runners import test_config as broker_config
from kafkette.protocol.build import make
from kafkette.protocol.codec import codec, decode_response, encode_request, request_type


@pytest.mark.parametrize("version", range(5))
@pytest.mark.parametrize("transaction_version", [0, 1, 2])
@pytest.mark.parametrize("error", [ErrorCode.none, ErrorCode.invalid_request])
def test_hand_encoded_body_is_what_kio_encodes(version, transaction_version, error):
    expected = codec(18, version).encode_body(_response(version, error, transaction_version))
    assert response_body(version, error.value, transaction_version) == expected


def test_hand_encoded_unsupported_version_body_is_what_kio_encodes():
    assert unsupported_body() == codec(18, 0).encode_body(unsupported_api_versions_response())
    assert struct.unpack_from(">h", unsupported_body())[0] == ErrorCode.unsupported_version.value


def api_versions(version: int, corr: int, client_id: str | None = "c", name: str | None = "t",
                 software_version: str | None = "1") -> bytes:
    body = make(request_type(18, version), client_software_name=name,
                client_software_version=software_version)
    return encode_request(18, version, corr, client_id, body)


def raw(version: int, corr: int, tail: bytes) -> bytes:
    """A request frame of ApiVersions ``version`` built by hand (kio knows no v5)."""
    payload = struct.pack(">hhi", 18, version, corr) + tail
    return struct.pack(">i", len(payload)) + payload


# Requests the early listener answers itself, and some it leaves to the broker (None answer).
REQUESTS = [
    *(api_versions(v, 10 + v) for v in range(5)),
    api_versions(0, 20, client_id=None),
    api_versions(1, 21, client_id="ünïcode"),
    api_versions(3, 22, name="bad name"),  # INVALID_REQUEST (KIP-511)
    api_versions(4, 23, name="", software_version="1.0"),
    raw(3, 24, b"\xff\xff\x00\x01\x01\x00"),  # null client id, empty software name, version
    api_versions(4, 25, name="-x"),
    raw(5, 26, b"\x00\x01c\x00\x02t\x021\x00"),  # UNSUPPORTED_VERSION, answered as v0
    raw(32767, 27, b""),
    raw(-1, 28, b""),
    raw(3, 29, b"\x00\x01c\x00\x02t\x021\x00trailing"),  # trailing bytes are tolerated
    raw(3, 30, b"\x00\x01c\x01\x00\x00\x02t\x021\x00"),  # an unknown header tag is skipped
]


def read_frame(sock: socket.socket) -> bytes:
    def exact(n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            assert chunk, "connection closed"
            data += chunk
        return data
    size = struct.unpack(">i", exact(4))[0]
    return struct.pack(">i", size) + exact(size)


@pytest.mark.parametrize("transaction_version", [0, 1, 2])
def test_early_answers_are_what_the_broker_answers(tmp_path, transaction_version):
    config = broker_config(str(tmp_path), transaction_version=transaction_version)

    async def main() -> list[bytes]:
        async with Broker(config) as broker:
            def ask() -> list[bytes]:
                answers = []
                for request in REQUESTS:
                    with socket.create_connection(broker.bound, timeout=10) as sock:
                        sock.sendall(request)
                        answers.append(read_frame(sock))
                return answers
            return await asyncio.to_thread(ask)

    answers = asyncio.run(main())
    for request, answer in zip(REQUESTS, answers, strict=True):
        assert early_answer(request[4:], transaction_version) == answer, request


def test_early_answer_leaves_other_requests_to_the_broker():
    metadata = encode_request(3, 12, 1, "c", make(request_type(3, 12), topics=None,
                                                   allow_auto_topic_creation=False,
                                                   include_topic_authorized_operations=False))
    assert early_answer(metadata[4:], 2) is None
    for bad in (raw(0, 1, b"")[4:],  # no client id length
                raw(0, 1, b"\x00\x05ab")[4:],  # client id runs past the frame
                raw(0, 1, b"\x00\x02\xff\xfe")[4:],  # client id not UTF-8
                raw(3, 1, b"\x00\x01c\x00")[4:],  # v3 body truncated
                raw(3, 1, b"\xff\xff\x00\x00\x00\x00")[4:],  # null software name (not nullable)
                raw(0, 1, b"\xff\xfe")[4:],  # client id length -2
                raw(3, 1, b"\x00\x01c\x01\x00\x09\x00\x02t\x021\x00")[4:],  # tag past the end
                raw(3, 1, b"\x00\x01c\x7f\x02t\x021\x00")[4:],  # 127 header tags
                raw(3, 1, b"\x00\x01c\x00\x05t\x021\x00")[4:],  # name runs past the end
                raw(3, 1, b"\x00\x01c\x00\x02\xff\x021\x00")[4:],  # name not UTF-8
                raw(3, 1, b"\x00\x01c\x00\x02t\x021")[4:],  # no body tag section
                raw(3, 1, b"\x00\x01c\x00\xff\xff\xff\xff\xff\x01")[4:]):  # varint too long
        assert early_answer(bad, 2) is None, bad


def test_requests_wait_for_the_broker_then_are_answered_in_order(tmp_path):
    config = BrokerConfig(broker_config(str(tmp_path)))
    metadata = encode_request(3, 12, 2, "c", make(request_type(3, 12), topics=None,
                                                   allow_auto_topic_creation=False,
                                                   include_topic_authorized_operations=False))

    async def main() -> None:
        early = await listen_early(config)
        server = early["PLAINTEXT"].server
        address = server.sockets[0].getsockname()[:2]
        reader, writer = await asyncio.open_connection(*address)
        idle_reader, idle_writer = await asyncio.open_connection(*address)
        # ApiVersions, then Metadata (waits for the broker), then ApiVersions (behind it).
        writer.write(api_versions(3, 1) + metadata + api_versions(0, 3))
        first = await read(reader)
        assert first == early_answer(api_versions(3, 1)[4:], 2)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(read(reader), 0.3)  # nothing answered before the broker
        broker = Broker(config, early=early)
        await broker.start()
        try:
            assert broker.bound == address
            corr, md = decode_response(3, 12, (await read(reader))[4:])
            assert corr == 2 and md.brokers[0].port == address[1]
            assert await read(reader) == early_answer(api_versions(0, 3)[4:], 2)
            # A connection that sent nothing before is the broker's too, and so is a new one.
            idle_writer.write(metadata)
            assert decode_response(3, 12, (await read(idle_reader))[4:])[0] == 2
            new_reader, new_writer = await asyncio.open_connection(*address)
            new_writer.write(metadata)
            assert decode_response(3, 12, (await read(new_reader))[4:])[0] == 2
            assert len(broker.connections) == 3
            for w in (writer, idle_writer, new_writer):
                w.close()
        finally:
            await broker.stop()

    asyncio.run(main())


def test_a_client_that_does_not_read_is_held_then_answered_in_order(tmp_path):
    config = BrokerConfig(broker_config(str(tmp_path), queued_max_response_bytes=2000))
    count = 60_000  # ~12 MB of answers: more than the socket buffers take

    async def main() -> None:
        early = await listen_early(config)
        address = early["PLAINTEXT"].server.sockets[0].getsockname()[:2]
        reader, writer = await asyncio.open_connection(*address)
        writer.write(b"".join(api_versions(0, corr) for corr in range(count)))
        await asyncio.sleep(0.3)  # answers pile up unread: the early listener stops reading
        (conn,) = early["PLAINTEXT"]._early
        assert conn._held
        broker = Broker(config, early=early)
        await broker.start()
        try:
            for corr in range(count):
                assert await read(reader) == early_answer(api_versions(0, corr)[4:], 2)
            writer.close()
        finally:
            await broker.stop()

    asyncio.run(main())


def test_the_healthcheck_waits_for_the_broker_not_the_early_listener(tmp_path):
    from kafkette.broker.cli.healthcheck import check

    config = BrokerConfig(broker_config(str(tmp_path)))

    async def main() -> None:
        early = await listen_early(config)
        host, port = early["PLAINTEXT"].server.sockets[0].getsockname()[:2]
        problem = await asyncio.to_thread(check, f"{host}:{port}", 0.5)
        assert problem is not None and "timed out" in problem
        broker = Broker(config, early=early)
        await broker.start()
        try:
            assert await asyncio.to_thread(check, f"{host}:{port}") is None
        finally:
            await broker.stop()

    asyncio.run(main())


def test_a_broker_that_fails_to_start_closes_its_early_listener(tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    config = BrokerConfig(broker_config(str(a_file)))  # log.dirs is a file: start fails

    async def main() -> None:
        early = await listen_early(config)
        address = early["PLAINTEXT"].server.sockets[0].getsockname()[:2]
        reader, writer = await asyncio.open_connection(*address)
        broker = Broker(config, early=early)
        with pytest.raises(Exception, match="not a directory"):
            await broker.start()
        await broker.stop()
        assert await reader.read() == b""  # the waiting connection is closed
        with pytest.raises(OSError):
            await asyncio.open_connection(*address)
        writer.close()

    asyncio.run(main())


def test_a_client_that_connects_before_the_broker_is_ready_produces(tmp_path, caplog):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    config = BrokerConfig(broker_config(str(tmp_path)))
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    def run(coro):  # noqa: ANN001, ANN202
        return asyncio.run_coroutine_threadsafe(coro, loop).result(30)

    caplog.set_level(logging.DEBUG, logger="kafkette.requests")
    early = run(listen_early(config))
    host, port = early["PLAINTEXT"].server.sockets[0].getsockname()[:2]
    producer = confluent_kafka.Producer({"bootstrap.servers": f"{host}:{port}"})
    delivered: list = []
    producer.produce("early", b"value", on_delivery=lambda err, msg: delivered.append(err))
    assert producer.flush(1.5) == 1  # its Metadata request waits for the broker
    assert "answered before the broker was ready" in caplog.text  # its ApiVersions did not
    caplog.set_level(logging.INFO, logger="kafkette.requests")
    broker = Broker(config, early=early)
    try:
        run(broker.start())
        assert producer.flush(30) == 0 and delivered == [None]
        consumer = confluent_kafka.Consumer({"bootstrap.servers": f"{host}:{port}",
                                             "group.id": "g", "auto.offset.reset": "earliest"})
        consumer.subscribe(["early"])
        message = None
        for _ in range(30):
            message = consumer.poll(1)
            if message is not None:
                break
        consumer.close()
        assert message is not None and message.error() is None and message.value() == b"value"
    finally:
        run(broker.stop())
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


async def read(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readexactly(4)
    return head + await reader.readexactly(struct.unpack(">i", head)[0])
