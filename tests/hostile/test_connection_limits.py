"""Broker-wide bounds: max.connections, max.connections.per.ip (Kafka's names; a connection over
either is closed at once) and queued.max.response.total.bytes, the response bytes all
connections together may leave unread before those not reading stop being served."""

from __future__ import annotations

import logging
import socket
import struct
import time
from datetime import timedelta

from kio.schema.errors import ErrorCode

from kafkette.protocol.codec import encode_request, request_type
from kafkette.protocol.records import build_batch
from tests.dataplane.test_wire import create_topic, produce
from tests.groups.helpers import wait_until_sync
from tests.hostile.healthy import HealthyClient
from tests.wire import WireClient, entity


def _closed_by_broker(host: str, port: int) -> bool:
    with socket.create_connection((host, port), timeout=5) as sock:
        sock.settimeout(5)
        try:
            return sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False


def _host_port(bootstrap: str) -> tuple[str, int]:
    host, port = bootstrap.rsplit(":", 1)
    return host, int(port)


def test_connections_over_max_connections_per_ip_are_closed(kafka_broker_factory, caplog):
    caplog.set_level(logging.INFO, logger="kafkette.connection")
    broker = kafka_broker_factory(**{"max.connections.per.ip": 3})
    host, port = _host_port(broker.bootstrap)
    clients = [WireClient(broker.bootstrap) for _ in range(3)]
    try:
        for c in clients:
            c.request(18, 3, client_software_name="t", client_software_version="1")
        assert _closed_by_broker(host, port)
        assert _closed_by_broker(host, port)
        clients.pop().close()
        wait_until_sync(lambda: broker.run(lambda: broker.broker.connection_limits.count) == 2)
        with WireClient(broker.bootstrap) as again:  # a slot is free again
            assert again.request(18, 3, client_software_name="t",
                                 client_software_version="1").error_code == 0
    finally:
        for c in clients:
            c.close()
    lines = [r.getMessage() for r in caplog.records if "Rejected connection" in r.getMessage()]
    assert len(lines) == 1 and "max.connections.per.ip" in lines[0], lines  # rate-limited


def test_connections_over_max_connections_are_closed(kafka_broker_factory):
    broker = kafka_broker_factory(**{"max.connections": 2})
    host, port = _host_port(broker.bootstrap)
    with WireClient(broker.bootstrap), WireClient(broker.bootstrap) as second:
        second.request(18, 3, client_software_name="t", client_software_version="1")
        assert _closed_by_broker(host, port)


def _fetch_frame(topic: str, correlation_id: int, max_bytes: int) -> bytes:
    cls = request_type(1, 12)
    topic_cls = type(entity(cls, "topics", topic=topic, partitions=()))
    part = entity(topic_cls, "partitions", partition=0, fetch_offset=0,
                  partition_max_bytes=max_bytes, current_leader_epoch=-1, last_fetched_epoch=-1,
                  log_start_offset=-1)
    body = cls(replica_id=-1, max_wait=timedelta(0), min_bytes=1, max_bytes=max_bytes,
               isolation_level=0, session_id=0, session_epoch=-1,
               topics=(entity(cls, "topics", topic=topic, partitions=(part,)),),
               forgotten_topics_data=(), rack_id="")
    return encode_request(1, 12, correlation_id, "hoarder", body)


def _read_answers(sock: socket.socket, count: int) -> list[int]:
    """The correlation ids of the next ``count`` responses on ``sock``."""
    sock.settimeout(30)
    ids = []
    buf = b""
    while len(ids) < count:
        while len(buf) < 8:
            buf += sock.recv(1 << 20)
        size, corr = struct.unpack(">ii", buf[:8])
        while len(buf) < 4 + size:
            buf += sock.recv(1 << 20)
        ids.append(corr)
        buf = buf[4 + size:]
    return ids


def test_unread_responses_are_bounded_broker_wide(kafka_broker_factory):
    total_bound = 8 << 20
    broker = kafka_broker_factory(**{"queued.max.response.total.bytes": total_bound})
    with WireClient(broker.bootstrap) as w:
        assert create_topic(w, "hoard", 1).error_code == ErrorCode.none
        for i in range(4):
            assert produce(w, "hoard", 0, build_batch([(b"k", bytes([i]) * 60_000)])
                           ).error_code == ErrorCode.none
    host, port = _host_port(broker.bootstrap)
    hoarders = []
    frames = b"".join(_fetch_frame("hoard", i, 1 << 20) for i in range(40))
    try:
        for _ in range(20):  # clients that send 40 Fetches and never read an answer
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect((host, port))
            sock.sendall(frames)
            hoarders.append(sock)
        with HealthyClient(broker.bootstrap) as healthy:
            healthy.start()
            time.sleep(2)
            healthy.wait_rounds(3)
            unsent = broker.run(lambda: sum(c.refresh_unsent()
                                            for c in list(broker.broker.connections)))
            response = 240_000 + 1000
            # Unbounded, each hoarder would hold its 40 answers (20 x 40 x 240 kB = 192 MB).
            assert unsent <= total_bound + 20 * 2 * response, unsent
        assert healthy.errors == []
        assert healthy.max_wait < 1, healthy.max_wait
        # A hoarder that starts reading gets all its answers (the bound wakes it).
        assert _read_answers(hoarders[0], 40) == list(range(40))
    finally:
        for sock in hoarders:
            sock.close()
