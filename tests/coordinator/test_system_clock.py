"""SystemClock: re-arming keeps only the newest deadline, earlier or later than the old one."""

from __future__ import annotations

import asyncio

from kafkette.coordinator.clock import SystemClock


async def test_rescheduling_later_moves_the_deadline():
    clock, fired = SystemClock(), []
    loop = asyncio.get_running_loop()
    start = loop.time()
    clock.schedule("k", 30, lambda: fired.append("old"))
    await asyncio.sleep(0.01)
    clock.schedule("k", 80, lambda: fired.append(loop.time() - start))
    await asyncio.sleep(0.05)
    assert fired == []  # the first deadline (30 ms) passed without firing
    await asyncio.sleep(0.1)
    assert len(fired) == 1 and fired[0] >= 0.085
    assert clock.pending() == 0


async def test_rescheduling_earlier_and_cancel():
    clock, fired = SystemClock(), []
    clock.schedule("a", 500, lambda: fired.append("late"))
    clock.schedule("a", 10, lambda: fired.append("early"))
    clock.schedule("b", 10, lambda: fired.append("cancelled"))
    clock.cancel("b")
    await asyncio.sleep(0.06)
    assert fired == ["early"]
    await asyncio.sleep(0)
    assert clock.pending() == 0
