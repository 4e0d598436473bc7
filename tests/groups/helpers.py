"""Shared bits for the real-client group tests."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

FAST_GROUP = {"session_timeout_ms": 1500, "heartbeat_interval_ms": 100}


async def wait_until(pred: Callable[[], bool], timeout: float = 20, step: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(step)


def wait_until_sync(pred: Callable[[], bool], timeout: float = 20, step: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(step)


def parts(assignment: Any) -> set[int]:
    return {tp.partition for tp in assignment}


def covers_exactly(assignments: list[set[int]], n: int) -> bool:
    total = [p for a in assignments for p in a]
    return len(total) == n and set(total) == set(range(n))


CHILD_CONSUMER = r"""
import asyncio, sys
from aiokafka import AIOKafkaConsumer

async def main():
    c = AIOKafkaConsumer(sys.argv[2], bootstrap_servers=sys.argv[1], group_id=sys.argv[3],
                         session_timeout_ms=1500, heartbeat_interval_ms=100,
                         enable_auto_commit=False)
    await c.start()
    while True:
        await asyncio.sleep(0.05)
        a = sorted(tp.partition for tp in c.assignment())
        print("ASSIGNED", a, flush=True)

asyncio.run(main())
"""


def spawn_consumer(bootstrap: str, topic: str, group: str) -> subprocess.Popen:
    """An aiokafka consumer in a child process (so a test can SIGKILL it: no LeaveGroup)."""
    return subprocess.Popen([sys.executable, "-c", CHILD_CONSUMER, bootstrap, topic, group],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
