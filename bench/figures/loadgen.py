"""Pipelined group-coordinator load from a separate process.

``python -m bench.figures.loadgen --bootstrap HOST:PORT --mode MODE --topic T``

Setup (untimed): one group per connection. heartbeat: the connection joins its group as the only
member (JoinGroup, with the KIP-394 member-id round trip where the version needs it, then
SyncGroup as leader); consumer-heartbeat: the connection joins a KIP-848 consumer group as its
only member (ConsumerGroupHeartbeat with epoch 0 subscribing to the topic, then heartbeats
acknowledging the assignment until the epoch is stable); commit: a "simple" group (generation -1,
no member); commit-moving: the same, but each OffsetCommit carries the next offset (as a consuming
member commits). Load: every connection keeps ``--depth`` identical requests in flight (Heartbeat,
ConsumerGroupHeartbeat with the member id and current epoch and no changed fields, or
OffsetCommit of one partition; in commit-moving only the offset differs) and sends one more per
response. A response counts only if it is byte-identical to the first one,
which was decoded and checked to carry no error. Prints one JSON line: responses/s over
``--seconds`` after a short ramp, the number of non-identical (failed) responses and, with
``--server-pid``, the broker process's CPU µs per counted response over the same window.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import struct
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from bench.figures.wire import (
    CONSUMER_GROUP_HEARTBEAT,
    HEARTBEAT,
    JOIN_GROUP,
    OFFSET_COMMIT,
    SYNC_GROUP,
    KafkaError,
    WireClient,
    error_name,
)
from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import decode_response, request_type

MEMBER_ID_REQUIRED = 79
REBALANCE_IN_PROGRESS = 27
COORDINATOR_NOT_READY = {14, 15}  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE
SESSION_MS = 10000  # aiokafka's default; also its default rebalance timeout


def _str16(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def subscription(topic: str) -> bytes:
    """ConsumerProtocolSubscription v0: the member subscribes to ``topic``."""
    return struct.pack(">hi", 0, 1) + _str16(topic) + struct.pack(">i", -1)


def assignment_of(topic: str, partitions: list[int]) -> bytes:
    """ConsumerProtocolAssignment v0."""
    return (struct.pack(">hi", 0, 1) + _str16(topic) + struct.pack(">i", len(partitions))
            + b"".join(struct.pack(">i", p) for p in partitions) + struct.pack(">i", -1))


def join(client: WireClient, group: str, topic: str, session_ms: int = SESSION_MS,
         rebalance_ms: int = SESSION_MS) -> tuple[int, str]:
    """Join ``group`` as its only member and sync as leader; returns (generation, member id)."""
    version = client.version(JOIN_GROUP)
    req = request_type(JOIN_GROUP, version)
    protocol = make(item_type(req, "protocols"), name="range", metadata=subscription(topic))
    fields = dict(group_id=group, session_timeout=session_ms, rebalance_timeout=rebalance_ms,
                  member_id="", group_instance_id=None, protocol_type="consumer",
                  protocols=(protocol,), reason=None)
    sync_version = client.version(SYNC_GROUP)
    sync_req = request_type(SYNC_GROUP, sync_version)
    deadline = time.perf_counter() + 30
    for _attempt in range(10):
        resp = client.request(JOIN_GROUP, version, **fields)
        # A broker that has just started may still be loading its coordinator: retried as a
        # client does.
        while (int(resp.error_code) in COORDINATOR_NOT_READY
               and time.perf_counter() < deadline):
            time.sleep(0.01)
            resp = client.request(JOIN_GROUP, version, **fields)
        if int(resp.error_code) == MEMBER_ID_REQUIRED:
            fields["member_id"] = resp.member_id
            resp = client.request(JOIN_GROUP, version, **fields)
        if int(resp.error_code) != 0:
            raise KafkaError(f"JoinGroup {group}: {error_name(int(resp.error_code))}")
        fields["member_id"] = resp.member_id
        assignment = make(item_type(sync_req, "assignments"), member_id=resp.member_id,
                          assignment=assignment_of(topic, [0]))
        sync = client.request(SYNC_GROUP, sync_version, group_id=group,
                              generation_id=resp.generation_id, member_id=resp.member_id,
                              group_instance_id=None, protocol_type="consumer",
                              protocol_name="range", assignments=(assignment,))
        if int(sync.error_code) == REBALANCE_IN_PROGRESS:
            continue
        if int(sync.error_code) != 0:
            raise KafkaError(f"SyncGroup {group}: {error_name(int(sync.error_code))}")
        return resp.generation_id, resp.member_id
    raise KafkaError(f"group {group} kept rebalancing")


def heartbeat_frame(client: WireClient, group: str, topic: str) -> tuple[int, bytes]:
    generation, member = join(client, group, topic)
    version = client.version(HEARTBEAT)
    return version, client.encode(HEARTBEAT, version, group_id=group, generation_id=generation,
                                  member_id=member, group_instance_id=None)


def consumer_heartbeat_frame(client: WireClient, group: str, topic: str) -> tuple[int, bytes]:
    """Join ``group`` (consumer protocol) as its only member; the steady-state heartbeat frame.

    Join: epoch 0, subscribed to ``topic``, owning nothing (v1+: with a client-chosen member id,
    v0: the coordinator picks it). Then heartbeat with the current epoch, reporting the last
    assignment received as owned, until a response brings neither a new epoch nor an assignment.
    The returned frame carries only the member id and epoch (every other field null: unchanged),
    as a client's regular heartbeat does."""
    version = client.version(CONSUMER_GROUP_HEARTBEAT)
    req = request_type(CONSUMER_GROUP_HEARTBEAT, version)
    owned_cls = item_type(req, "topic_partitions")
    fields = dict(group_id=group, member_id=str(uuid.uuid4()) if version >= 1 else "",
                  member_epoch=0, instance_id=None, rack_id=None, rebalance_timeout=SESSION_MS,
                  subscribed_topic_names=(topic,), subscribed_topic_regex=None,
                  server_assignor=None, topic_partitions=())
    for _attempt in range(20):
        resp = client.request(CONSUMER_GROUP_HEARTBEAT, version, **fields)
        if int(resp.error_code) != 0:
            raise KafkaError(f"ConsumerGroupHeartbeat {group}: {error_name(int(resp.error_code))}")
        settled = fields["member_epoch"] == resp.member_epoch and resp.assignment is None
        fields.update(member_id=resp.member_id, member_epoch=resp.member_epoch,
                      rebalance_timeout=-1, subscribed_topic_names=None)
        if settled:
            fields["topic_partitions"] = None
            return version, client.encode(CONSUMER_GROUP_HEARTBEAT, version, **fields)
        if resp.assignment is not None:
            fields["topic_partitions"] = tuple(
                make(owned_cls, topic_id=t.topic_id, partitions=t.partitions)
                for t in resp.assignment.topic_partitions)
    raise KafkaError(f"consumer group {group}: member epoch did not settle")


_I64 = struct.Struct(">q")
MOVING_START = 0x10000000001  # commit-moving's first offset: 8 bytes found once in the frame


def commit_frame(client: WireClient, group: str, topic: str, partitions: int = 1,
                 offset: int = 1, generation: int = -1, member: str = "") -> tuple[int, bytes]:
    version = client.version(OFFSET_COMMIT)
    req = request_type(OFFSET_COMMIT, version)
    topic_cls = item_type(req, "topics")
    part_cls = item_type(topic_cls, "partitions")
    parts = tuple(make(part_cls, partition_index=p, committed_offset=offset,
                       committed_leader_epoch=-1, commit_timestamp=-1, committed_metadata="")
                  for p in range(partitions))
    return version, client.encode(
        OFFSET_COMMIT, version, group_id=group, generation_id_or_member_epoch=generation,
        generation_id=generation, member_id=member, group_instance_id=None, retention_time_ms=-1,
        topics=(make(topic_cls, name=topic, partitions=parts),))


def response_errors(api_key: int, version: int, frame: bytes) -> tuple[str, list[int]]:
    """(response type name, the non-zero error codes it carries)."""
    _, body = decode_response(api_key, version, frame)
    codes = [int(body.error_code)] if hasattr(body, "error_code") else [
        int(p.error_code) for t in body.topics for p in t.partitions]
    return type(body).__name__, [c for c in codes if c != 0]


def check_response(api_key: int, version: int, frame: bytes) -> None:
    name, bad = response_errors(api_key, version, frame)
    if bad:
        raise KafkaError(f"{name}: {error_name(bad[0])}")


def request_when_ready(client: WireClient, api_key: int, version: int, frame: bytes,
                       timeout: float = 30) -> bytes:
    """Send ``frame`` until the coordinator answers it without COORDINATOR_LOAD_IN_PROGRESS or
    COORDINATOR_NOT_AVAILABLE (a broker that has just started may still be loading), as a
    client retries; returns the checked response."""
    deadline = time.perf_counter() + timeout
    while True:
        response = client.pipeline([frame])[0]
        _name, bad = response_errors(api_key, version, response)
        if not set(bad) & COORDINATOR_NOT_READY or time.perf_counter() > deadline:
            check_response(api_key, version, response)
            return response
        time.sleep(0.01)


class Pump(asyncio.Protocol):
    """Keeps ``depth`` copies of one request in flight; counts identical responses."""

    def __init__(self, request: bytes, response: bytes, depth: int, moving: bool = False) -> None:
        self.request, self.response, self.depth = request, response, depth
        # commit-moving: where this request's committed offset lies (MOVING_START, found once in
        # every frame); each request commits the next one
        self.offset_at = request.index(_I64.pack(MOVING_START)) if moving else None
        self.template = bytearray(request)
        self.offset = MOVING_START
        self.size = len(response)
        self.buf = bytearray()
        self.ok = 0
        self.bad = 0
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport
        transport.write(self.requests(self.depth))

    def requests(self, n: int) -> bytes:
        if self.offset_at is None:
            return self.request * n
        out = []
        for _ in range(n):
            self.offset += 1
            _I64.pack_into(self.template, self.offset_at, self.offset)
            out.append(bytes(self.template))
        return b"".join(out)

    def data_received(self, data: bytes) -> None:
        self.buf += data
        n = len(self.buf) // self.size
        if not n:
            return
        chunk = bytes(self.buf[:n * self.size])
        del self.buf[:n * self.size]
        if chunk == self.response * n:
            self.ok += n
        else:  # a different response (an error): count per frame
            for i in range(n):
                if chunk[i * self.size:(i + 1) * self.size] == self.response:
                    self.ok += 1
                else:
                    self.bad += 1
        assert self.transport is not None
        self.transport.write(self.requests(n))


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used so far (/proc/PID/stat, Linux)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def drive(clients: list[WireClient], frames: list[bytes], responses: list[bytes],
                depth: int, seconds: float, ramp: float,
                server_pid: int | None = None,
                moving: bool = False) -> tuple[float, int, float | None]:
    loop = asyncio.get_running_loop()
    pumps = []
    for client, frame, resp in zip(clients, frames, responses, strict=True):
        _, pump = await loop.create_connection(
            lambda f=frame, r=resp: Pump(f, r, depth, moving), sock=client.sock)
        pumps.append(pump)
    await asyncio.sleep(ramp)
    start_ok = sum(p.ok for p in pumps)
    cpu0 = process_cpu_seconds(server_pid) if server_pid else 0.0
    t0 = time.perf_counter()
    await asyncio.sleep(seconds)
    elapsed = time.perf_counter() - t0
    done = sum(p.ok for p in pumps) - start_ok
    cpu_us = None
    if server_pid and done:
        cpu_us = (process_cpu_seconds(server_pid) - cpu0) * 1e6 / done
    bad = sum(p.bad for p in pumps)
    for p in pumps:
        assert p.transport is not None
        p.transport.abort()
    return done / elapsed, bad, cpu_us


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--mode", choices=["heartbeat", "consumer-heartbeat", "commit",
                                           "commit-moving"],
                        required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=1.5)
    parser.add_argument("--ramp", type=float, default=0.3)
    parser.add_argument("--server-pid", type=int, default=None,
                        help="also report the broker's CPU µs per counted response (Linux)")
    args = parser.parse_args()
    tag = uuid.uuid4().hex[:8]

    def setup(i: int) -> tuple[WireClient, bytes, bytes]:
        client = WireClient(args.bootstrap)
        group = f"{args.mode}-{tag}-{i}"
        if args.mode == "heartbeat":
            version, frame = heartbeat_frame(client, group, args.topic)
            api_key = HEARTBEAT
        elif args.mode == "consumer-heartbeat":
            version, frame = consumer_heartbeat_frame(client, group, args.topic)
            api_key = CONSUMER_GROUP_HEARTBEAT
        elif args.mode == "commit":
            version, frame = commit_frame(client, group, args.topic)
            api_key = OFFSET_COMMIT
        else:
            version, frame = commit_frame(client, group, args.topic, offset=MOVING_START)
            api_key = OFFSET_COMMIT
        response = request_when_ready(client, api_key, version, frame)
        return client, frame, len(response).to_bytes(4, "big") + response

    # Groups are set up in parallel: a broker may delay each first join (initial rebalance delay).
    with ThreadPoolExecutor(args.connections) as pool:
        ready = list(pool.map(setup, range(args.connections)))
    clients = [r[0] for r in ready]
    frames = [r[1] for r in ready]
    responses = [r[2] for r in ready]
    try:
        import uvloop

        run = uvloop.run
    except ImportError:
        run = asyncio.run
    moving = args.mode == "commit-moving"
    if moving and any(f.count(_I64.pack(MOVING_START)) != 1 for f in frames):
        raise KafkaError("commit-moving: the offset is not found once in the frame")
    rate, bad, cpu_us = run(drive(clients, frames, responses, args.depth, args.seconds,
                                  args.ramp, args.server_pid, moving))
    print(json.dumps({"rate": rate, "bad": bad, "cpu_us": cpu_us}), flush=True)


if __name__ == "__main__":
    main()
