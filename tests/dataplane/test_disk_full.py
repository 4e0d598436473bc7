"""A full disk, simulated in the in-process broker: ``os.write`` and ``os.pwritev`` on regular files
of the log directory's file system first write a few bytes (a short write), then raise ENOSPC.
Produce answers KAFKA_STORAGE_ERROR and nothing of it is acknowledged; the partition takes
writes again as soon as the disk has room (no restart), at the offset right after the last
acknowledged one; Metadata auto-creation answers UNKNOWN_TOPIC_OR_PARTITION instead of closing
the connection; after a restart exactly the acknowledged records are there."""

from __future__ import annotations

import errno
import logging
import os
import stat
import threading
import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.codec import request_type
from kafkette.protocol.records import build_batch, decode_records, iter_batches
from tests.dataplane.test_wire import create_topic, fetch, produce
from tests.groups.helpers import wait_until_sync
from tests.wire import WireClient, entity


class FullDisk:
    """Fails writes to regular files on ``directory``'s file system while ``full``."""

    def __init__(self, monkeypatch: Any, directory: str) -> None:
        self.device = os.stat(directory).st_dev
        self.full = False
        self.short_write_bytes = 0  # written before the first ENOSPC, as a real disk does
        self.failures = 0
        real_write, real_pwritev = os.write, os.pwritev

        def write(fd: int, data: Any) -> int:
            if self._refuse(fd):
                return real_write(fd, self._take(memoryview(data)))
            return real_write(fd, data)

        def pwritev(fd: int, buffers: Any, offset: int, *flags: int) -> int:
            if self._refuse(fd):
                return os.pwrite(fd, self._take(memoryview(b"".join(buffers))), offset)
            return real_pwritev(fd, buffers, offset, *flags)

        monkeypatch.setattr(os, "write", write)
        monkeypatch.setattr(os, "pwritev", pwritev)

    def _refuse(self, fd: int) -> bool:
        if not self.full:
            return False
        st = os.fstat(fd)
        return st.st_dev == self.device and stat.S_ISREG(st.st_mode)

    def _take(self, data: memoryview) -> memoryview:
        if self.short_write_bytes > 0 and len(data):
            n = min(self.short_write_bytes, len(data))
            self.short_write_bytes -= n
            return data[:n]
        self.failures += 1
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def fill(self, short_write_bytes: int = 0) -> None:
        self.full, self.short_write_bytes = True, short_write_bytes

    def free(self) -> None:
        self.full = False


def auto_create(w: WireClient, name: str) -> ErrorCode:
    md = w.request(3, 12, topics=(entity(request_type(3, 12), "topics", name=name,
                                         topic_id=uuid.UUID(int=0)),),
                   allow_auto_topic_creation=True, include_topic_authorized_operations=False)
    return md.topics[0].error_code


def read_values(w: WireClient, topic: str) -> list[tuple[int, bytes | None]]:
    p = fetch(w, topic, 0, 0).responses[0].partitions[0]
    assert p.error_code == ErrorCode.none
    return [(r.offset, r.value) for _, v in iter_batches(p.records) for r in decode_records(v)]


def test_disk_full_then_freed(kafka_broker_factory, monkeypatch, caplog) -> None:
    caplog.set_level(logging.INFO)
    broker = kafka_broker_factory()
    disk = FullDisk(monkeypatch, broker.config["log.dirs"])
    # "inline": small appends written from the event loop; "synced": flush.messages=1, written
    # from the loop too but acknowledged only once the writer thread has fsynced them.
    topics = {"inline": {}, "synced": {"flush.messages": "1"}}
    acked: dict[str, list[tuple[int, bytes]]] = {t: [] for t in topics}
    with WireClient(broker.bootstrap) as w, WireClient(broker.bootstrap) as other:
        for topic, configs in topics.items():
            assert create_topic(w, topic, 1, configs).error_code == ErrorCode.none
            for i in range(3):
                value = b"ok-%d" % i
                acked[topic].append((produce(w, topic, 0, build_batch([(b"k", value)])).base_offset, value))

        for round_ in range(2):  # a second failure after the first rollback is handled the same
            disk.fill(short_write_bytes=25)
            for topic in topics:
                for i in range(3):
                    part = produce(w, topic, 0, build_batch([(b"k", b"lost-%d-%d" % (round_, i))] * 4))
                    assert part.error_code == ErrorCode.kafka_storage_error, (topic, round_, i)
                # Another connection is served meanwhile and sees only acknowledged records.
                assert read_values(other, topic) == acked[topic]
            assert auto_create(other, f"auto-{round_}") == ErrorCode.unknown_topic_or_partition
            assert auto_create(w, f"auto-{round_}") == ErrorCode.unknown_topic_or_partition
            disk.free()
            for topic in topics:
                value = b"after-%d" % round_
                part = produce(w, topic, 0, build_batch([(b"k", value)]))
                assert part.error_code == ErrorCode.none
                assert part.base_offset == acked[topic][-1][0] + 1  # right after the last ack
                acked[topic].append((part.base_offset, value))
                assert read_values(other, topic) == acked[topic]
            assert auto_create(w, f"auto-{round_}") == ErrorCode.none
        assert disk.failures > 0
    # One line per kind of failure (rate-limited), not one per failed write: 12 failed produces
    # over two topics and two rounds, 8 failed auto-creations.
    messages = [r.getMessage() for r in caplog.records]
    assert sum("log write failed" in m for m in messages) == 1, messages
    assert sum("no space left on device" in m.lower() for m in messages) <= 4, messages
    assert sum("auto-creating topic" in m for m in messages) == 1, messages
    assert any("auto-creating topic auto-0 failed" in m for m in messages)
    broker.restart()
    with WireClient(broker.bootstrap) as w:
        for topic in topics:
            assert read_values(w, topic) == acked[topic]
            assert produce(w, topic, 0, build_batch([(b"k", b"z")])).base_offset == len(acked[topic])
        assert auto_create(w, "auto-1") == ErrorCode.none


def test_create_topics_on_a_full_disk(kafka_broker_factory, monkeypatch) -> None:
    broker = kafka_broker_factory()
    disk = FullDisk(monkeypatch, broker.config["log.dirs"])
    with WireClient(broker.bootstrap) as w:
        disk.fill()
        assert create_topic(w, "nospace", 2).error_code == ErrorCode.kafka_storage_error
        assert produce(w, "nospace", 0, build_batch([(b"k", b"v")])).error_code == \
            ErrorCode.unknown_topic_or_partition
        disk.free()
        assert create_topic(w, "nospace", 2).error_code == ErrorCode.none
        assert produce(w, "nospace", 1, build_batch([(b"k", b"v")])).base_offset == 0
    broker.restart()
    with WireClient(broker.bootstrap) as w:
        assert read_values(w, "nospace") == []
        assert produce(w, "nospace", 1, build_batch([(b"k", b"w")])).base_offset == 1


def test_first_start_on_a_full_disk_retries_the_coordinator(kafka_broker_factory, monkeypatch,
                                                          tmp_path, caplog) -> None:
    """``__consumer_offsets`` cannot be created: the coordinator start is retried with backoff
    and logged, and it comes up once the disk has room (no restart)."""
    caplog.set_level(logging.INFO)
    disk = FullDisk(monkeypatch, str(tmp_path))
    disk.fill()
    started: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: started.setdefault(
        "broker", kafka_broker_factory(**{"log.dirs": str(tmp_path)})))
    thread.start()

    def retries() -> list[str]:
        return [r.getMessage() for r in caplog.records
                if "group coordinator cannot start" in r.getMessage()]

    wait_until_sync(lambda: len(retries()) >= 2)
    disk.free()
    thread.join(30)
    broker = started["broker"]  # start() returns once the coordinator has loaded
    with WireClient(broker.bootstrap) as w:
        assert w.request(16, 3).error_code == ErrorCode.none  # ListGroups
    assert "no space left on device" in retries()[0].lower()
    assert any("group coordinator started after" in r.getMessage() for r in caplog.records)
