"""Replay of 1 000 000 offset records: restart → every committed offset served again.

Prepared once per target: a 1000-partition topic and 1000 simple groups that each commit an
offset for all 1000 partitions (1000 OffsetCommit requests of 1000 partitions = 1 000 000 offset
records, distinct keys, so compaction cannot shrink them). First a one-offset probe checks that
committed offsets survive a restart at all; a broker that loses them has nothing to replay (n/a).
Each run: stop the broker by PID (SIGTERM), start it again on the same port and data directory,
and time from spawn until OffsetFetch of the last partition answers the committed offset for
all 1000 groups (requests that get COORDINATOR_LOAD_IN_PROGRESS or no offset are retried).
Memory per committed offset: the broker's RSS once every offset is served again after the
restart (settled 0.5 s) minus the RSS of the same broker process freshly started and empty
(read 0.5 s after it first answered, before the preparation), divided by the 1 000 000 offsets.
The scaling set (``--only scaling``) runs the same figure at other sizes (groups × 1000
partitions).
"""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from bench.figures.base import Context, Figure, NotApplicable, Row
from bench.figures.loadgen import check_response, commit_frame, request_when_ready
from bench.figures.wire import (
    CREATE_TOPICS,
    FIND_COORDINATOR,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    KafkaError,
    WireClient,
)
from bench.peers import Server
from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import decode_response, request_type

GROUPS = 1000
PARTITIONS = 1000
OFFSET = 42
LOAD_IN_PROGRESS = 14
TIMEOUT = 180.0


def _group(i: int) -> str:
    return f"replay-{i:04d}"


def fetch_frames(client: WireClient, topic: str, partition: int,
                 groups: int = GROUPS) -> tuple[int, list[bytes]]:
    version = client.version(OFFSET_FETCH)
    req = request_type(OFFSET_FETCH, version)
    topic_cls = item_type(req, "topics")
    return version, [client.encode(OFFSET_FETCH, version, group_id=_group(i), require_stable=False,
                                   topics=(make(topic_cls, name=topic,
                                                partition_indexes=(partition,)),))
                     for i in range(groups)]


def served(version: int, frame: bytes, offset: int) -> bool:
    _, body = decode_response(OFFSET_FETCH, version, frame)
    if int(getattr(body, "error_code", 0)) not in (0,):
        return False
    parts = [p for t in body.topics for p in t.partitions]
    return bool(parts) and all(int(p.error_code) == 0 and p.committed_offset == offset
                               for p in parts)


def wait_served(server: Server, topic: str, partition: int, offset: int, groups: int,
                timeout: float = TIMEOUT) -> float:
    """Seconds from the server's spawn until all groups serve ``offset``."""
    deadline = time.perf_counter() + timeout
    with WireClient(server.bootstrap) as client:
        version, frames = fetch_frames(client, topic, partition, groups)
        todo = list(range(groups))
        while todo:
            responses = client.pipeline([frames[i] for i in todo], depth=64)
            todo = [i for i, resp in zip(todo, responses, strict=True)
                    if not served(version, resp, offset)]
            if todo:
                if time.perf_counter() > deadline:
                    raise TimeoutError(f"{len(todo)} groups still without their offsets")
                time.sleep(0.005)
    return time.perf_counter() - server.spawned_at


SETTLE = 0.5


class Replay(Figure):
    groups: int = GROUPS  # offsets = groups × PARTITIONS

    def prepare(self, server: Server) -> tuple[str, int]:
        time.sleep(SETTLE)
        idle_rss = server.rss_bytes()
        tag = uuid.uuid4().hex[:6]
        probe_topic = f"probe-{tag}"
        with WireClient(server.bootstrap) as client:
            client.create_topic(probe_topic, 1)
            version, frame = commit_frame(client, _group(0), probe_topic, 1, OFFSET)
            request_when_ready(client, OFFSET_COMMIT, version, frame)
        server.restart()
        try:
            wait_served(server, probe_topic, 0, OFFSET, 1, timeout=10)
        except TimeoutError:
            raise NotApplicable("committed offsets do not survive a restart "
                                "(no durable storage): nothing to replay") from None
        topic = f"replay-topic-{tag}"
        with WireClient(server.bootstrap) as client:
            client.create_topic(topic, PARTITIONS)
            version, template = commit_frame(client, _group(0), topic, PARTITIONS, OFFSET)
        name = _group(0).encode()
        assert template.count(name) == 1

        def populate(worker: int) -> None:
            frames = [template.replace(name, _group(i).encode())
                      for i in range(worker, self.groups, 8)]
            with WireClient(server.bootstrap, timeout=120) as client:
                responses = client.pipeline(frames, depth=16)
            if len(set(responses)) != 1:
                raise KafkaError("OffsetCommit responses differ")
            check_response(OFFSET_COMMIT, version, responses[0])

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(populate, range(8)))
        wait_served(server, topic, PARTITIONS - 1, OFFSET, self.groups)
        return topic, idle_rss

    def measure(self, ctx: Context) -> dict[str, float]:
        server = ctx.server
        assert server is not None
        topic, idle_rss = ctx.state
        server.stop()
        server.start(TIMEOUT)
        replay = wait_served(server, topic, PARTITIONS - 1, OFFSET, self.groups)
        time.sleep(SETTLE)
        per_offset = (server.rss_bytes() - idle_rss) / (self.groups * PARTITIONS)
        return {"replay": replay, "per_offset": per_offset}


def replay_figure(groups: int, name: str, title: str, label: str) -> Replay:
    figure = Replay(
        name=name, title=title,
        rows=(Row("replay", label, "s", 1),
              Row("per_offset", "memory per committed offset ((RSS after replay − empty "
                  f"broker's RSS) / {groups * PARTITIONS:,} offsets)", "B")),
        needs=(CREATE_TOPICS, FIND_COORDINATOR, OFFSET_COMMIT, OFFSET_FETCH),
    )
    figure.groups = groups
    return figure


FIGURES = [replay_figure(
    GROUPS, "replay", "Replay of 1 000 000 offset records on restart",
    "restart → 1M committed offsets served (1000 groups × 1000 partitions)")]
