"""KIP-932 share group membership with a real client: confluent-kafka 2.16.1 ``ShareConsumer``
processes (librdkafka 2.16, ShareGroupHeartbeat v1) against kafkette — members join and all
share a one-partition topic, ShareGroupDescribe and ListGroups at the wire, close leaves, a
killed member is fenced after the share session timeout, and the group survives a restart.

Only membership is asserted here: records reach a ShareConsumer through ShareFetch.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from tests.wire import WireClient

from .helpers import reap_child

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

SHARE_DESCRIBE, LIST_GROUPS, CONSUMER_DESCRIBE = 77, 16, 69
# short sessions so a killed member goes quickly (the clients are real processes)
FAST = {"group.share.min.session.timeout.ms": 1000, "group.share.session.timeout.ms": 2500,
        "group.share.min.heartbeat.interval.ms": 100,
        "group.share.heartbeat.interval.ms": 250}

# A ShareConsumer polling until its stdin says "close" (then it leaves) or it is killed.
_CHILD = textwrap.dedent("""
    import sys, threading
    from confluent_kafka import ShareConsumer
    c = ShareConsumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
                       "client.id": sys.argv[4]})
    c.subscribe([sys.argv[3]])
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
    while not stop.is_set():
        try:
            c.poll(0.1)
        except Exception:
            pass
    c.close()
    print("CLOSED", flush=True)
""")


@pytest.fixture
def broker(kafka_broker_factory):
    return kafka_broker_factory(**FAST)


def create(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(10)


def spawn(bootstrap: str, group: str, topic: str, client_id: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", _CHILD, bootstrap, group, topic, client_id],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)


def describe(bootstrap: str, group: str) -> Any:
    with WireClient(bootstrap) as w:
        return w.request(SHARE_DESCRIBE, 1, group_ids=(group,),
                         include_authorized_operations=False).groups[0]


def wait_for(check: Callable[[], Any], timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)


def members(bootstrap: str, group: str) -> dict[str, tuple[str, int, list[tuple[str, tuple]]]]:
    """member id -> (client id, member epoch, [(topic, partitions)]) of a share group."""
    d = describe(bootstrap, group)
    if d.error_code != ErrorCode.none:
        return {}
    return {m.member_id: (m.client_id, m.member_epoch,
                          [(tp.topic_name, tp.partitions) for tp in m.assignment.topic_partitions])
            for m in d.members}


def settled(bootstrap: str, group: str, count: int) -> dict | None:
    """The members once ``count`` of them are at the group's assignment epoch."""
    d = describe(bootstrap, group)
    found = members(bootstrap, group)
    if len(found) == count and all(e == d.assignment_epoch for _c, e, _a in found.values()):
        return found
    return None


def test_share_consumers_all_share_a_one_partition_topic(broker):
    bs = broker.bootstrap
    create(bs, "jobs", 1)
    children = [spawn(bs, "workers", "jobs", f"worker-{i}") for i in range(3)]
    try:
        found = wait_for(lambda: settled(bs, "workers", 3))
        assert sorted(c for c, _e, _a in found.values()) == ["worker-0", "worker-1", "worker-2"]
        assert all(a == [("jobs", (0,))] for _c, _e, a in found.values())
        assert all(len(member_id) == 22 for member_id in found)  # client-made base64 uuids
        d = describe(bs, "workers")
        assert (d.error_code, d.group_state, d.assignor_name) == (
            ErrorCode.none, "Stable", "simple")
        assert all(m.subscribed_topic_names == ("jobs",) for m in d.members)
        with WireClient(bs) as w:
            listed = w.request(LIST_GROUPS, 5, states_filter=(),
                               types_filter=("share",)).groups
            assert [(g.group_id, g.protocol_type, g.group_state, g.group_type)
                    for g in listed] == [("workers", "share", "Stable", "share")]
            assert w.request(LIST_GROUPS, 5, states_filter=(),
                             types_filter=("consumer",)).groups == ()
            cd = w.request(CONSUMER_DESCRIBE, 1, group_ids=("workers",),
                           include_authorized_operations=False).groups[0]
            assert cd.error_code == ErrorCode.group_id_not_found
        # close: the member leaves at once (epoch -1), the others keep sharing the partition
        leaving = children.pop()
        leaving.stdin.write("close\n")
        leaving.stdin.flush()
        assert leaving.stdout.readline().strip() == "CLOSED"
        left = wait_for(lambda: settled(bs, "workers", 2), timeout=5)
        assert "worker-2" not in {c for c, _e, _a in left.values()}
        assert all(a == [("jobs", (0,))] for _c, _e, a in left.values())
    finally:
        for child in children:
            reap_child(child)


def test_a_killed_share_consumer_is_fenced_after_the_session_timeout(broker):
    bs = broker.bootstrap
    create(bs, "fence", 1)
    keeper = spawn(bs, "fenced", "fence", "keeper")
    victim = spawn(bs, "fenced", "fence", "victim")
    try:
        wait_for(lambda: settled(bs, "fenced", 2))
        os.kill(victim.pid, signal.SIGKILL)
        killed = time.monotonic()
        left = wait_for(lambda: settled(bs, "fenced", 1))
        waited = time.monotonic() - killed
        assert 1.5 < waited < 15, waited  # group.share.session.timeout.ms = 2.5 s
        assert [c for c, _e, _a in left.values()] == ["keeper"]
    finally:
        reap_child(keeper)
        reap_child(victim)


def test_a_share_group_survives_a_broker_restart(broker):
    bs = broker.bootstrap
    create(bs, "durable", 1)
    child = spawn(bs, "lasting", "durable", "lasting-0")
    try:
        before = wait_for(lambda: settled(bs, "lasting", 1))
        epoch = describe(bs, "lasting").group_epoch
    finally:
        reap_child(child)  # killed: no leave, the member stays until its session times out
    broker.restart()
    after = describe(bs, "lasting")
    assert (after.error_code, after.group_state, after.group_epoch) == (
        ErrorCode.none, "Stable", epoch)
    assert members(bs, "lasting") == before  # replayed from __consumer_offsets
    # the session timer is re-armed on load: the silent member is fenced
    wait_for(lambda: describe(bs, "lasting").group_state == "Empty", timeout=15)
    # and a new consumer joins the replayed group at the next epoch
    child = spawn(bs, "lasting", "durable", "lasting-1")
    try:
        found = wait_for(lambda: settled(bs, "lasting", 1))
        assert [c for c, _e, _a in found.values()] == ["lasting-1"]
        assert describe(bs, "lasting").group_epoch > epoch + 1
    finally:
        reap_child(child)
