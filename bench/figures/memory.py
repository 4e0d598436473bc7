"""Idle RSS, and RSS with 1 000 consumer groups.

Each run starts a fresh broker process, waits until it answers, lets it settle 0.5 s and reads
its resident set size (VmRSS of the broker's PID). Then 1000 groups are created from 1000 client
threads at once (a broker may hold a new group's first join: tansu holds it for half the session
timeout): each group gets one member (JoinGroup with the KIP-394 member-id round trip, SyncGroup
as leader with a one-partition assignment; session timeout 10 s, aiokafka's default) and one committed offset. The client connections are closed
(members stay until their session times out), the broker settles 0.5 s, and RSS is read again.
"""

from __future__ import annotations

import shutil
import time
from concurrent.futures import ThreadPoolExecutor

from bench.figures.base import Context, Figure, Row
from bench.figures.loadgen import check_response, commit_frame, join
from bench.figures.wire import (
    FIND_COORDINATOR,
    JOIN_GROUP,
    OFFSET_COMMIT,
    SYNC_GROUP,
    WireClient,
    fresh_topic,
)

GROUPS = 1000
THREADS = 1000  # every group joins at once: a broker may hold each first join
SETTLE = 0.5
SESSION_MS = 10000


def create_groups(bootstrap: str, prefix: str, count: int = GROUPS,
                  session_ms: int = SESSION_MS) -> list[str]:
    """``count`` groups named ``{prefix}-0000``..., each with one member (left to time out) and
    one committed offset of a fresh one-partition topic, joined from ``count`` threads at once."""
    topic = fresh_topic(bootstrap, prefix)

    def one(i: int) -> str:
        group = f"{prefix}-{i:04d}"
        with WireClient(bootstrap) as client:
            generation, member = join(client, group, topic, session_ms=session_ms,
                                      rebalance_ms=session_ms)
            version, frame = commit_frame(client, group, topic, 1, i, generation, member)
            check_response(OFFSET_COMMIT, version, client.pipeline([frame])[0])
        return group

    with ThreadPoolExecutor(min(THREADS, count)) as pool:
        return list(pool.map(one, range(count)))


class Memory(Figure):
    def measure(self, ctx: Context) -> dict[str, float]:
        server = ctx.target.spawn()
        try:
            self.check(server)
            time.sleep(SETTLE)
            idle = server.rss_bytes()
            create_groups(server.bootstrap, "mem")
            time.sleep(SETTLE)
            return {"idle": idle, "groups": server.rss_bytes()}
        finally:
            server.stop()
            shutil.rmtree(server.data_dir, ignore_errors=True)


FIGURES = [Memory(
    name="memory", title="Resident memory (RSS)",
    rows=(Row("idle", "idle RSS", "MiB", 1 / 2**20),
          Row("groups", "RSS with 1000 groups (1 member + 1 offset each)", "MiB", 1 / 2**20)),
    needs=(FIND_COORDINATOR, JOIN_GROUP, SYNC_GROUP, OFFSET_COMMIT),
    fresh=True,
)]
