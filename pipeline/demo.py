"""A demo workload for the lag job: a fresh kafkette, a producer and two consumer groups.

    python -m kafkette.pipeline.demo /tmp/kafkette-demo          # ~30 s, leaves the broker's log.dirs
    kafkette pipeline lag --log-dirs /tmp/kafkette-demo --out /tmp/kafkette-lag

Starts ``python -m broker serve`` on a free port with ``log.dirs`` = the given directory, then:
topic ``orders`` (3 partitions) gets ~300 records/s; group ``billing`` (2 consumers, commits every
0.5 s) keeps up until one consumer stalls at 8 s (lag grows on its partitions), a third consumer
joins at 14 s (rebalance), the stalled one leaves at 18 s (rebalance); group ``audit`` reads at a
fixed slow pace and falls behind (``--seconds N`` runs the same timeline in N s). Needs
aiokafka (the ``test`` extra).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import subprocess
import sys
import time

TOPIC = "orders"


def start_broker(log_dir: str) -> tuple[subprocess.Popen, str]:
    args = [sys.executable, "-m", "kafkette.broker", "serve", "--log-level", "WARNING"]
    for kv in (f"log.dirs={log_dir}", "listeners=PLAINTEXT://127.0.0.1:0", "num.partitions=3",
               "group.initial.rebalance.delay.ms=0", "group.min.session.timeout.ms=500"):
        args += ["--override", kv]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    match = re.search(r"listening on ([\w.:-]+:\d+)", line)
    if not match:
        proc.kill()
        raise RuntimeError(f"kafkette did not start: {line!r}")
    return proc, match.group(1)


async def produce(bootstrap: str, seconds: float, rate: int,
                  spike: tuple[float, float] = (10, 13)) -> None:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=20)
    await producer.start()
    try:
        start = time.monotonic()
        i = 0
        while (elapsed := time.monotonic() - start) < seconds:
            burst = 3 if spike[0] < elapsed < spike[1] else 1  # a traffic spike
            for _ in range(rate * burst // 10):
                await producer.send(TOPIC, b"order-%d" % i, key=b"customer-%d" % (i % 97))
                i += 1
            await asyncio.sleep(0.1)
        await producer.flush()
    finally:
        await producer.stop()


async def consume(bootstrap: str, group: str, client_id: str, stop_at: float,
                  stall: tuple[float, float] | None = None, per_poll: int = 10_000,
                  delay: float = 0.0) -> None:
    from aiokafka import AIOKafkaConsumer

    await asyncio.sleep(delay)
    consumer = AIOKafkaConsumer(
        TOPIC, bootstrap_servers=bootstrap, group_id=group, client_id=client_id,
        enable_auto_commit=False, auto_offset_reset="earliest", session_timeout_ms=3000,
        heartbeat_interval_ms=300, max_poll_records=per_poll)
    await consumer.start()
    started = time.monotonic() - delay
    last_commit = 0.0
    try:
        while (now := time.monotonic() - started) < stop_at:
            if stall and stall[0] <= now < stall[1]:
                await asyncio.sleep(0.1)  # still heartbeating, not consuming: lag grows
                continue
            await consumer.getmany(timeout_ms=100, max_records=per_poll)
            if now - last_commit >= 0.5 and consumer.assignment():
                # A commit during a rebalance fails; the next round commits again.
                with contextlib.suppress(Exception):
                    await consumer.commit()
                last_commit = now
    finally:
        await consumer.stop()


async def workload(bootstrap: str, seconds: float = 24) -> None:
    """The timeline above is for 24 s; a shorter or longer run keeps its proportions."""
    at = seconds / 24
    await asyncio.gather(
        produce(bootstrap, seconds, rate=300, spike=(10 * at, 13 * at)),
        consume(bootstrap, "billing", "billing-1", seconds + 1),
        consume(bootstrap, "billing", "billing-2", 18 * at, stall=(8 * at, 18 * at)),
        consume(bootstrap, "billing", "billing-3", seconds + 1, delay=14 * at),
        consume(bootstrap, "audit", "audit-1", seconds + 1, per_poll=25),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log_dir", help="the broker's log.dirs (created; must be empty)")
    parser.add_argument("--seconds", type=float, default=24,
                        help="length of the workload; its timeline keeps its proportions")
    args = parser.parse_args(argv)
    os.makedirs(args.log_dir, exist_ok=True)
    if os.listdir(args.log_dir):
        print(f"{args.log_dir} is not empty", file=sys.stderr)
        return 2
    proc, bootstrap = start_broker(args.log_dir)
    try:
        print(f"kafkette on {bootstrap}, log.dirs={args.log_dir}; running the workload "
              f"for {args.seconds:.0f}s")
        asyncio.run(workload(bootstrap, args.seconds))
    finally:
        proc.terminate()
        proc.wait(20)
    print(f"done; now: kafkette pipeline lag --log-dirs {args.log_dir} --out OUT")
    return 0


if __name__ == "__main__":
    sys.exit(main())
