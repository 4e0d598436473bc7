"""Heartbeats/s and durable commits/s under a pipelined load from a separate process.

Each run starts ``python -m bench.figures.loadgen`` three times (see that module): 32 connections, one
group each, 8 identical requests in flight per connection, counted for 1.5 s after a 0.3 s ramp.
Heartbeat: each group has one joined member.
Server CPU rows: the broker process's user + system CPU time (/proc/PID/stat) over the same
counted window, divided by the responses counted in it (the load generator saturates a core
first, so throughput alone hides the broker's own cost); PID is the broker's for every target. Commit: OffsetCommit of one partition to a simple
group; kafkette answers only once the offset record is appended to ``__consumer_offsets`` under
its flush policy. Moving commits: the same, but each OffsetCommit carries the next offset, as a
consuming member's do (the load generator's ``commit-moving`` mode). Before the runs, a probe commits one offset, kills the broker with SIGKILL as
soon as the commit is acknowledged and restarts it: a target that lost the commit gets a note
saying its commits are not durable.
"""

from __future__ import annotations

import json
import subprocess
import sys

from bench.figures.base import Context, Figure, Row
from bench.figures.loadgen import commit_frame, request_when_ready
from bench.figures.wire import (
    FIND_COORDINATOR,
    HEARTBEAT,
    JOIN_GROUP,
    OFFSET_COMMIT,
    SYNC_GROUP,
    WireClient,
    fresh_topic,
)
from bench.peers import ROOT, Server


def loadgen(bootstrap: str, mode: str, topic: str, timeout: float = 60,
            seconds: float | None = None, server_pid: int | None = None) -> tuple[float, float]:
    """(responses/s, the broker's CPU µs per response; 0.0 without ``server_pid``)."""
    extra = ["--seconds", str(seconds)] if seconds is not None else []
    if server_pid is not None:
        extra += ["--server-pid", str(server_pid)]
    done = subprocess.run([sys.executable, "-m", "bench.figures.loadgen", "--bootstrap",
                           bootstrap, "--mode", mode, "--topic", topic, *extra],
                          capture_output=True, text=True, cwd=ROOT, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"loadgen {mode}: {done.stderr.strip().splitlines()[-1:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    if out["bad"]:
        raise RuntimeError(f"loadgen {mode}: {out['bad']} responses with an error")
    return out["rate"], out["cpu_us"] or 0.0


def survives_kill(server: Server, topic: str) -> bool:
    """Commit one offset, SIGKILL the broker as soon as it is acknowledged, restart: still there?"""
    from bench.figures.replay import wait_served

    with WireClient(server.bootstrap) as client:
        version, frame = commit_frame(client, "replay-0000", topic, 1, 42)
        # A broker that has just started may still be loading its coordinator: retried as a
        # client does.
        request_when_ready(client, OFFSET_COMMIT, version, frame)
    server.kill()
    server.start()
    try:
        wait_served(server, topic, 0, 42, 1, timeout=10)
        return True
    except TimeoutError:
        return False


_DURABLE: dict[str, bool] = {}


def durability_note(server: Server) -> str | None:
    """None if an acknowledged commit survives kill -9 (probed once per target per bench run)."""
    name = server.target.name
    if name not in _DURABLE:
        _DURABLE[name] = survives_kill(server, fresh_topic(server.bootstrap, "probe"))
    if _DURABLE[name]:
        return None
    return (f"{name}: not durable — an acknowledged commit was lost when the broker was killed "
            "(kill -9) right after it, checked in this run")


class Load(Figure):
    def prepare(self, server: Server) -> str:
        note = durability_note(server)
        if note:
            self.notes[f"{server.target.name}:commit"] = note
        return fresh_topic(server.bootstrap, "load")

    def measure(self, ctx: Context) -> dict[str, float]:
        assert ctx.server is not None
        server = ctx.server
        heartbeat, heartbeat_cpu = loadgen(server.bootstrap, "heartbeat", ctx.state,
                                           server_pid=server.pid)
        commit, commit_cpu = loadgen(server.bootstrap, "commit", ctx.state, server_pid=server.pid)
        moving, moving_cpu = loadgen(server.bootstrap, "commit-moving", ctx.state,
                                     server_pid=server.pid)
        return {"heartbeat": heartbeat, "commit": commit, "heartbeat_cpu": heartbeat_cpu,
                "commit_cpu": commit_cpu, "moving": moving, "moving_cpu": moving_cpu}


FIGURES = [Load(
    name="load", title="Pipelined coordinator load from a separate process",
    rows=(Row("heartbeat", "heartbeats/s (32 conns × 8 in flight)", "/s", 1,
              higher_is_better=True),
          Row("commit", "durable commits/s (32 conns × 8 in flight)", "/s", 1,
              higher_is_better=True),
          Row("heartbeat_cpu", "server CPU per heartbeat (same load)", "µs"),
          Row("commit_cpu", "server CPU per durable commit (same load)", "µs"),
          Row("moving", "durable commits/s, each with the next offset (same load)", "/s", 1,
              higher_is_better=True),
          Row("moving_cpu", "server CPU per durable commit, each with the next offset", "µs")),
    needs=(FIND_COORDINATOR, JOIN_GROUP, SYNC_GROUP, HEARTBEAT, OFFSET_COMMIT),
)]
