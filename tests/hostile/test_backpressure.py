"""A client that does not read its answers, or piles up requests, cannot bloat the broker.

Kafka mutes a channel while its response is unsent; kafkette stops reading a connection while
its unsent responses exceed ``queued.max.response.bytes`` or its waiting requests exceed
``queued.max.requests`` / ``queued.max.request.bytes``.
"""

from __future__ import annotations

import socket
import time
from datetime import timedelta
from pathlib import Path

from kafkette.broker.testing import BrokerProcess
from kafkette.broker.testing import test_config as broker_config
from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import encode_request, request_type
from kafkette.protocol.records import build_batch
from tests.dataplane.test_wire import create_topic, produce
from tests.hostile.healthy import HealthyClient
from tests.wire import WireClient, entity

FETCH = 1
FETCHES = 6000
UNREAD_CONFIG: dict[str, object] = {}  # the defaults: queued.max.response.bytes=16 MiB


def fetch_frame(topic: str, correlation_id: int, *, max_wait_ms: int = 0,
                min_bytes: int = 1) -> bytes:
    cls = request_type(FETCH, 12)
    topic_cls = item_type(cls, "topics")
    part = make(item_type(topic_cls, "partitions"), partition=0, fetch_offset=0,
                partition_max_bytes=1 << 20, current_leader_epoch=-1, last_fetched_epoch=-1,
                log_start_offset=-1)
    body = make(cls, replica_id=-1, max_wait=timedelta(milliseconds=max_wait_ms),
                min_bytes=min_bytes, max_bytes=1 << 20, isolation_level=0, session_id=0,
                session_epoch=-1, topics=(entity(cls, "topics", topic=topic, partitions=(part,)),),
                forgotten_topics_data=(), rack_id="")
    return encode_request(FETCH, 12, correlation_id, "never-reads", body)


def send_until_blocked(sock: socket.socket, frames, seconds: float) -> int:
    """Send frames until the broker stops reading for ``seconds``; bytes accepted."""
    sock.settimeout(seconds)
    sent = 0
    for frame in frames:
        view = memoryview(frame)
        while view:
            try:
                n = sock.send(view)
            except TimeoutError:
                return sent
            sent += n
            view = view[n:]
    return sent


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_client_that_never_reads_pipelined_fetches(tmp_path):
    """6,000 pipelined 1 MB Fetches grew the broker to 5.75 GB before backpressure."""
    with BrokerProcess(broker_config(str(tmp_path), **UNREAD_CONFIG)) as proc:
        with WireClient(proc.bootstrap) as w:
            assert create_topic(w, "big", 1).error_code == 0
            for i in range(5):
                batch = build_batch([(b"k%d" % i, bytes(200_000))])
                assert produce(w, "big", 0, batch).error_code == 0
        before = rss_bytes(proc.proc.pid)
        with HealthyClient(proc.bootstrap) as healthy, \
                socket.create_connection((proc.host, proc.port)) as hog:
            healthy.start()
            frames = (fetch_frame("big", i) for i in range(FETCHES))
            send_until_blocked(hog, frames, seconds=2)
            healthy.wait_rounds(5)
            grown = rss_bytes(proc.proc.pid) - before
            assert proc.proc.poll() is None
        assert grown < 150 << 20, f"broker grew by {grown >> 20} MiB"
        assert healthy.errors == [] and healthy.max_wait < 2, (healthy.errors, healthy.max_wait)


def test_requests_queued_behind_a_parked_fetch_are_bounded_in_bytes(kafka_broker_factory):
    """A parked Fetch, then 1 MiB frames: reading stops at queued.max.request.bytes."""
    limit = 4 << 20
    broker = kafka_broker_factory(**{"queued.max.request.bytes": limit})
    with WireClient(broker.bootstrap) as w:
        assert create_topic(w, "empty", 1).error_code == 0
    filler = encode_request(18, 0, 2, "x" * 30000, make(request_type(18, 0)))
    with socket.create_connection(broker.address) as hog:
        hog.sendall(fetch_frame("empty", 1, max_wait_ms=30_000, min_bytes=1 << 20))
        send_until_blocked(hog, [filler] * 3000, seconds=2)  # 90 MB offered

        def queued() -> int:
            return broker.run(lambda: max(c._queued_bytes + c._reader.buffered
                                          for c in broker.broker.connections))
        # Over the bound by at most one socket read (uvloop reads 256 KiB at a time).
        assert queued() < limit + (1 << 20), queued()
        with WireClient(broker.bootstrap) as other:
            started = time.monotonic()
            assert other.request(18, 0).error_code == 0
            assert time.monotonic() - started < 2
