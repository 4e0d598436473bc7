"""Durable commits/s when every offset record is flushed: ``log.flush.interval.messages=1``.

Each run starts the pipelined commit load of the load figure (``python -m bench.figures.loadgen
--mode commit``: 32 connections, one simple group each, 8 OffsetCommits of one partition in
flight per connection, counted for 1.5 s after a 0.3 s ramp) against a broker started with
``--override log.flush.interval.messages=1``: a commit is answered only once its offset record
is appended and fsynced, so only group commit (one fsync for many commits) beats the disk's
fsync rate. Server CPU: the broker's CPU time over the counted window per commit. Baseline, same
run: the disk's fsync rate, a loop of 100-byte appends each followed by ``os.fdatasync`` for 1 s,
on a file in a fresh directory next to the brokers' data directories (same file system). The
peers have no such flush setting (n/a).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time

from bench.figures.base import Context, Figure, NotApplicable, Row
from bench.figures.load import loadgen
from bench.figures.wire import FIND_COORDINATOR, OFFSET_COMMIT, fresh_topic
from bench.peers import Server, Target, is_kafkette, with_overrides

FSYNC_SECONDS = 1.0


def fsync_rate(seconds: float = FSYNC_SECONDS) -> float:
    """fdatasync()s per second of a small append, on the brokers' data file system."""
    folder = tempfile.mkdtemp(prefix="kbench-")
    try:
        fd = os.open(os.path.join(folder, "fsync.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            record = b"x" * 100
            n = 0
            t0 = time.perf_counter()
            while (elapsed := time.perf_counter() - t0) < seconds:
                os.write(fd, record)
                os.fdatasync(fd)
                n += 1
            return n / elapsed
        finally:
            os.close(fd)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class FlushedCommits(Figure):
    def target_for(self, target: Target) -> Target:
        if not is_kafkette(target):
            raise NotApplicable("no log.flush.interval.messages setting (kafkette/Kafka config)")
        return with_overrides(target, "log.flush.interval.messages=1")

    def prepare(self, server: Server) -> str:
        return fresh_topic(server.bootstrap, "flush1")

    def measure(self, ctx: Context) -> dict[str, float]:
        assert ctx.server is not None
        rate, cpu = loadgen(ctx.server.bootstrap, "commit", ctx.state, server_pid=ctx.server.pid)
        return {"commit": rate, "commit_cpu": cpu}

    def baseline(self) -> dict[str, float]:
        return {"commit": fsync_rate()}


FIGURES = [FlushedCommits(
    name="flush1", title="Durable commits/s with log.flush.interval.messages=1 (fsync per append)",
    rows=(Row("commit", "durable commits/s, flush.interval.messages=1 (32 conns × 8 in flight)",
              "/s", 1, higher_is_better=True),
          Row("commit_cpu", "server CPU per durable commit, flush.interval.messages=1", "µs")),
    needs=(FIND_COORDINATOR, OFFSET_COMMIT),
    baseline_label="fdatasync of a 100 B append, /s",
)]
