"""The Java client (kafka-clients 3.9.1, AsyncKafkaConsumer, ConsumerGroupHeartbeat v0) with
``group.protocol=consumer`` runs the group scenarios of the matrix against kafkette."""

from __future__ import annotations

import time

import pytest

from tests.compat.clients import Client
from tests.compat.test_matrix import PARTITIONS, SESSION_MS, _consumed, _name, _topic, _wait_split

# the broker owns session and heartbeat with the consumer protocol: make them short
FAST = {"group.consumer.min.session.timeout.ms": 1000, "group.consumer.session.timeout.ms": 2500,
        "group.consumer.min.heartbeat.interval.ms": 100,
        "group.consumer.heartbeat.interval.ms": 250}

pytestmark = pytest.mark.parametrize("client", ["java"], indirect=True)


@pytest.fixture
def broker(kafka_broker_factory):
    return kafka_broker_factory(**{"num.partitions": PARTITIONS, **FAST})


@pytest.fixture
def members():
    started: list = []
    yield started
    for member in started:
        member.reap()


def test_group_split_leave_and_crash(client: Client, broker, members) -> None:
    topic, group = _topic(broker), _name("group")
    client.produce(broker.bootstrap, topic, 30, "g", PARTITIONS)
    for _ in range(3):
        members.append(client.member(broker.bootstrap, topic, group, SESSION_MS, "consumer"))
    _wait_split(members, "3 consumer-protocol members")
    # the split first shows while partitions move (revocation before assignment): wait for 1/1/1
    deadline = time.monotonic() + 30
    while not all(m.assignment is not None and len(m.assignment) == 1 for m in members):
        assert time.monotonic() < deadline, [m.assignment for m in members]
        time.sleep(0.1)
    _wait_split(members, "3 consumer-protocol members, balanced")
    wanted = {(p, o) for p in range(PARTITIONS) for o in range(10)}
    members[0].wait(lambda _m: wanted <= _consumed(members), "all 30 records consumed")
    leaver, crasher, survivor = members
    leaver.close()
    _wait_split([crasher, survivor], "after a clean leave")
    crasher.kill()
    _wait_split([survivor], "after a crash (session timeout)")
    client.produce(broker.bootstrap, topic, 6, "after", PARTITIONS)
    survivor.wait(lambda m: {r.value for r in m.records} >= {f"after-{i}" for i in range(6)},
                  "records produced after the crash")
