"""aiokafka consumer groups: formation of a 2- and a 10-member group, and the rebalance after one
of the 10 leaves.

Each run uses a fresh topic with as many partitions as members and a fresh group. The members
are started first (bootstrap done), then the clock starts and all subscribe at once; the group is
formed when every member holds a non-empty assignment, the assignments are pairwise disjoint and
together cover the topic. Leave: one member of the formed 10-member group is closed (it sends
LeaveGroup); the clock stops when the other 9 again hold a disjoint, non-empty, covering
assignment. Clients: aiokafka with ``heartbeat_interval_ms=100`` (members learn of a rebalance on
their next heartbeat) and ``session_timeout_ms=10000``; all in the bench process, on one loop.
Broker CPU rows: the broker process's user + system CPU time (/proc/PID/stat, 10 ms ticks) over
the same timed interval (it includes the members' 100 ms heartbeats in that interval).
"""

from __future__ import annotations

import asyncio
import time
import uuid

from bench.figures.base import Context, Figure, Row
from bench.figures.loadgen import process_cpu_seconds
from bench.figures.wire import (
    FETCH,
    FIND_COORDINATOR,
    HEARTBEAT,
    JOIN_GROUP,
    LEAVE_GROUP,
    LIST_OFFSETS,
    SYNC_GROUP,
    WireClient,
)

TIMEOUT = 30.0


def _balanced(members: list, partitions: set) -> bool:
    assigned = [{tp.partition for tp in m.assignment()} for m in members]
    if not all(assigned):
        return False
    union: set[int] = set().union(*assigned)
    return sum(len(a) for a in assigned) == len(union) and union == partitions


async def _wait_balanced(members: list, partitions: set, changed: asyncio.Event) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not _balanced(members, partitions):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"group of {len(members)} not balanced after {TIMEOUT:.0f}s")
        try:
            await asyncio.wait_for(changed.wait(), remaining)
        except TimeoutError:
            continue
        changed.clear()


def _listener(changed: asyncio.Event):
    from aiokafka import ConsumerRebalanceListener

    class Listener(ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked):
            changed.set()

        async def on_partitions_assigned(self, assigned):
            changed.set()

    return Listener()


async def _members(bootstrap: str, group: str, n: int) -> list:
    from aiokafka import AIOKafkaConsumer

    members = [AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, client_id=f"m{i}",
                                enable_auto_commit=False, auto_offset_reset="earliest",
                                heartbeat_interval_ms=100, session_timeout_ms=10000)
               for i in range(n)]
    await asyncio.gather(*(m.start() for m in members))
    return members


async def _form(bootstrap: str, topic: str, n: int, leave: bool, pid: int) -> dict[str, float]:
    members = await _members(bootstrap, f"{topic}-group", n)
    partitions = set(range(n))
    changed = asyncio.Event()
    out: dict[str, float] = {}
    try:
        cpu0, t0 = process_cpu_seconds(pid), time.perf_counter()
        for m in members:
            m.subscribe([topic], listener=_listener(changed))
        await _wait_balanced(members, partitions, changed)
        out["form"] = time.perf_counter() - t0
        out["form_cpu"] = process_cpu_seconds(pid) - cpu0
        if leave:
            cpu0, t0 = process_cpu_seconds(pid), time.perf_counter()
            stopping = asyncio.ensure_future(members[0].stop())
            await _wait_balanced(members[1:], partitions, changed)
            out["leave"] = time.perf_counter() - t0
            out["leave_cpu"] = process_cpu_seconds(pid) - cpu0
            await stopping
    finally:
        await asyncio.gather(*(m.stop() for m in members), return_exceptions=True)
    return out


class Groups(Figure):
    def measure(self, ctx: Context) -> dict[str, float]:
        assert ctx.server is not None
        bootstrap = ctx.server.bootstrap
        tag = uuid.uuid4().hex[:8]
        with WireClient(bootstrap) as client:
            client.create_topic(f"g2-{tag}", 2)
            client.create_topic(f"g10-{tag}", 10)
        pid = ctx.server.pid
        two = asyncio.run(_form(bootstrap, f"g2-{tag}", 2, leave=False, pid=pid))
        ten = asyncio.run(_form(bootstrap, f"g10-{tag}", 10, leave=True, pid=pid))
        return {"form2": two["form"], "form10": ten["form"], "leave10": ten["leave"],
                "form10_cpu": ten["form_cpu"], "leave10_cpu": ten["leave_cpu"]}


FIGURES = [Groups(
    name="groups", title="aiokafka consumer groups: formation and rebalance",
    rows=(Row("form2", "2-member group formed (subscribe → disjoint assignments)", "ms", 1000),
          Row("form10", "10-member group formed", "ms", 1000),
          Row("leave10", "rebalance after 1 of 10 leaves", "ms", 1000),
          Row("form10_cpu", "broker CPU during the 10-member formation", "ms", 1000),
          Row("leave10_cpu", "broker CPU during the rebalance after 1 of 10 leaves", "ms", 1000)),
    needs=(FIND_COORDINATOR, JOIN_GROUP, SYNC_GROUP, HEARTBEAT, LEAVE_GROUP, FETCH, LIST_OFFSETS),
)]
