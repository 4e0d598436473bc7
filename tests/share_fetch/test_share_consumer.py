"""Share groups end to end with confluent-kafka 2.16.1's ``ShareConsumer`` (librdkafka 2.16,
ShareGroupHeartbeat / ShareFetch / ShareAcknowledge v1): consumers in real processes share one
partition without ever holding a record at the same time; explicit acknowledgement semantics;
a killed consumer's records go to the others at once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections import defaultdict
from typing import Any

import pytest

from kafkette.protocol.records import build_batch
from tests.dataplane.test_wire import create_topic, produce
from tests.share_state.test_offsets_wire import describe, rows
from tests.wire import WireClient

from .test_wire import set_group_config

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import AcknowledgeType, ShareConsumer  # noqa: E402

GROUP = "workers"
# A ShareConsumer in explicit mode printing, per poll, one JSON line: when the poll returned,
# when its acknowledgements were sent, and (offset, delivery count, ack type) of each record.
# Mode "work" ACCEPTs (RELEASEs about one record in fifty); "hold" never acknowledges.
_CHILD = textwrap.dedent("""
    import json, random, sys, threading, time
    from confluent_kafka import AcknowledgeType, ShareConsumer
    boot, group, topic, name, mode, max_poll = sys.argv[1:7]
    c = ShareConsumer({"bootstrap.servers": boot, "group.id": group, "client.id": name,
                       "share.acknowledgement.mode": "explicit",
                       "max.poll.records": int(max_poll)})
    c.subscribe([topic])
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
    rng = random.Random(name)
    while not stop.is_set():
        try:
            msgs = c.poll(0.2)
        except Exception as exc:
            print(json.dumps({"c": name, "error": str(exc)}), flush=True)
            continue
        polled = time.monotonic()
        got = []
        for m in msgs:
            if m.error():
                continue
            if mode == "hold":
                got.append([m.offset(), m.delivery_count(), 0])
                continue
            kind = AcknowledgeType.RELEASE if rng.random() < 0.02 else AcknowledgeType.ACCEPT
            c.acknowledge(m, kind)
            got.append([m.offset(), m.delivery_count(),
                        1 if kind == AcknowledgeType.ACCEPT else 2])
        if not got:
            continue
        if mode == "hold":
            print(json.dumps({"c": name, "p": polled, "r": got}), flush=True)
            continue
        time.sleep(rng.random() * 0.003)
        sent = time.monotonic()
        result = c.commit_sync(10.0) or {}
        errors = [str(v) for v in result.values() if v is not None]
        print(json.dumps({"c": name, "p": polled, "s": sent, "r": got, "e": errors}), flush=True)
    c.close()
    print(json.dumps({"closed": name}), flush=True)
""")


class Child:
    """One ShareConsumer process; its JSON lines collected by a reader thread."""

    def __init__(self, bootstrap: str, topic: str, name: str, mode: str = "work",
                 max_poll: int = 50) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD, bootstrap, GROUP, topic, name, mode, str(max_poll)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.lines: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(json.loads(line))

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            try:
                self.proc.stdin.write("close\n")
                self.proc.stdin.flush()
                self.proc.wait(20)
            except (subprocess.TimeoutExpired, BrokenPipeError):
                self.kill()
        self._reader.join(5)

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)


@pytest.fixture
def broker(kafka_broker_factory):
    b = kafka_broker_factory(**{"group.share.heartbeat.interval.ms": "250",
                                "group.share.session.timeout.ms": "3000"})
    set_group_config(b.bootstrap, GROUP, share_auto_offset_reset="earliest",
                     share_record_lock_duration_ms="15000")
    return b


def make_topic(bootstrap: str, name: str, records: int, per_batch: int) -> None:
    with WireClient(bootstrap) as w:
        create_topic(w, name, 1)
        for first in range(0, records, per_batch):
            batch = [(None, b"job-%d" % i) for i in range(first, min(first + per_batch, records))]
            produce(w, name, 0, build_batch(batch))


def test_three_consumers_share_a_partition_without_overlap(broker) -> None:
    total = 3000
    make_topic(broker.bootstrap, "jobs", total, per_batch=5)
    children = [Child(broker.bootstrap, "jobs", f"c{i}") for i in range(3)]
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            accepted = {r[0] for ch in children for line in list(ch.lines) if "r" in line
                        for r in line["r"] if r[2] == 1 and not line["e"]}
            if len(accepted) >= total:
                break
            time.sleep(0.2)
    finally:
        for ch in children:
            ch.close()
    holds: dict[int, list[tuple[float, float, str]]] = defaultdict(list)
    accepts: dict[int, int] = defaultdict(int)
    by_consumer: dict[str, int] = defaultdict(int)
    for ch in children:
        for line in ch.lines:
            if "r" not in line:
                continue
            assert line["e"] == [], line
            for offset, _count, kind in line["r"]:
                holds[offset].append((line["p"], line["s"], ch.name))
                by_consumer[ch.name] += 1
                if kind == 1:
                    accepts[offset] += 1
    assert sorted(accepts) == list(range(total)), "every record processed"
    assert set(accepts.values()) == {1}, "ACCEPTed once each"
    assert all(by_consumer[f"c{i}"] > 0 for i in range(3)), by_consumer
    with WireClient(broker.bootstrap) as w:  # the start offset is past every record, durably
        assert rows(describe(w, GROUP)) == {("jobs", 0): (total, 0)}
    for offset, intervals in holds.items():
        intervals.sort()
        for (_p1, s1, who1), (p2, _s2, who2) in zip(intervals, intervals[1:], strict=False):
            # received again only after the previous holder sent its acknowledgement
            assert p2 > s1, (offset, who1, who2)


def test_explicit_acknowledgements(broker) -> None:
    make_topic(broker.bootstrap, "acks", 10, per_batch=1)
    consumer = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": GROUP,
                              "share.acknowledgement.mode": "explicit",
                              "max.poll.records": 10})
    consumer.subscribe(["acks"])
    deliveries: dict[int, list[int]] = defaultdict(list)
    try:
        quiet_since = time.monotonic()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and time.monotonic() - quiet_since < 3:
            msgs = [m for m in consumer.poll(0.3) if not m.error()]
            for m in msgs:
                offset = m.offset()
                deliveries[offset].append(m.delivery_count())
                if offset == 0:  # RELEASEd every time: delivered 5 times, then archived
                    kind = AcknowledgeType.RELEASE
                elif offset == 1:  # REJECTed: never again
                    kind = AcknowledgeType.REJECT
                elif offset == 2 and m.delivery_count() == 1:  # RELEASEd once: redelivered
                    kind = AcknowledgeType.RELEASE
                else:
                    kind = AcknowledgeType.ACCEPT
                consumer.acknowledge(m, kind)
            if msgs:
                result = consumer.commit_sync(10.0) or {}
                assert all(v is None for v in result.values()), result
                quiet_since = time.monotonic()
    finally:
        consumer.close()
    assert deliveries[0] == [1, 2, 3, 4, 5]
    assert deliveries[1] == [1]
    assert deliveries[2] == [1, 2]
    assert all(deliveries[o] == [1] for o in range(3, 10)), deliveries


def test_killed_consumer_records_go_to_the_others_at_once(broker) -> None:
    make_topic(broker.bootstrap, "crash", 30, per_batch=1)
    holder = Child(broker.bootstrap, "crash", "holder", mode="hold", max_poll=10)
    try:
        deadline = time.monotonic() + 30
        while not any("r" in line for line in holder.lines) and time.monotonic() < deadline:
            time.sleep(0.1)
        held = {r[0] for line in holder.lines if "r" in line for r in line["r"]}
        assert held, "the holder got records"
        holder.kill()
        killed_at = time.monotonic()
    finally:
        holder.kill()
    consumer = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": GROUP,
                              "share.acknowledgement.mode": "explicit",
                              "max.poll.records": 50})
    consumer.subscribe(["crash"])
    got: dict[int, int] = {}
    try:
        while time.monotonic() - killed_at < 12 and not held <= set(got):
            for m in consumer.poll(0.3):
                if not m.error():
                    got[m.offset()] = m.delivery_count()
                    consumer.acknowledge(m, AcknowledgeType.ACCEPT)
            consumer.commit_sync(10.0)
    finally:
        consumer.close()
    # well before the 15 s lock expires: released when the connection closed
    assert held <= set(got) and time.monotonic() - killed_at < 12
    assert all(got[o] == 2 for o in held)


def test_implicit_acknowledgement_and_close(broker) -> None:
    make_topic(broker.bootstrap, "implicit", 100, per_batch=10)
    consumer = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": GROUP,
                              "max.poll.records": 30})
    consumer.subscribe(["implicit"])
    seen: list[int] = []
    try:
        deadline = time.monotonic() + 30
        while len(seen) < 100 and time.monotonic() < deadline:
            seen += [m.offset() for m in consumer.poll(0.3) if not m.error()]
        # each poll ACCEPTed the records of the one before; librdkafka 2.16's close does not
        # acknowledge the last poll's records (its closing ShareAcknowledge is empty): commit
        result = consumer.commit_sync(10.0) or {}
        assert all(v is None for v in result.values()), result
    finally:
        consumer.close()  # leaves, then ShareAcknowledge epoch -1 ends the session
    assert sorted(seen) == list(range(100))
    with WireClient(broker.bootstrap) as w:
        assert rows(describe(w, GROUP)) == {("implicit", 0): (100, 0)}
