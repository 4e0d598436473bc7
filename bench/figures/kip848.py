"""KIP-848 consumer groups (``group.protocol=consumer``) against classic groups, same client.

Each run, for each protocol (consumer, then classic): a fresh 10-partition topic and a fresh group
of 10 confluent-kafka (librdkafka) consumers, one thread each polling every 10 ms. The members
are created and bootstrapped first (metadata fetched), then the clock starts and all subscribe at
once; the group is stable when every member holds a non-empty assignment, the assignments are
pairwise disjoint and together cover the topic (each member's assignment as read in its own
thread after a poll). Leave: one member is closed (consumer protocol: a heartbeat with epoch -1;
classic: LeaveGroup); the clock stops when the other 9 again hold a disjoint, non-empty, covering
assignment. Client settings are librdkafka's defaults apart from ``group.protocol``
(classic: ``heartbeat.interval.ms=3000``, ``session.timeout.ms=45000``, range assignor;
consumer: the broker sets the heartbeat interval, its ``group.consumer.heartbeat.interval.ms``
default 5000 ms, and assigns partitions with its default ``uniform`` assignor). What dominates:
a consumer-protocol member's first heartbeat is immediate, but a partition that the server
moves from one member to another is handed to its new owner only after the old owner has
acknowledged the revocation in a later heartbeat, so each round of moves costs up to one
heartbeat interval (5 s); the classic rebalance waits for every member to rejoin, which members
learn of on their next heartbeat (up to 3 s). Ratio rows: consumer/classic, pair by pair in
the same run. ConsumerGroupHeartbeat load: ``python -m bench.figures.loadgen --mode
consumer-heartbeat`` as in the pipelined-load figure (32 connections, one consumer group each with
one member, 8 heartbeats in flight per connection, 1.5 s after a 0.3 s ramp); each member joins
with epoch 0 and then sends its member id and current epoch with every other field null
(unchanged); the classic Heartbeat rate of the same loadgen is measured in the same run for the
ratio. Targets that do not list ConsumerGroupHeartbeat (API 68) in ApiVersions are n/a.
"""

from __future__ import annotations

import threading
import time
import uuid

from bench.figures.base import Context, Figure, NotApplicable, Row
from bench.figures.load import loadgen
from bench.figures.wire import (
    CONSUMER_GROUP_HEARTBEAT,
    FIND_COORDINATOR,
    HEARTBEAT,
    JOIN_GROUP,
    SYNC_GROUP,
    WireClient,
    error_name,
    supported_versions,
)
from bench.peers import Server

MEMBERS = 10
TIMEOUT = 60.0
POLL_S = 0.01


class Member(threading.Thread):
    """One confluent-kafka consumer polling in its own thread; publishes its assignment."""

    def __init__(self, bootstrap: str, group: str, protocol: str, index: int) -> None:
        from confluent_kafka import Consumer

        super().__init__(daemon=True)
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                  "group.protocol": protocol, "client.id": f"m{index}",
                                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                                  "log_level": 3})
        self.consumer.list_topics(timeout=10)  # bootstrap done before the clock starts
        self.partitions: set[int] = set()
        self.subscribe_to: str | None = None
        self.leave = threading.Event()
        self.stopped = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.subscribe_to:
                if self.leave.wait(POLL_S):
                    return
            self.consumer.subscribe([self.subscribe_to])
            while not self.leave.is_set():
                self.consumer.poll(POLL_S)
                self.partitions = {tp.partition for tp in self.consumer.assignment()}
        except BaseException as exc:  # noqa: BLE001 - re-raised by the measuring thread
            self.error = exc
        finally:
            self.consumer.close()
            self.stopped.set()


def balanced(members: list[Member], partitions: set[int]) -> bool:
    assigned = [m.partitions for m in members]
    if not all(assigned):
        return False
    union: set[int] = set().union(*assigned)
    return sum(len(a) for a in assigned) == len(union) and union == partitions


def wait_balanced(members: list[Member], partitions: set[int], what: str) -> float:
    t0 = time.perf_counter()
    while not balanced(members, partitions):
        for m in members:
            if m.error is not None:
                raise RuntimeError(f"member failed: {m.error}")
        if time.perf_counter() - t0 > TIMEOUT:
            raise TimeoutError(f"{what}: not balanced after {TIMEOUT:.0f}s: "
                               f"{[sorted(m.partitions) for m in members]}")
        time.sleep(POLL_S / 2)
    return time.perf_counter() - t0


def form_and_leave(bootstrap: str, protocol: str) -> tuple[float, float]:
    tag = f"{protocol}-{uuid.uuid4().hex[:8]}"
    topic = f"k848-{tag}"
    with WireClient(bootstrap) as client:
        client.create_topic(topic, MEMBERS)
    members = [Member(bootstrap, f"{topic}-group", protocol, i) for i in range(MEMBERS)]
    partitions = set(range(MEMBERS))
    try:
        for m in members:
            m.start()
        for m in members:
            m.subscribe_to = topic
        form = wait_balanced(members, partitions, f"{protocol} group of {MEMBERS}")
        members[0].leave.set()
        leave = wait_balanced(members[1:], partitions, f"{protocol} group after a leave")
        return form, leave
    finally:
        for m in members:
            m.leave.set()
        for m in members:
            m.join(30)


def require_consumer_protocol(server: Server) -> None:
    """NotApplicable unless the target serves ConsumerGroupHeartbeat; a target that does not
    list it is asked anyway (one v0 request joining a probe group), to report what it does."""
    if server.supports(CONSUMER_GROUP_HEARTBEAT):
        return
    with WireClient(server.bootstrap, timeout=5) as client:
        client.versions = {**supported_versions(client), CONSUMER_GROUP_HEARTBEAT: (0, 0)}
        try:
            resp = client.request(CONSUMER_GROUP_HEARTBEAT, 0, group_id="probe", member_id="",
                                  member_epoch=0, instance_id=None, rack_id=None,
                                  rebalance_timeout=30000, subscribed_topic_names=("probe",),
                                  server_assignor=None, topic_partitions=())
            answer = f"answers it with {error_name(int(resp.error_code))}"
        except (OSError, ConnectionError) as exc:
            answer = f"closes the connection on it ({type(exc).__name__})"
    raise NotApplicable(f"no consumer protocol (KIP-848): ConsumerGroupHeartbeat (API 68) is not "
                        f"in ApiVersions and a request for it {answer}")


class Kip848(Figure):
    def check(self, server: Server) -> None:
        require_consumer_protocol(server)
        super().check(server)

    def measure(self, ctx: Context) -> dict[str, float]:
        assert ctx.server is not None
        form, leave = form_and_leave(ctx.server.bootstrap, "consumer")
        classic_form, classic_leave = form_and_leave(ctx.server.bootstrap, "classic")
        return {"form": form, "leave": leave, "classic_form": classic_form,
                "classic_leave": classic_leave, "form_ratio": form / classic_form,
                "leave_ratio": leave / classic_leave}


class ConsumerHeartbeatLoad(Figure):
    def check(self, server: Server) -> None:
        require_consumer_protocol(server)
        super().check(server)

    def prepare(self, server: Server) -> str:
        topic = f"cghb-{uuid.uuid4().hex[:8]}"
        with WireClient(server.bootstrap) as client:
            client.create_topic(topic, 1)
        return topic

    def measure(self, ctx: Context) -> dict[str, float]:
        assert ctx.server is not None
        consumer = loadgen(ctx.server.bootstrap, "consumer-heartbeat", ctx.state)
        classic = loadgen(ctx.server.bootstrap, "heartbeat", ctx.state)
        return {"cg_heartbeat": consumer, "classic_heartbeat": classic,
                "cg_ratio": consumer / classic}


FIGURES = [Kip848(
    name="kip848", title="KIP-848 consumer groups vs classic (confluent-kafka, 10 members)",
    rows=(Row("form", "consumer protocol: 10-member group stable (subscribe → disjoint "
                      "assignments)", "ms", 1000),
          Row("leave", "consumer protocol: reassigned after 1 of 10 leaves", "ms", 1000),
          Row("classic_form", "classic protocol, same client: 10-member group stable", "ms",
              1000),
          Row("classic_leave", "classic protocol, same client: rebalance after 1 of 10 leaves",
              "ms", 1000),
          Row("form_ratio", "stable: consumer/classic (same run)", "×"),
          Row("leave_ratio", "after a leave: consumer/classic (same run)", "×")),
    needs=(FIND_COORDINATOR, CONSUMER_GROUP_HEARTBEAT),
), ConsumerHeartbeatLoad(
    name="cghb-load", title="Pipelined ConsumerGroupHeartbeat load (KIP-848), separate process",
    rows=(Row("cg_heartbeat", "ConsumerGroupHeartbeats/s (32 conns × 8 in flight)", "/s", 1,
              higher_is_better=True),
          Row("classic_heartbeat", "classic Heartbeats/s, same run (32 conns × 8 in flight)",
              "/s", 1, higher_is_better=True),
          Row("cg_ratio", "ConsumerGroupHeartbeat/classic Heartbeat (same run)", "×",
              higher_is_better=True)),
    needs=(FIND_COORDINATOR, CONSUMER_GROUP_HEARTBEAT, JOIN_GROUP, SYNC_GROUP, HEARTBEAT),
)]
