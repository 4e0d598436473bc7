"""KIP-848 with a real client: confluent-kafka (librdkafka 2.16, ConsumerGroupHeartbeat v1)
consumers with ``group.protocol=consumer`` against kafkette — server-side assignment, leave,
kill, commit/restart, the range assignor, regex subscriptions, AdminClient describe; and the
protocol switched off (``group.coordinator.rebalance.protocols=classic``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from datetime import timedelta
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from kafkette.coordinator.runtime.clock import ManualClock
from tests.wire import WireClient

from .helpers import child_assignment, reap_child, wait_until_sync

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, ConsumerGroupType, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic  # noqa: E402

_HEARTBEAT, _DESCRIBE = 68, 69
# short sessions so a killed member goes quickly (the clients are real processes)
FAST = {"group.consumer.min.session.timeout.ms": 1000, "group.consumer.session.timeout.ms": 2500,
        "group.consumer.min.heartbeat.interval.ms": 100,
        "group.consumer.heartbeat.interval.ms": 250}


@pytest.fixture
def broker(kafka_broker_factory):
    return kafka_broker_factory(**FAST)


def create(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(10)


def produce(bootstrap: str, topic: str, partitions: int, count: int, start: int = 0) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(start, start + count):
        p.produce(topic, str(i).encode(), partition=i % partitions)
    assert p.flush(10) == 0


class Member:
    """A ``group.protocol=consumer`` consumer polled from the test thread."""

    def __init__(self, bootstrap: str, group: str, topics: list[str], *,
                 commit_each: bool = False, **overrides: Any) -> None:
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
            "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "topic.metadata.refresh.interval.ms": 500, **overrides})
        self.consumer.subscribe(topics)
        self.commit_each = commit_each
        self.values: list[int] = []
        self.errors: list[Any] = []

    def poll(self) -> None:
        msg = self.consumer.poll(0.02)
        if msg is None:
            return
        if msg.error() is not None:
            self.errors.append(msg.error())
            return
        self.values.append(int(msg.value()))
        if self.commit_each:
            self._commit(msg)

    def _commit(self, msg: Any) -> None:
        # STALE_MEMBER_EPOCH is Kafka's answer while the member's epoch moves (KIP-848): the
        # client learns the new epoch from its next heartbeat, then the commit goes through
        for _ in range(100):
            try:
                self.consumer.commit(message=msg, asynchronous=False)
                return
            except confluent_kafka.KafkaException as exc:
                if exc.args[0].code() != confluent_kafka.KafkaError.STALE_MEMBER_EPOCH:
                    raise
                time.sleep(0.05)
        raise AssertionError("the commit stayed stale")

    def assigned(self, topic: str | None = None) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()
                if topic is None or tp.topic == topic}

    def close(self) -> None:
        self.consumer.close()


def poll_until(members: list[Member], cond, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached: {[sorted(m.assigned()) for m in members]} "
                                 f"errors={[m.errors for m in members]}")
        for m in members:
            m.poll()


def split(members: list[Member], partitions: int) -> bool:
    owned = [p for m in members for p in m.assigned()]
    return (len(owned) == partitions and set(owned) == set(range(partitions))
            and all(m.assigned() for m in members))


def group_epoch(bootstrap: str, group: str) -> int:
    with WireClient(bootstrap) as client:
        described = client.request(_DESCRIBE, 1, group_ids=(group,),
                                   include_authorized_operations=False).groups[0]
    assert described.error_code == ErrorCode.none, described
    return described.group_epoch


def test_api_versions_advertises_the_consumer_protocol(kafka_broker):
    with WireClient(kafka_broker) as client:
        response = client.request(18, 3, client_software_name="kafkette-tests",
                                  client_software_version="1.0")
    advertised = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert advertised[_HEARTBEAT] == (0, 1)
    assert advertised[_DESCRIBE] == (0, 1)


def test_three_members_split_six_partitions_and_read_every_record_once(broker):
    bs = broker.bootstrap
    create(bs, "six", 6)
    members = [Member(bs, "g6", ["six"]) for _ in range(3)]
    try:
        # produce once the split is settled: records read before a partition moves (no
        # commits here) would legitimately be read again by its next owner
        poll_until(members, lambda: split(members, 6)
                   and sorted(len(m.assigned()) for m in members) == [2, 2, 2])
        produce(bs, "six", 6, 60)
        poll_until(members, lambda: sum(len(m.values) for m in members) >= 60)
        assert sorted(len(m.assigned()) for m in members) == [2, 2, 2]
        seen = sorted(v for m in members for v in m.values)
        assert seen == list(range(60))  # nothing twice, nothing lost
        assert not any(m.errors for m in members)
    finally:
        for m in members:
            m.close()


def test_a_member_leaves_and_the_other_gets_everything(broker):
    bs = broker.bootstrap
    create(bs, "four", 4)
    a, b = Member(bs, "g4", ["four"]), Member(bs, "g4", ["four"])
    try:
        poll_until([a, b], lambda: split([a, b], 4) and len(a.assigned()) == 2)
        produce(bs, "four", 4, 40)
        poll_until([a, b], lambda: len(a.values) + len(b.values) >= 40)
        assert len(a.assigned()) == len(b.assigned()) == 2
        b.consumer.commit(asynchronous=False)
        a.consumer.commit(asynchronous=False)
        b.close()
        started = time.monotonic()
        poll_until([a], lambda: a.assigned() == {0, 1, 2, 3})
        assert time.monotonic() - started < 5  # a heartbeat interval or two, not a session
        produce(bs, "four", 4, 8, start=40)
        poll_until([a], lambda: len(a.values) + len(b.values) >= 48)
        assert sorted(a.values + b.values) == list(range(48))
    finally:
        a.close()


def test_a_killed_member_is_removed_after_the_session_timeout(broker):
    bs = broker.bootstrap
    create(bs, "kill", 4)
    child = subprocess.Popen([sys.executable, "-c", _CHILD, bs, "gk", "kill"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    a = Member(bs, "gk", ["kill"])
    try:
        def both() -> bool:
            theirs = child_assignment(child) or set()
            return len(a.assigned()) == 2 and len(theirs) == 2 and not (a.assigned() & theirs)
        poll_until([a], both)
        os.kill(child.pid, signal.SIGKILL)
        killed = time.monotonic()
        poll_until([a], lambda: a.assigned() == {0, 1, 2, 3})
        waited = time.monotonic() - killed
        assert 1.5 < waited < 10, waited  # group.consumer.session.timeout.ms = 2.5 s
    finally:
        reap_child(child)
        a.close()


_CHILD = textwrap.dedent("""
    import sys
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
                  "group.protocol": "consumer", "auto.offset.reset": "earliest"})
    c.subscribe([sys.argv[3]])
    while True:
        c.poll(0.05)
        print("ASSIGNED", sorted(tp.partition for tp in c.assignment()), flush=True)
""")


def test_committed_offsets_resume_after_a_broker_restart(broker):
    bs = broker.bootstrap
    create(bs, "resume", 2)
    produce(bs, "resume", 2, 20)
    a = Member(bs, "gr", ["resume"])
    try:
        poll_until([a], lambda: len(a.values) >= 20)
        a.consumer.commit(asynchronous=False)
    finally:
        a.close()
    broker.restart()
    produce(bs, "resume", 2, 10, start=20)
    b = Member(bs, "gr", ["resume"])
    try:
        poll_until([b], lambda: len(b.values) >= 10)
        time.sleep(0.3)
        for _ in range(20):
            b.poll()
        assert sorted(b.values) == list(range(20, 30))
        committed = b.consumer.committed([TopicPartition("resume", 0), TopicPartition("resume", 1)],
                                         timeout=10)
        assert sum(tp.offset for tp in committed) == 20
    finally:
        b.close()


def test_range_assignor_co_partitions(broker):
    bs = broker.bootstrap
    create(bs, "left", 4)
    create(bs, "right", 4)
    members = [Member(bs, "grange", ["left", "right"], **{"group.remote.assignor": "range"})
               for _ in range(2)]
    try:
        def done() -> bool:
            return all(len(m.assigned("left")) == 2 for m in members) and \
                all(m.assigned("left") == m.assigned("right") for m in members)
        poll_until(members, done)
        # range hands out consecutive ranges
        assert sorted(sorted(m.assigned("left")) for m in members) == [[0, 1], [2, 3]]
        admin = AdminClient({"bootstrap.servers": bs})
        group = admin.describe_consumer_groups(["grange"])["grange"].result(10)
        assert group.type == ConsumerGroupType.CONSUMER
        assert group.partition_assignor == "range"
        assert len(group.members) == 2
        assert {tp.topic for m in group.members for tp in m.assignment.topic_partitions} == {
            "left", "right"}
    finally:
        for m in members:
            m.close()


def test_regex_subscription_picks_up_a_topic_created_later(kafka_broker_factory):
    clock = ManualClock()  # the 10 s regex refresh throttle passes when the test says so
    # a 45 s session (Kafka's default): the clock moving 10 s expires no member
    broker = kafka_broker_factory(clock=clock, **{**FAST,
                                                  "group.consumer.session.timeout.ms": 45_000})

    def due(cond):  # the coordinator's due timers run (the regex resolution is one)
        def check():
            broker.run(clock.advance, 0)
            return cond()
        return check

    bs = broker.bootstrap
    create(bs, "orders-eu", 2)
    create(bs, "billing", 2)
    m = Member(bs, "gregex", ["^orders-.*"])
    try:
        poll_until([m], due(lambda: m.assigned("orders-eu") == {0, 1}))
        assert not m.assigned("billing")
        create(bs, "orders-us", 3)
        produce(bs, "orders-us", 3, 6)
        # resolution is refreshed at most every 10 s (Kafka's throttle)
        for _ in range(10):
            m.poll()
        broker.run(clock.advance, 0)
        assert not m.assigned("orders-us")
        broker.run(clock.advance, 10_000)
        poll_until([m], due(lambda: m.assigned("orders-us") == {0, 1, 2}
                            and len(m.values) >= 6))
        assert sorted(m.values) == list(range(6))
    finally:
        m.close()


def test_partitions_added_and_a_subscribed_topic_created_later_are_assigned(broker):
    # Steady heartbeats trust the group's subscription metadata; a topic change must still
    # reach it (Kafka's metadata refresh): new partitions and a named topic that appears.
    bs = broker.bootstrap
    create(bs, "grows", 2)
    a, b = Member(bs, "ggrow", ["grows", "later"]), Member(bs, "ggrow", ["grows", "later"])
    try:
        poll_until([a, b], lambda: split([a, b], 2))
        epoch = group_epoch(bs, "ggrow")
        admin = AdminClient({"bootstrap.servers": bs})
        admin.create_partitions([NewPartitions("grows", 4)])["grows"].result(10)
        poll_until([a, b], lambda: split([a, b], 4) and len(a.assigned()) == 2)
        assert group_epoch(bs, "ggrow") == epoch + 1
        create(bs, "later", 2)
        poll_until([a, b], lambda: a.assigned("later") | b.assigned("later") == {0, 1})
        assert group_epoch(bs, "ggrow") == epoch + 2
        assert not a.errors and not b.errors
    finally:
        a.close()
        b.close()


def test_admin_describe_reports_a_consumer_type_group(broker):
    bs = broker.bootstrap
    create(bs, "desc", 3)
    m = Member(bs, "gdesc", ["desc"], **{"client.id": "describer"})
    try:
        poll_until([m], lambda: m.assigned() == {0, 1, 2})
        admin = AdminClient({"bootstrap.servers": bs})
        group = admin.describe_consumer_groups(["gdesc"])["gdesc"].result(10)
        assert group.type == ConsumerGroupType.CONSUMER
        assert str(group.state).endswith("STABLE")
        assert [mem.client_id for mem in group.members] == ["describer"]
        assert sorted(tp.partition for tp in group.members[0].assignment.topic_partitions) == [
            0, 1, 2]
    finally:
        m.close()


# The protocol switched off: Kafka 4.0's answers -------------------------------------------------

@pytest.fixture
def classic_only(kafka_broker_factory):
    return kafka_broker_factory(**{"group.coordinator.rebalance.protocols": "classic"}).bootstrap


@pytest.mark.parametrize("version", [0, 1])
def test_heartbeat_answers_unsupported_version_when_disabled(classic_only, version):
    with WireClient(classic_only) as client:
        response = client.request(
            _HEARTBEAT, version, group_id="g", member_id=str(uuid.uuid4()), member_epoch=0,
            instance_id=None, rack_id=None, rebalance_timeout=timedelta(seconds=30),
            subscribed_topic_names=("t",), subscribed_topic_regex=None, server_assignor=None,
            topic_partitions=())
        describe = client.request(_DESCRIBE, version, group_ids=("a", "b"),
                                  include_authorized_operations=False)
    assert response.error_code == ErrorCode.unsupported_version
    assert response.member_id is None and response.assignment is None
    assert [(g.group_id, g.error_code) for g in describe.groups] == [
        ("a", ErrorCode.unsupported_version), ("b", ErrorCode.unsupported_version)]


def test_librdkafka_fails_fast_when_disabled(classic_only):
    program = textwrap.dedent("""
        import sys, time
        from confluent_kafka import Consumer
        errors = []
        c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "kip848",
                      "group.protocol": "consumer", "error_cb": errors.append})
        c.subscribe(["kip848-topic"])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not errors:
            try:
                msg = c.poll(0.2)
            except Exception as exc:
                errors.append(exc)
                msg = None
            if msg is not None and msg.error():
                errors.append(msg.error())
        print("ERRORS:", " | ".join(str(e) for e in errors), flush=True)
        c.close()
    """)
    done = subprocess.run([sys.executable, "-c", program, classic_only],
                          capture_output=True, text=True, timeout=60)
    out = done.stdout + done.stderr
    assert "version" in out.split("ERRORS:", 1)[-1].lower(), out
    wait_until_sync(lambda: True)


def test_static_member_restarts_and_gets_its_partitions_back_without_a_bump(broker):
    bs = broker.bootstrap
    create(bs, "static", 4)
    admin = AdminClient({"bootstrap.servers": bs})
    a = Member(bs, "gstatic", ["static"], **{"group.instance.id": "worker-a"})
    b = Member(bs, "gstatic", ["static"], **{"group.instance.id": "worker-b"})
    try:
        poll_until([a, b], lambda: split([a, b], 4) and len(a.assigned()) == 2)
        before = admin.describe_consumer_groups(["gstatic"])["gstatic"].result(10)
        epoch_before = group_epoch(bs, "gstatic")
        mine = a.assigned()
        a.close()  # a static member leaves "for now" (epoch -2): nothing moves
        time.sleep(0.5)
        for _ in range(10):
            b.poll()
        assert len(b.assigned()) == 2
        a = Member(bs, "gstatic", ["static"], **{"group.instance.id": "worker-a"})
        poll_until([a, b], lambda: a.assigned() == mine)
        after = admin.describe_consumer_groups(["gstatic"])["gstatic"].result(10)
        ids = lambda g: {m.group_instance_id: m.member_id for m in g.members}  # noqa: E731
        assert set(ids(after)) == {"worker-a", "worker-b"}
        assert ids(after)["worker-a"] != ids(before)["worker-a"]  # a new incarnation
        assert ids(after)["worker-b"] == ids(before)["worker-b"]
        assert group_epoch(bs, "gstatic") == epoch_before  # no rebalance
    finally:
        a.close()
        b.close()


CLASSIC = {"group.protocol": "classic", "partition.assignment.strategy": "range",
           "session.timeout.ms": 2000, "heartbeat.interval.ms": 100}


def test_rolling_upgrade_from_classic_to_consumer_loses_and_repeats_nothing(broker):
    """A classic group of 3 is replaced member by member by consumer-protocol members: the
    first one upgrades the group online, the classic members keep working inside the consumer
    group until they are replaced. Every member commits each record it reads."""
    bs = broker.bootstrap
    create(bs, "roll", 6)
    produce(bs, "roll", 6, 60)
    produced = 60
    old = [Member(bs, "groll", ["roll"], commit_each=True, **CLASSIC) for _ in range(3)]
    new: list[Member] = []
    retired: list[Member] = []

    def everything_read() -> bool:
        return len({v for m in old + new + retired for v in m.values}) >= produced
    try:
        poll_until(old, everything_read)
        for _ in range(3):
            leaving = old.pop(0)
            leaving.close()
            retired.append(leaving)
            new.append(Member(bs, "groll", ["roll"], commit_each=True))
            produce(bs, "roll", 6, 30, start=produced)
            produced += 30
            poll_until(old + new, everything_read, timeout=60)
        poll_until(new, lambda: split(new, 6), timeout=60)
        values = [v for m in old + new + retired for v in m.values]
        assert sorted(set(values)) == list(range(produced))  # nothing lost
        assert len(values) == produced  # nothing read twice
        with WireClient(bs) as client:
            described = client.request(_DESCRIBE, 1, group_ids=("groll",),
                                       include_authorized_operations=False).groups[0]
        assert described.error_code == ErrorCode.none
        assert [m.member_type for m in described.members] == [1, 1, 1]
    finally:
        for m in old + new:
            m.close()


def test_kafkette_groups_describe_shows_a_consumer_group(broker, capsys):
    from kafkette.broker.cli.main import main

    bs = broker.bootstrap
    create(bs, "cli848", 2)
    produce(bs, "cli848", 2, 6)
    m = Member(bs, "gcli", ["cli848"], **{"client.id": "cli848-client"})
    try:
        poll_until([m], lambda: len(m.values) >= 6)
        m.consumer.commit(asynchronous=False)
        capsys.readouterr()
        assert main(["groups", "--bootstrap-server", bs, "describe", "gcli"]) == 0
        lines = [line.split() for line in capsys.readouterr().out.splitlines() if line.strip()]
    finally:
        m.close()
    table = lines.index(["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET",
                         "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"])
    assert ["STATE", "Stable"] in lines[:table] and ["MEMBERS", "1"] in lines[:table]
    rows = {int(r[2]): r for r in lines[table + 1:table + 3]}
    assert [rows[p][:6] for p in (0, 1)] == [["gcli", "cli848", "0", "3", "3", "0"],
                                              ["gcli", "cli848", "1", "3", "3", "0"]]
    assert rows[0][8] == "cli848-client"
    header = next(line for line in lines if line[0] == "GROUP" and "GROUP-EPOCH" in line)
    assert header[3:6] == ["consumer", "STATE", "Stable"]
    member_row = lines[lines.index(["CONSUMER-ID", "MEMBER-EPOCH", "PROTOCOL", "ASSIGNMENT",
                                    "TARGET-ASSIGNMENT"]) + 1]
    assert member_row[2:] == ["consumer", "cli848:0,1", "cli848:0,1"]


def test_group_and_offsets_survive_a_broker_sigkill(tmp_path):
    from kafkette.broker.testing import BrokerProcess, test_config

    proc = BrokerProcess(test_config(str(tmp_path), **{**FAST, "offsets.topic.num.partitions": 5}))
    try:
        bs = proc.bootstrap
        create(bs, "k9", 2)
        produce(bs, "k9", 2, 20)
        m = Member(bs, "gk9", ["k9"])
        try:
            poll_until([m], lambda: len(m.values) >= 20)
            m.consumer.commit(asynchronous=False)
            before = group_epoch(bs, "gk9")
            proc.kill()
            proc.start()
            # the member carries on in the replayed group (same epochs: no rebalance)
            assert group_epoch(bs, "gk9") == before
            produce(bs, "k9", 2, 4, start=20)
            poll_until([m], lambda: len(m.values) >= 24, timeout=40)
            assert sorted(m.values) == list(range(24))
            m.consumer.commit(asynchronous=False)
        finally:
            m.close()
        # a new member resumes from the committed offsets
        n = Member(bs, "gk9", ["k9"])
        try:
            produce(bs, "k9", 2, 2, start=24)
            poll_until([n], lambda: len(n.values) >= 2)
            assert sorted(n.values) == [24, 25]
        finally:
            n.close()
    finally:
        proc.kill()
