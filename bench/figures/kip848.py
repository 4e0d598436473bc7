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
default 5000 ms, and assigns partitions with its default ``uniform`` assignor). What dominates
is the heartbeat interval, not the broker's work. Consumer protocol, stable: every member's
first heartbeat is immediate, but a partition the server has already given to an earlier member
reaches its new owner only after the old owner acknowledges the revocation in its next
heartbeat, one interval (5 s) later; so about 5.0 s. Consumer protocol, leave: the remaining
members learn of their new assignment on their next heartbeat; the leave comes right after the
heartbeat round that stabilized the group, so it waits nearly a whole interval (5 s). Classic,
stable: with no initial rebalance delay, all ten JoinGroups usually land in the first join phase
(tens of ms); a member that misses it costs one more rebalance, learned on a heartbeat (3 s).
Classic, leave: the others learn of the rebalance on their next heartbeat, right after the last
SyncGroup restarted their timers, so nearly a whole ``heartbeat.interval.ms`` (3 s).
Ratio rows: consumer/classic, pair by pair in the same run. Broker CPU rows: the broker
process's CPU time (/proc/PID/stat) over each timed interval, which spans seconds of heartbeat
intervals, so it includes the members' heartbeats and idle fetches in it. Targets that do not list ConsumerGroupHeartbeat (API 68) in ApiVersions are
asked anyway with one request and are n/a.
The ``--dev`` figure runs the same groups against kafkette with its development preset
(broker/dev_preset.py, as ``kafkette serve --dev``): a 100 ms consumer heartbeat interval, so a
revocation is acknowledged within about 100 ms.
"""

from __future__ import annotations

import threading
import time

from bench.figures.base import Context, Figure, NotApplicable, Row
from bench.figures.loadgen import process_cpu_seconds
from bench.figures.wire import (
    CONSUMER_GROUP_HEARTBEAT,
    FIND_COORDINATOR,
    WireClient,
    error_name,
    fresh_topic,
    supported_versions,
)
from bench.peers import Server, Target, is_kafkette, with_overrides

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


def form_and_leave(bootstrap: str, protocol: str, pid: int) -> tuple[float, float, float, float]:
    """(formation s, leave s, broker CPU s during each)."""
    topic = fresh_topic(bootstrap, f"k848-{protocol}", MEMBERS)
    members = [Member(bootstrap, f"{topic}-group", protocol, i) for i in range(MEMBERS)]
    partitions = set(range(MEMBERS))
    try:
        for m in members:
            m.start()
        cpu0 = process_cpu_seconds(pid)
        for m in members:
            m.subscribe_to = topic
        form = wait_balanced(members, partitions, f"{protocol} group of {MEMBERS}")
        cpu1 = process_cpu_seconds(pid)
        members[0].leave.set()
        leave = wait_balanced(members[1:], partitions, f"{protocol} group after a leave")
        return form, leave, cpu1 - cpu0, process_cpu_seconds(pid) - cpu1
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
            answer = f"is answered with {error_name(int(resp.error_code))}"
        except (OSError, ConnectionError):
            answer = "gets the connection closed"
    raise NotApplicable(f"no consumer protocol (KIP-848): ConsumerGroupHeartbeat (API 68) is not "
                        f"in ApiVersions; a request for it {answer}")


class Kip848(Figure):
    def check(self, server: Server) -> None:
        require_consumer_protocol(server)
        super().check(server)

    def measure(self, ctx: Context) -> dict[str, float]:
        assert ctx.server is not None
        pid = ctx.server.pid
        form, leave, form_cpu, leave_cpu = form_and_leave(ctx.server.bootstrap, "consumer", pid)
        classic_form, classic_leave, classic_form_cpu, classic_leave_cpu = form_and_leave(
            ctx.server.bootstrap, "classic", pid)
        return {"form": form, "leave": leave, "classic_form": classic_form,
                "classic_leave": classic_leave, "form_ratio": form / classic_form,
                "leave_ratio": leave / classic_leave, "form_cpu": form_cpu,
                "leave_cpu": leave_cpu, "classic_form_cpu": classic_form_cpu,
                "classic_leave_cpu": classic_leave_cpu}


class Kip848Dev(Kip848):
    """The same groups against kafkette's development preset (``kafkette serve --dev``, the
    pytest plugin's brokers): its group.* values as overrides, so a baseline tree older than
    ``--dev`` runs it too."""

    def target_for(self, target: Target) -> Target:
        if not is_kafkette(target):
            raise NotApplicable("kafkette's development preset (kafkette serve --dev)")
        from kafkette.broker.dev_preset import DEV_PRESET

        return with_overrides(target, *(f"{key}={value}" for key, value in DEV_PRESET.items()
                                        if not key.startswith("group.share.")))


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
          Row("leave_ratio", "after a leave: consumer/classic (same run)", "×"),
          Row("form_cpu", "broker CPU while the consumer-protocol group forms", "ms", 1000),
          Row("leave_cpu", "broker CPU while consumer-protocol members are reassigned after "
                           "the leave", "ms", 1000),
          Row("classic_form_cpu", "broker CPU while the classic group forms", "ms", 1000),
          Row("classic_leave_cpu", "broker CPU during the classic rebalance after the leave",
              "ms", 1000)),
    needs=(FIND_COORDINATOR, CONSUMER_GROUP_HEARTBEAT),
), Kip848Dev(
    name="kip848-dev", title="KIP-848 consumer groups vs classic under --dev (the development preset)",
    rows=(Row("form", "consumer protocol, --dev: 10-member group stable", "ms", 1000),
          Row("leave", "consumer protocol, --dev: reassigned after 1 of 10 leaves", "ms", 1000),
          Row("classic_form", "classic protocol, --dev: 10-member group stable", "ms", 1000),
          Row("classic_leave", "classic protocol, --dev: rebalance after 1 of 10 leaves", "ms",
              1000),
          Row("form_ratio", "stable: consumer/classic (same run)", "×"),
          Row("leave_ratio", "after a leave: consumer/classic (same run)", "×")),
    needs=(FIND_COORDINATOR, CONSUMER_GROUP_HEARTBEAT),
)]
