"""Produce and fetch MB/s with 1 MB batches, next to a raw loopback socket copy.

Each run: ``python -m bench.figures.pfgen`` (a separate process; it drives the storage bench's
loops from ``bench.produce_fetch``) produces 128 batches of 1 MB (one record each, acks=1,
5 in flight) round-robin to a fresh 4-partition topic, checks the end offsets, then fetches
everything back from offset 0. Baseline, same run: the same loops' raw loopback copy of 128 MB
to (produce row) and from (fetch row) a separate Python process. MB = 2^20 bytes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

from bench.figures.base import Context, Figure, Row
from bench.figures.wire import FETCH, PRODUCE, WireClient
from bench.peers import ROOT

MB = 128
PARTITIONS = 4


def pfgen(*args: str, timeout: float = 120) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-m", "bench.figures.pfgen", "--mb", str(MB), *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"pfgen: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


class Throughput(Figure):
    def measure(self, ctx: Context) -> dict[str, float]:
        assert ctx.server is not None
        topic = f"tput-{uuid.uuid4().hex[:8]}"
        with WireClient(ctx.server.bootstrap) as client:
            client.create_topic(topic, PARTITIONS)
        out = pfgen("--bootstrap", ctx.server.bootstrap, "--topic", topic,
                    "--partitions", str(PARTITIONS))
        return {"produce": out["produce"], "fetch": out["fetch"]}

    def baseline(self) -> dict[str, float]:
        raw = pfgen("--raw")
        return {"produce": raw["raw_send"], "fetch": raw["raw_recv"]}


FIGURES = [Throughput(
    name="throughput", title="Produce and fetch throughput, 1 MB batches",
    rows=(Row("produce", "produce MB/s (1 MB batches, acks=1, 5 in flight)", "MB/s", 1,
              higher_is_better=True),
          Row("fetch", "fetch MB/s (1 MB batches, 1 fetch in flight)", "MB/s", 1, higher_is_better=True)),
    needs=(PRODUCE, FETCH),
    baseline_label="raw loopback socket copy",
)]
