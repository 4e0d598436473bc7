"""Scaling table (opt-in: ``--scaling`` or ``--only scaling``): RSS and heartbeat CPU by number of
groups, rebalance time and broker CPU by group size, replay time by number of offsets.

Groups (``--scaling-groups``, default 10,1000,10000): each run, for each count, a fresh broker
gets that many groups as the memory figure creates them (one member each, joined from up to 1000
client threads at once, session timeout 60 s so the members stay for the whole measurement, and
one committed offset each); RSS is read 0.5 s later; then the pipelined heartbeat load of the
load figure (32 more groups, 8 in flight per connection, 1.5 s counted) gives heartbeats/s and
the broker's CPU µs per heartbeat with the idle groups present. Rebalance
(``--scaling-members``, default 10,100,500): each run, for each size N, a fresh group of N
members on N raw connections of one asyncio client (JoinGroup with the KIP-394 member-id round
trip, SyncGroup; the leader hands every member a one-partition assignment; a member whose
generation is superseded rejoins as a client does) is formed untimed; then one member sends
LeaveGroup, and the clock and the broker's CPU time (/proc/PID/stat, 10 ms ticks) run from that
LeaveGroup until all N − 1 others hold the new generation: each sends a Heartbeat right after
the LeaveGroup is answered (repeated every 5 ms until it answers REBALANCE_IN_PROGRESS), rejoins
with its member id, and syncs. Each run does this 5 times per size, each on a fresh group
(emptied afterwards with one LeaveGroup for all its members): the row is the median time and the
mean broker CPU of the 5 (CPU time is counted in 10 ms ticks). Baseline: the same request pattern
(N − 1 connections: one request answered at once, then two each answered once all N − 1 have
arrived) against a uvloop server with no protocol logic (bench.figures.rebalance_floor), median
time and mean CPU of 20 rounds: the I/O floor under the broker's own work. Replay (``--scaling-replay``, default 100k,1M,5M; multiples of
1000): the replay figure at that many offsets (groups × 1000 partitions), each size prepared
once per target, with its memory per committed offset.
"""

from __future__ import annotations

import asyncio
import itertools
import shutil
import statistics
import struct
import time
import uuid

from bench.figures.base import Context, Figure, Row
from bench.figures.load import loadgen
from bench.figures.loadgen import (
    COORDINATOR_NOT_READY,
    MEMBER_ID_REQUIRED,
    REBALANCE_IN_PROGRESS,
    assignment_of,
    process_cpu_seconds,
    subscription,
)
from bench.figures.memory import create_groups
from bench.figures.replay import PARTITIONS, replay_figure
from bench.figures.wire import (
    FIND_COORDINATOR,
    HEARTBEAT,
    JOIN_GROUP,
    LEAVE_GROUP,
    OFFSET_COMMIT,
    SYNC_GROUP,
    KafkaError,
    WireClient,
    error_name,
    fresh_topic,
)
from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import decode_response, encode_request, request_type

GROUP_COUNTS = (10, 1000, 10000)
MEMBER_COUNTS = (10, 100, 500)
REPLAY_OFFSETS = (100_000, 1_000_000, 5_000_000)
SESSION_MS = 60000
SETTLE = 0.5
FORM_TIMEOUT = 120.0
REPEATS = 5  # rebalances per size and run: CPU time is read in 10 ms ticks
FLOOR_ROUNDS = 20


def _count(n: int) -> str:
    for div, suffix in ((1_000_000, "M"), (1000, "k")):
        if n >= div and n % div == 0:
            return f"{n // div}{suffix}"
    return str(n)


def parse_counts(text: str) -> tuple[int, ...]:
    """``"100k,1M,5M"`` → (100000, 1000000, 5000000)."""
    out = []
    for item in text.split(","):
        item = item.strip().lower()
        mult = 1_000_000 if item.endswith("m") else 1000 if item.endswith("k") else 1
        out.append(int(float(item.rstrip("mk")) * mult))
    return tuple(out)


class GroupCount(Figure):
    counts: tuple[int, ...] = GROUP_COUNTS

    def measure(self, ctx: Context) -> dict[str, float]:
        out: dict[str, float] = {}
        for n in self.counts:
            server = ctx.target.spawn()
            try:
                self.check(server)
                create_groups(server.bootstrap, f"scale-{uuid.uuid4().hex[:6]}", n, SESSION_MS)
                time.sleep(SETTLE)
                out[f"rss_{n}"] = server.rss_bytes()
                topic = fresh_topic(server.bootstrap, "hb")
                rate, cpu = loadgen(server.bootstrap, "heartbeat", topic, server_pid=server.pid)
                out[f"hb_{n}"], out[f"cpu_{n}"] = rate, cpu
            finally:
                server.stop()
                shutil.rmtree(server.data_dir, ignore_errors=True)
        return out


class Member:
    """One group member on its own connection (sequential request/response)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 versions: dict[int, int]) -> None:
        self.r, self.w, self.versions = reader, writer, versions
        self.corr = itertools.count(1)
        self.member_id = ""
        self.generation = -1

    async def call(self, api: int, **fields):
        version = self.versions[api]
        self.w.write(encode_request(api, version, next(self.corr), "bench-scale",
                                    make(request_type(api, version), **fields)))
        (size,) = struct.unpack(">i", await self.r.readexactly(4))
        return decode_response(api, version, await self.r.readexactly(size))[1]

    async def join(self, group: str, topic: str):
        version = self.versions[JOIN_GROUP]
        proto = make(item_type(request_type(JOIN_GROUP, version), "protocols"), name="range",
                     metadata=subscription(topic))
        fields = dict(group_id=group, session_timeout=SESSION_MS, rebalance_timeout=SESSION_MS,
                      member_id=self.member_id, group_instance_id=None,
                      protocol_type="consumer", protocols=(proto,), reason=None)
        resp = await self.call(JOIN_GROUP, **fields)
        deadline = time.monotonic() + FORM_TIMEOUT
        # A broker that has just started may still be loading its coordinator: retried as a
        # client does (only ever on the first, untimed join).
        while int(resp.error_code) in COORDINATOR_NOT_READY and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
            resp = await self.call(JOIN_GROUP, **fields)
        if int(resp.error_code) == MEMBER_ID_REQUIRED:
            fields["member_id"] = resp.member_id
            resp = await self.call(JOIN_GROUP, **fields)
        if int(resp.error_code) != 0:
            raise KafkaError(f"JoinGroup {group}: {error_name(int(resp.error_code))}")
        self.member_id, self.generation = resp.member_id, resp.generation_id
        return resp

    async def sync(self, group: str, topic: str, joined) -> int:
        assignments = ()
        if joined.leader == joined.member_id:
            cls = item_type(request_type(SYNC_GROUP, self.versions[SYNC_GROUP]), "assignments")
            assignments = tuple(
                make(cls, member_id=m.member_id, assignment=assignment_of(topic, [i]))
                for i, m in enumerate(joined.members))
        resp = await self.call(SYNC_GROUP, group_id=group, generation_id=joined.generation_id,
                               member_id=joined.member_id, group_instance_id=None,
                               protocol_type="consumer", protocol_name="range",
                               assignments=assignments)
        code = int(resp.error_code)
        if code not in (0, REBALANCE_IN_PROGRESS):
            raise KafkaError(f"SyncGroup {group}: {error_name(code)}")
        return code

    async def heartbeat(self, group: str) -> int:
        resp = await self.call(HEARTBEAT, group_id=group, generation_id=self.generation,
                               member_id=self.member_id, group_instance_id=None)
        return int(resp.error_code)

    async def rejoin_until_synced(self, group: str, topic: str) -> None:
        while True:
            joined = await self.join(group, topic)
            if await self.sync(group, topic, joined) == 0:
                return


async def _form(members: list[Member], group: str, topic: str) -> None:
    """Every member joined and synced in one generation, as clients get there (untimed)."""
    deadline = time.monotonic() + FORM_TIMEOUT
    synced: dict[int, int] = {}

    async def one(i: int, m: Member) -> None:
        while True:
            await m.rejoin_until_synced(group, topic)
            synced[i] = m.generation
            while True:
                if len(synced) == len(members) and len(set(synced.values())) == 1:
                    return
                if time.monotonic() > deadline:
                    raise TimeoutError(f"group of {len(members)} not formed")
                await asyncio.sleep(0.05)
                code = await m.heartbeat(group)
                if code == REBALANCE_IN_PROGRESS:
                    synced.pop(i, None)
                    break
                if code != 0:
                    raise KafkaError(f"Heartbeat {group}: {error_name(code)}")

    await asyncio.gather(*(one(i, m) for i, m in enumerate(members)))


async def _rebalance(bootstrap: str, size: int, versions: dict[int, int],
                     pid: int) -> tuple[float, float]:
    """(seconds, broker CPU seconds) from one member's LeaveGroup until the rest are synced."""
    host, port = bootstrap.rsplit(":", 1)
    tag = uuid.uuid4().hex[:8]
    group, topic = f"scale-{size}-{tag}", f"scale-topic-{tag}"
    members = []
    try:
        for _ in range(size):
            reader, writer = await asyncio.open_connection(host, int(port))
            members.append(Member(reader, writer, versions))
        await _form(members, group, topic)
        leaver, rest = members[0], members[1:]
        leave_cls = item_type(request_type(LEAVE_GROUP, versions[LEAVE_GROUP]), "members")
        leave_fields: dict = dict(group_id=group, member_id=leaver.member_id)
        if versions[LEAVE_GROUP] >= 3:
            leave_fields["members"] = (make(leave_cls, member_id=leaver.member_id,
                                            group_instance_id=None, reason=None),)

        async def follow(m: Member) -> None:
            while (code := await m.heartbeat(group)) == 0:
                await asyncio.sleep(0.005)
            if code != REBALANCE_IN_PROGRESS:
                raise KafkaError(f"Heartbeat {group}: {error_name(code)}")
            await m.rejoin_until_synced(group, topic)

        cpu0, t0 = process_cpu_seconds(pid), time.perf_counter()
        resp = await leaver.call(LEAVE_GROUP, **leave_fields)
        if int(resp.error_code) != 0:
            raise KafkaError(f"LeaveGroup {group}: {error_name(int(resp.error_code))}")
        await asyncio.gather(*(follow(m) for m in rest))
        elapsed, cpu = time.perf_counter() - t0, process_cpu_seconds(pid) - cpu0
        if len({m.generation for m in rest}) != 1:
            raise KafkaError("members ended in different generations")
        if versions[LEAVE_GROUP] >= 3:  # empty the group at once, not member by member
            await rest[0].call(LEAVE_GROUP, group_id=group, member_id="", members=tuple(
                make(leave_cls, member_id=m.member_id, group_instance_id=None, reason=None)
                for m in rest))
        return elapsed, cpu
    finally:
        for m in members:
            m.w.close()


class Rebalance(Figure):
    sizes: tuple[int, ...] = MEMBER_COUNTS

    def prepare(self, server) -> dict[int, int]:
        with WireClient(server.bootstrap) as client:
            return {api: client.version(api)
                    for api in (JOIN_GROUP, SYNC_GROUP, HEARTBEAT, LEAVE_GROUP)}

    def measure(self, ctx: Context) -> dict[str, float]:
        assert ctx.server is not None
        out: dict[str, float] = {}
        for n in self.sizes:
            times, cpus = [], []
            for _ in range(REPEATS):
                elapsed, cpu = asyncio.run(_rebalance(ctx.server.bootstrap, n, ctx.state,
                                                      ctx.server.pid))
                times.append(elapsed)
                cpus.append(cpu)
            out[f"time_{n}"] = statistics.median(times)
            out[f"cpu_{n}"] = sum(cpus) / len(cpus)
        return out

    def baseline(self) -> dict[str, float]:
        from bench.figures.rebalance_floor import floor

        out: dict[str, float] = {}
        for n in self.sizes:
            out[f"time_{n}"], out[f"cpu_{n}"] = floor(n, FLOOR_ROUNDS)
        return out


def figures(groups: tuple[int, ...] = GROUP_COUNTS, members: tuple[int, ...] = MEMBER_COUNTS,
            replay: tuple[int, ...] = REPLAY_OFFSETS) -> list[Figure]:
    out: list[Figure] = []
    if groups:
        fig = GroupCount(
            name="scale-groups", title="Scaling: RSS and heartbeat CPU by number of groups",
            rows=tuple(row for n in groups for row in (
                Row(f"rss_{n}", f"RSS with {n:,} groups (1 member + 1 offset each)", "MiB",
                    1 / 2**20),
                Row(f"hb_{n}", f"heartbeats/s with {n:,} idle groups (32 conns × 8 in flight)",
                    "/s", higher_is_better=True),
                Row(f"cpu_{n}", f"server CPU per heartbeat with {n:,} idle groups", "µs"))),
            needs=(FIND_COORDINATOR, JOIN_GROUP, SYNC_GROUP, HEARTBEAT, OFFSET_COMMIT),
            fresh=True, scaling=True)
        fig.counts = groups
        out.append(fig)
    if members:
        fig = Rebalance(
            name="scale-rebalance", title="Scaling: rebalance time and broker CPU by group size",
            rows=tuple(row for n in members for row in (
                Row(f"time_{n}", f"rebalance of a {n}-member group after 1 leaves (raw wire)",
                    "ms", 1000),
                Row(f"cpu_{n}", f"broker CPU during that {n}-member rebalance", "ms", 1000))),
            needs=(FIND_COORDINATOR, JOIN_GROUP, SYNC_GROUP, HEARTBEAT, LEAVE_GROUP),
            baseline_label="uvloop server with no protocol logic, same request pattern",
            scaling=True)
        fig.sizes = members
        out.append(fig)
    for offsets in replay:
        groups_n = max(1, offsets // PARTITIONS)
        label = _count(groups_n * PARTITIONS)
        fig = replay_figure(groups_n, f"scale-replay-{label}",
                            f"Scaling: replay of {label} offset records on restart",
                            f"restart → {label} committed offsets served "
                            f"({groups_n} groups × {PARTITIONS} partitions)")
        fig.scaling = True
        out.append(fig)
    return out


FIGURES = figures()
