"""ConsumerGroupHeartbeat (KIP-848) requests/s under a pipelined load from a separate process.

Each run starts ``python -m bench.figures.loadgen --mode consumer-heartbeat`` (see that module):
32 connections, one consumer group each with one member, 8 heartbeats in flight per connection,
counted for 1.5 s after a 0.3 s ramp. Each member first joins with epoch 0 subscribing to a
one-partition topic, acknowledges its assignment, and then every request carries only its member
id and current epoch (every other field null: unchanged), as a client's regular heartbeat does;
every response must equal the first, error-free one. In the same run the same load generator
measures classic Heartbeats/s (``--mode heartbeat``, as the pipelined-load figure), for the
ratio row. Server CPU rows: the broker's CPU time over each counted window divided by the
responses counted (``--server-pid``, see the pipelined-load figure). Targets without ConsumerGroupHeartbeat are probed and n/a, as in the KIP-848 groups
figure.
"""

from __future__ import annotations

from bench.figures.base import Context, Figure, Row
from bench.figures.kip848 import require_consumer_protocol
from bench.figures.load import loadgen
from bench.figures.wire import (
    CONSUMER_GROUP_HEARTBEAT,
    FIND_COORDINATOR,
    HEARTBEAT,
    JOIN_GROUP,
    SYNC_GROUP,
    fresh_topic,
)
from bench.peers import Server


class ConsumerHeartbeatLoad(Figure):
    def check(self, server: Server) -> None:
        require_consumer_protocol(server)
        super().check(server)

    def prepare(self, server: Server) -> str:
        return fresh_topic(server.bootstrap, "cghb")

    def measure(self, ctx: Context) -> dict[str, float]:
        assert ctx.server is not None
        pid = ctx.server.pid
        consumer, consumer_cpu = loadgen(ctx.server.bootstrap, "consumer-heartbeat", ctx.state,
                                         server_pid=pid)
        classic, classic_cpu = loadgen(ctx.server.bootstrap, "heartbeat", ctx.state,
                                       server_pid=pid)
        return {"cg_heartbeat": consumer, "classic_heartbeat": classic,
                "cg_ratio": consumer / classic, "cg_cpu": consumer_cpu,
                "classic_cpu": classic_cpu}


FIGURES = [ConsumerHeartbeatLoad(
    name="cghb-load", title="Pipelined ConsumerGroupHeartbeat load (KIP-848), separate process",
    rows=(Row("cg_heartbeat", "ConsumerGroupHeartbeats/s (32 conns × 8 in flight)", "/s", 1,
              higher_is_better=True),
          Row("classic_heartbeat", "classic Heartbeats/s, same run (32 conns × 8 in flight)",
              "/s", 1, higher_is_better=True),
          Row("cg_ratio", "ConsumerGroupHeartbeat/classic Heartbeat (same run)", "×",
              higher_is_better=True),
          Row("cg_cpu", "server CPU per ConsumerGroupHeartbeat", "µs"),
          Row("classic_cpu", "server CPU per classic Heartbeat (same run)", "µs")),
    needs=(FIND_COORDINATOR, CONSUMER_GROUP_HEARTBEAT, JOIN_GROUP, SYNC_GROUP, HEARTBEAT),
)]
