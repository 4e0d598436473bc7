"""Group coordinator load: heartbeats/s, durable commits/s, 10-member rebalance, log replay.

The broker runs in its own process; a load-generator process forms N groups x M members
(JoinGroup/SyncGroup on one socket per member), then keeps ``--depth`` Heartbeats (or
OffsetCommits with the member's generation) in flight on every member socket. The baseline is
the same client pipelining ApiVersions (no coordinator work) against the same broker.
Replay: 1 000 000 offset records appended to a real __consumer_offsets partition, then
loaded by a fresh shard (baseline: reading and decoding the batches without replay).

Run: ``python -m bench.groups`` (``--quick`` for a short run).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import statistics
import struct
import tempfile
import time
from datetime import timedelta

from bench.stats import machine, summary
from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import decode_response, encode_request, request_type


def subscription(topic: str) -> bytes:
    return struct.pack(">hih", 0, 1, len(topic)) + topic.encode() + struct.pack(">i", -1)


class Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.r, self.w = reader, writer
        self.corr = 0

    @classmethod
    async def open(cls, port: int) -> Conn:
        r, w = await asyncio.open_connection("127.0.0.1", port)
        return cls(r, w)

    def frame(self, api: int, version: int, **fields) -> bytes:
        self.corr += 1
        return encode_request(api, version, self.corr, "bench", make(request_type(api, version), **fields))

    async def read_frame(self) -> bytes:
        (size,) = struct.unpack(">i", await self.r.readexactly(4))
        return await self.r.readexactly(size)

    async def call(self, api: int, version: int, **fields):
        self.w.write(self.frame(api, version, **fields))
        return decode_response(api, version, await self.read_frame())[1]


JOIN_V = 9


def join_fields(group: str, member_id: str, topic: str) -> dict:
    cls = request_type(11, JOIN_V)
    proto = make(item_type(cls, "protocols"), name="range", metadata=subscription(topic))
    return {"group_id": group, "session_timeout": timedelta(seconds=30),
            "rebalance_timeout": timedelta(seconds=30), "member_id": member_id,
            "group_instance_id": None, "protocol_type": "consumer", "protocols": (proto,),
            "reason": None}


async def form_group(conns: list[Conn], group: str, topic: str) -> list[tuple[str, int, bool]]:
    """Join + sync every member as a client does; (member_id, generation, is_leader) per
    connection once all of them hold the same generation.

    The members' joins race the end of the join phase, so a first generation may form without
    some of them: like a client, a member whose SyncGroup answers REBALANCE_IN_PROGRESS rejoins,
    and a synced member heartbeats (and rejoins on REBALANCE_IN_PROGRESS) until all are in.
    """
    ids = []
    for c in conns:
        r = await c.call(11, JOIN_V, **join_fields(group, "", topic))
        ids.append(r.member_id)
    synced: list = [None] * len(conns)

    async def member(i: int) -> None:
        c = conns[i]
        while True:
            j = await c.call(11, JOIN_V, **join_fields(group, ids[i], topic))
            assert j.error_code == 0, (j, group)
            if await sync(c, group, j) == 27:
                continue
            synced[i] = j
            while not (all(synced) and len({s.generation_id for s in synced}) == 1):
                r = await c.call(12, 4, group_id=group, generation_id=j.generation_id,
                                 member_id=j.member_id, group_instance_id=None)
                if r.error_code == 27:
                    synced[i] = None
                    break
                assert r.error_code == 0, (r, group)
                await asyncio.sleep(0.01)
            else:
                return

    await asyncio.gather(*(member(i) for i in range(len(conns))))
    return [(j.member_id, j.generation_id, j.leader == j.member_id) for j in synced]


async def sync(c: Conn, group: str, j) -> int:
    """SyncGroup for one join result (the leader hands everyone an empty assignment)."""
    acls = item_type(request_type(14, 5), "assignments")
    assignments = ()
    if j.leader == j.member_id:
        assignments = tuple(make(acls, member_id=m.member_id, assignment=b"\x00\x00")
                            for m in j.members)
    r = await c.call(14, 5, group_id=group, generation_id=j.generation_id,
                     member_id=j.member_id, group_instance_id=None, protocol_type="consumer",
                     protocol_name="range", assignments=assignments)
    assert r.error_code in (0, 27), (r, j.member_id, j.generation_id, j.leader, group)
    return r.error_code


async def sync_all(conns: list[Conn], group: str, joins) -> None:
    codes = await asyncio.gather(*(sync(c, group, j) for c, j in zip(conns, joins, strict=True)))
    assert all(code == 0 for code in codes), codes


async def pipeline(conns: list[Conn], frames: list[bytes], depth: int, seconds: float,
                   error_at: int | None) -> tuple[float, int]:
    """Keep ``depth`` copies of each connection's frame in flight; (responses/s, errors)."""
    done = 0
    errors = 0
    stop = time.perf_counter() + seconds

    async def run(c: Conn, frame: bytes) -> None:
        nonlocal done, errors
        c.w.write(frame * depth)
        while time.perf_counter() < stop:
            data = await c.read_frame()
            if error_at is not None and data[error_at:error_at + 2] != b"\x00\x00":
                errors += 1
            done += 1
            c.w.write(frame)
        for _ in range(depth):  # the responses still in flight
            await c.read_frame()
    t0 = time.perf_counter()
    await asyncio.gather(*(run(c, f) for c, f in zip(conns, frames, strict=True)))
    return done / (time.perf_counter() - t0), errors


async def load(port: int, args, out) -> None:
    topic = "bench-groups"
    setup = await Conn.open(port)
    mcls = request_type(3, 12)
    await setup.call(3, 12, topics=(make(item_type(mcls, "topics"), name=topic,
                                         topic_id=__import__("uuid").UUID(int=0)),),
                     allow_auto_topic_creation=True, include_topic_authorized_operations=False)
    # 10-member rebalance: leader rejoins, everyone rejoins and syncs.
    group = "bench-rebalance"
    rconns = [await Conn.open(port) for _ in range(10)]
    formed = await form_group(rconns, group, topic)
    ids = [(mid, gen) for mid, gen, _ in formed]
    rebalance = []
    leader_idx = next(i for i, (_m, _g, is_leader) in enumerate(formed) if is_leader)
    for _ in range(args.rebalances):
        t0 = time.perf_counter()
        leader_task = asyncio.ensure_future(
            rconns[leader_idx].call(11, JOIN_V, **join_fields(group, ids[leader_idx][0], topic)))

        async def follower(i: int, ids=ids):
            # as a client does: heartbeat until REBALANCE_IN_PROGRESS, then rejoin
            while True:
                r = await rconns[i].call(12, 4, group_id=group, generation_id=ids[i][1],
                                         member_id=ids[i][0], group_instance_id=None)
                if r.error_code == 27:
                    break
                await asyncio.sleep(0.0005)
            return await rconns[i].call(11, JOIN_V, **join_fields(group, ids[i][0], topic))
        rest = await asyncio.gather(*(follower(i) for i in range(10) if i != leader_idx))
        joins = rest[:leader_idx] + [await leader_task] + rest[leader_idx:]
        assert all(j.error_code == 0 for j in joins), joins
        await sync_all(rconns, group, joins)
        rebalance.append(time.perf_counter() - t0)
        ids = [(j.member_id, j.generation_id) for j in joins]
        leader_idx = next(i for i, j in enumerate(joins) if j.leader == j.member_id)
    members: list[tuple[Conn, str, str, int]] = []
    for g in range(args.groups):
        group = f"bench-{g}"
        conns = [await Conn.open(port) for _ in range(args.members)]
        for c, (mid, gen, _leader) in zip(conns, await form_group(conns, group, topic), strict=True):
            members.append((c, group, mid, gen))
    conns = [m[0] for m in members]
    results: dict[str, list[float]] = {"baseline": [], "heartbeat": [], "commit": []}
    hb_errors = commit_errors = 0
    api_frames = [c.frame(18, 2) for c in conns]
    hb_frames = [c.frame(12, 4, group_id=g, generation_id=gen, member_id=mid,
                         group_instance_id=None) for c, g, mid, gen in members]
    ccls = request_type(8, 8)
    tcls = item_type(ccls, "topics")
    commit_frames = [c.frame(8, 8, group_id=g, generation_id_or_member_epoch=gen, member_id=mid,
                             group_instance_id=None, topics=(make(tcls, name=topic, partitions=(
                                 make(item_type(tcls, "partitions"), partition_index=0,
                                      committed_offset=i, committed_leader_epoch=-1,
                                      committed_metadata=None),)),))
                     for i, (c, g, mid, gen) in enumerate(members)]
    for _ in range(args.runs):
        rate, _ = await pipeline(conns, api_frames, args.depth, args.seconds, None)
        results["baseline"].append(rate)
        # Heartbeat v4 response: corr(4) tags(1) throttle(4) error(2)
        rate, err = await pipeline(conns, hb_frames, args.depth, args.seconds, 9)
        results["heartbeat"].append(rate)
        hb_errors += err
        # OffsetCommit v8: corr tags throttle topics(1) name(1+len) parts(1) index(4) error(2)
        rate, err = await pipeline(conns, commit_frames, args.depth, args.seconds,
                                   4 + 1 + 4 + 1 + 1 + len(topic) + 1 + 4)
        results["commit"].append(rate)
        commit_errors += err
    out.put((results, hb_errors, commit_errors, rebalance))


def client(port: int, args, out) -> None:
    asyncio.run(load(port, args, out))


def serve(ready, stop, log_dir: str, linger: int) -> None:
    import logging
    import os

    from kafkette.broker.cli.loop import run

    if os.environ.get("BENCH_LOG"):
        logging.basicConfig(level=logging.INFO)

    async def main() -> None:
        from kafkette.broker.server import Broker

        broker = Broker({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": log_dir,
                         "group.initial.rebalance.delay.ms": "500",
                         "group.coordinator.append.linger.ms": str(linger)})
        await broker.start()
        ready.put(broker.bound[1])
        while not stop.is_set():
            await asyncio.sleep(0.1)
        await broker.stop()

    run(main())


def replay_bench(records: int) -> tuple[float, float]:
    """(seconds to load ``records`` offset records into a shard, seconds to only read+decode)."""
    from kafkette.broker.config import BrokerConfig
    from kafkette.broker.services.offsets_log import PartitionOffsetsLog
    from kafkette.coordinator.group.group_config import CoordinatorConfig
    from kafkette.coordinator.group.group_shard import GroupCoordinatorShard
    from kafkette.coordinator.runtime.clock import ManualClock
    from kafkette.coordinator.runtime.coordinator_runtime import PartitionContext
    from kafkette.protocol.group_records import (
        OffsetCommitKey,
        OffsetCommitValue,
        encode_key,
        encode_value,
    )
    from kafkette.storage.topics import LogManager

    async def main() -> tuple[float, float]:
        with tempfile.TemporaryDirectory() as tmp:
            logs = LogManager(BrokerConfig({"log.dirs": tmp}))
            await logs.start()
            await logs.create_topic("__consumer_offsets", 1, {"cleanup.policy": "compact"},
                                    internal=True)
            olog = PartitionOffsetsLog(logs.partition("__consumer_offsets", 0))
            batch = 5000
            for start in range(0, records, batch):
                await olog.append([
                    (encode_key(OffsetCommitKey(f"group-{i % 1000}", f"topic-{i % 37}", i % 64)),
                     encode_value(OffsetCommitValue(i, -1, "", 1_700_000_000_000)))
                    for i in range(start, min(start + batch, records))])
            t0 = time.perf_counter()
            n = 0
            async for chunk in olog.read():
                n += len(chunk)
            read_only = time.perf_counter() - t0
            assert n == records
            config = CoordinatorConfig()
            context = PartitionContext(0, olog, ManualClock(),
                                       lambda c: GroupCoordinatorShard(0, c, config),
                                       config.append_linger_ms, config.commit_timeout_ms)
            t0 = time.perf_counter()
            assert await context.load() == records
            loaded = time.perf_counter() - t0
            await logs.stop()
            return loaded, read_only

    return asyncio.run(main())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--groups", type=int, default=20)
    parser.add_argument("--members", type=int, default=5)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rebalances", type=int, default=20)
    parser.add_argument("--linger", type=int, default=10)
    parser.add_argument("--replay-records", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.runs, args.rebalances, args.replay_records = 1.0, 1, 5, 100_000
    ctx = mp.get_context("spawn")
    ready, stop, out = ctx.Queue(), ctx.Event(), ctx.Queue()
    with tempfile.TemporaryDirectory() as log_dir:
        server = ctx.Process(target=serve, args=(ready, stop, log_dir, args.linger))
        server.start()
        port = ready.get(timeout=60)
        gen = ctx.Process(target=client, args=(port, args, out))
        gen.start()
        results, hb_err, commit_err, rebalance = out.get(timeout=600)
        gen.join()
        stop.set()
        server.join(20)
    print(f"machine: {machine()}; {args.groups} groups x {args.members} members, "
          f"{args.depth} in flight per member, linger {args.linger} ms")
    base = statistics.median(results["baseline"])
    print(f"baseline ApiVersions:   {summary(results['baseline'], 'req/s')}")
    for name in ("heartbeat", "commit"):
        print(f"{name + 's':<23} {summary(results[name], 'req/s')}  "
              f"ratio to baseline {statistics.median(results[name]) / base:.2f}")
    print(f"errors: heartbeats {hb_err}, commits {commit_err}")
    print(f"10-member rebalance (rejoin+sync, client-observed): {summary(rebalance, 'ms', 1000)}")
    if args.replay_records:
        loads, reads = [], []
        for _ in range(1 if args.quick else 3):
            loaded, read_only = replay_bench(args.replay_records)
            loads.append(loaded)
            reads.append(read_only)
        print(f"replay {args.replay_records} offset records: {summary(loads, 's')}; "
              f"read+decode only {summary(reads, 's')}; "
              f"ratio {statistics.median(loads) / statistics.median(reads):.2f}")


if __name__ == "__main__":
    main()
