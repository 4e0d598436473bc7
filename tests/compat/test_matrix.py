"""Scenarios every client of the matrix runs against a real kafkette on a loopback port.

Each client is a real program in a child process (see clients.py); group members of one client
run side by side, a crash is SIGKILL. The table of the last run is printed at the end.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter

import pytest

from kafkette.broker.cli.admin_client import AdminClient
from tests.compat.clients import CLIENT_NAMES, Client, Member

PARTITIONS = 3
SESSION_MS = 1500  # a crashed member is expired after this; the broker's test minimum is 100 ms
REBALANCE_S = 30.0

pytestmark = pytest.mark.parametrize("client", CLIENT_NAMES, indirect=True)


@pytest.fixture
def broker(kafka_broker_factory):
    return kafka_broker_factory(**{"num.partitions": PARTITIONS})


@pytest.fixture
def members():
    started: list[Member] = []
    yield started
    for member in started:
        member.reap()


def _name(kind: str) -> str:
    return f"compat-{kind}-{uuid.uuid4().hex[:8]}"


def _topic(broker, partitions: int = PARTITIONS) -> str:
    name = _name("topic")
    broker.run(broker.broker.logs.create_topic(name, partitions))
    return name


def _split(group: list[Member], partitions: int = PARTITIONS) -> bool:
    """True when the members' latest assignments are disjoint and cover every partition."""
    got = [m.assignment for m in group]
    if any(a is None for a in got):
        return False
    flat = [p for a in got for p in a]
    return sorted(flat) == list(range(partitions))


def _wait_split(group: list[Member], what: str) -> None:
    deadline = time.monotonic() + REBALANCE_S
    while not _split(group):
        for m in group:
            if m.proc.poll() is not None:
                raise AssertionError(f"{m.name} exited during '{what}': {m.describe()}")
        if time.monotonic() > deadline:
            details = "\n".join(f"member {i}: {m.describe()}" for i, m in enumerate(group))
            raise AssertionError(f"no clean split for '{what}': "
                                 f"{[m.assignment for m in group]}\n{details}")
        time.sleep(0.1)


def _consumed(group: list[Member]) -> set[tuple[int, int]]:
    return {(r.partition, r.offset) for m in group for r in m.records}


def test_metadata(client: Client, broker) -> None:
    topic = _topic(broker)
    md = client.metadata(broker.bootstrap, topic)
    host, port = broker.address
    assert md["partitions"] == PARTITIONS
    assert [tuple(b) for b in md["brokers"]] == [(1, host, port)]


def test_produce(client: Client, broker) -> None:
    """The client produces to every partition, then reads everything back from the beginning."""
    topic, count = _topic(broker), 30
    acked = client.produce(broker.bootstrap, topic, count, "m", PARTITIONS)
    if acked is not None:  # kcat does not print offsets
        assert sorted(acked) == sorted((p, o) for p in range(PARTITIONS)
                                       for o in range(count // PARTITIONS))
    records = client.consume(broker.bootstrap, topic, count)
    assert len(records) == count
    assert {(r.key, r.value) for r in records} == {(f"m-{i}", f"m-{i}") for i in range(count)}
    for r in records:
        assert r.key == f"m-{int(r.key.split('-')[1])}"
        assert int(r.key.split("-")[1]) % PARTITIONS == r.partition
    per_partition = Counter(r.partition for r in records)
    assert per_partition == {p: count // PARTITIONS for p in range(PARTITIONS)}
    assert sorted(r.offset for r in records if r.partition == 0) == list(range(count // PARTITIONS))


def test_group_split(client: Client, broker, members) -> None:
    """Three members split three partitions; together they read every record once assigned."""
    topic, group = _topic(broker), _name("group")
    client.produce(broker.bootstrap, topic, 30, "g", PARTITIONS)
    for _ in range(3):
        members.append(client.member(broker.bootstrap, topic, group, SESSION_MS))
    _wait_split(members, "3 members")
    for m in members:
        assert len(m.assignment) == 1
    wanted = {(p, o) for p in range(PARTITIONS) for o in range(10)}
    members[0].wait(lambda _m: wanted <= _consumed(members), "all 30 records consumed")


def test_leave_and_crash(client: Client, broker, members) -> None:
    """A member leaving cleanly and one crashing both hand their partitions to the survivors."""
    topic, group = _topic(broker), _name("group")
    for _ in range(3):
        members.append(client.member(broker.bootstrap, topic, group, SESSION_MS))
    _wait_split(members, "3 members")
    leaver, crasher, survivor = members
    leaver.close()
    _wait_split([crasher, survivor], "after a clean leave")
    crasher.kill()
    _wait_split([survivor], "after a crash")
    assert survivor.assignment == list(range(PARTITIONS))
    # The survivor really owns the partitions: it reads what is produced now.
    client.produce(broker.bootstrap, topic, 6, "after", PARTITIONS)
    survivor.wait(lambda m: {r.value for r in m.records} >= {f"after-{i}" for i in range(6)},
                  "records produced after the crash")


def _consume_commit_close(client: Client, bootstrap: str, topic: str, group: str,
                          members: list[Member], expect: set[tuple[int, int]]) -> Member:
    member = client.member(bootstrap, topic, group, SESSION_MS)
    members.append(member)
    member.wait(lambda m: expect <= {(r.partition, r.offset) for r in m.records},
                f"{len(expect)} records consumed")
    member.commit()
    member.close()
    return member


def _committed(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    with AdminClient(bootstrap) as admin:
        return admin.committed(group)


def _resumes_after(client: Client, bootstrap: str, topic: str, group: str,
                   members: list[Member], first: int, total: int) -> None:
    """A new member of ``group`` reads exactly offsets first..total-1 of every partition."""
    member = client.member(bootstrap, topic, group, SESSION_MS)
    members.append(member)
    wanted = {(p, o) for p in range(PARTITIONS) for o in range(first, total)}
    member.wait(lambda m: wanted <= {(r.partition, r.offset) for r in m.records},
                "new records after the committed offsets")
    early = [r for r in member.records if r.offset < first]
    assert not early, f"re-read records before the committed offsets: {early[:5]}"
    member.close()


def test_commit_resume(client: Client, broker, members) -> None:
    """Offsets committed by one member are where the next member of the group starts."""
    topic, group = _topic(broker), _name("group")
    client.produce(broker.bootstrap, topic, 15, "a", PARTITIONS)
    _consume_commit_close(client, broker.bootstrap, topic, group, members,
                          {(p, o) for p in range(PARTITIONS) for o in range(5)})
    assert _committed(broker.bootstrap, group) == {(topic, p): 5 for p in range(PARTITIONS)}
    client.produce(broker.bootstrap, topic, 9, "b", PARTITIONS)
    _resumes_after(client, broker.bootstrap, topic, group, members, first=5, total=8)


def test_restart_keeps_offsets(client: Client, broker, members) -> None:
    """Committed offsets and records survive a broker restart (same port and log.dirs)."""
    topic, group = _topic(broker), _name("group")
    client.produce(broker.bootstrap, topic, 15, "a", PARTITIONS)
    _consume_commit_close(client, broker.bootstrap, topic, group, members,
                          {(p, o) for p in range(PARTITIONS) for o in range(5)})
    broker.restart()
    assert _committed(broker.bootstrap, group) == {(topic, p): 5 for p in range(PARTITIONS)}
    client.produce(broker.bootstrap, topic, 9, "b", PARTITIONS)
    _resumes_after(client, broker.bootstrap, topic, group, members, first=5, total=8)
    records = client.consume(broker.bootstrap, topic, 24)
    assert len({(r.partition, r.offset) for r in records}) == 24
