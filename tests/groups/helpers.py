"""Shared bits for the real-client group tests."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer
from kafka import KafkaConsumer

from tests.wire import WireClient

FAST_GROUP = {"session_timeout_ms": 1500, "heartbeat_interval_ms": 100}


async def wait_until(pred: Callable[[], bool], timeout: float = 20, step: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(step)


def wait_until_sync(pred: Callable[[], bool], timeout: float = 20, step: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(step)


def parts(assignment: Any) -> set[int]:
    return {tp.partition for tp in assignment}


def covers_exactly(assignments: list[set[int]], n: int) -> bool:
    total = [p for a in assignments for p in a]
    return len(total) == n and set(total) == set(range(n))


CHILD_CONSUMER = r"""
import asyncio, sys
from aiokafka import AIOKafkaConsumer

async def main():
    session = int(sys.argv[4])
    c = AIOKafkaConsumer(sys.argv[2], bootstrap_servers=sys.argv[1], group_id=sys.argv[3],
                         session_timeout_ms=session, heartbeat_interval_ms=min(100, session // 5),
                         enable_auto_commit=False)
    await c.start()
    while True:
        await asyncio.sleep(0.05)
        a = sorted(tp.partition for tp in c.assignment())
        print("ASSIGNED", a, flush=True)

asyncio.run(main())
"""

CK_CHILD_CONSUMER = r"""
import sys
from confluent_kafka import Consumer

bootstrap, topic, group, strategy, session = sys.argv[1:6]
c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
              "partition.assignment.strategy": strategy, "session.timeout.ms": int(session),
              "heartbeat.interval.ms": 100, "enable.auto.commit": False,
              "auto.offset.reset": "earliest", "client.id": "ck-child"})
c.subscribe([topic])
while True:
    c.poll(0.05)
    print("ASSIGNED", sorted(tp.partition for tp in c.assignment()), flush=True)
"""


def _spawn(program: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", program, *args],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def spawn_consumer(bootstrap: str, topic: str, group: str,
                   session_ms: int = 1500) -> subprocess.Popen:
    """An aiokafka consumer in a child process (so a test can SIGKILL it: no LeaveGroup)."""
    return _spawn(CHILD_CONSUMER, bootstrap, topic, group, str(session_ms))


def spawn_ck_consumer(bootstrap: str, topic: str, group: str, strategy: str,
                      session_ms: int = 2000) -> subprocess.Popen:
    """A confluent-kafka (librdkafka) consumer in a child process, killable with SIGKILL."""
    return _spawn(CK_CHILD_CONSUMER, bootstrap, topic, group, strategy, str(session_ms))


def child_assignment(child: subprocess.Popen) -> set[int] | None:
    """The child's latest reported assignment (it prints one line every 50 ms)."""
    latest = getattr(child, "latest", None)
    if not hasattr(child, "reader"):
        def read() -> None:
            assert child.stdout is not None
            for line in child.stdout:
                if line.startswith("ASSIGNED"):
                    child.latest = set(json.loads(line.split(" ", 1)[1]))  # type: ignore[attr-defined]
        child.reader = threading.Thread(target=read, daemon=True)  # type: ignore[attr-defined]
        child.reader.start()  # type: ignore[attr-defined]
    return latest


def reap_child(child: subprocess.Popen) -> None:
    """SIGKILL a child consumer (if still alive), wait for it and close its output."""
    child.kill()
    child.wait(5)
    reader = getattr(child, "reader", None)
    if reader is not None:
        reader.join(5)
    if child.stdout is not None:
        child.stdout.close()


def describe_group(bootstrap: str, group: str) -> Any:
    """DescribeGroups v5 of one group, on a fresh connection."""
    with WireClient(bootstrap) as w:
        return w.request(15, 5, groups=(group,), include_authorized_operations=False).groups[0]


def list_groups(bootstrap: str) -> dict[str, str]:
    """{group: state} from ListGroups v4."""
    with WireClient(bootstrap) as w:
        r = w.request(16, 4, states_filter=())
        assert r.error_code == 0
        return {g.group_id: g.group_state for g in r.groups}


# kafka-python ------------------------------------------------------------------------------------

# kafka-python 3.0.12 can lose a join when poll()'s timeout expires while its JoinGroup or
# SyncGroup is in flight (it logs "timeout in ensure_active_group; returning early", then never
# applies the assignment nor heartbeats, though the broker answered correctly; see
# tests/compat/programs/pyclient.py). A consumer polled alone uses this longer timeout.
KP_POLL_MS = 1000


def kp_consumer(bootstrap: str, topic: str, group: str, *, metadata_first: bool = False,
                **kw: Any) -> KafkaConsumer:
    """With ``metadata_first``, subscribed once the topic's metadata is known (a leader that
    assigns before it knows the topic assigns nothing and rejoins at once: one more join, one
    more chance of the race above)."""
    opts = {"enable_auto_commit": False, "auto_offset_reset": "earliest",
            "session_timeout_ms": 6000, "heartbeat_interval_ms": 100, "fetch_max_wait_ms": 100,
            **kw}
    if not metadata_first:
        return KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, **opts)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, **opts)
    consumer.partitions_for_topic(topic)
    consumer.subscribe([topic])
    return consumer


def kp_offset(n: int) -> Any:
    from kafka.structs import OffsetAndMetadata

    try:
        return OffsetAndMetadata(n, "", -1)
    except TypeError:
        return OffsetAndMetadata(n, "")


# confluent-kafka ---------------------------------------------------------------------------------

def ck_consumer(bootstrap: str, group: str, strategy: str, **overrides: Any) -> Consumer:
    return Consumer({
        "bootstrap.servers": bootstrap, "group.id": group,
        "partition.assignment.strategy": strategy, "session.timeout.ms": 2000,
        "heartbeat.interval.ms": 100, "enable.auto.commit": False,
        "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 1000,
        **overrides,
    })


class CkMember:
    """Polled from the test thread: librdkafka runs rebalance callbacks inside poll()."""

    def __init__(self, bootstrap: str, topic: str, group: str, strategy: str,
                 **overrides: Any) -> None:
        self.consumer = ck_consumer(bootstrap, group, strategy, **overrides)
        self.consumer.subscribe([topic])
        self.records: list = []

    def poll(self) -> None:
        msg = self.consumer.poll(0.02)
        if msg is not None and msg.error() is None:
            self.records.append(msg)

    def assigned(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def close(self) -> None:
        self.consumer.close()


def poll_members(members: list[CkMember], until: Callable[[], bool], rounds: int = 500) -> None:
    for _ in range(rounds):
        for m in members:
            m.poll()
        if until():
            return
    raise AssertionError(f"condition not reached: {[m.assigned() for m in members]}")
