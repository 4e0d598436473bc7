"""SystemClock: re-arming keeps only the newest deadline, earlier or later than the old one."""

from __future__ import annotations

import asyncio

from kafkette.coordinator.runtime.clock import SystemClock


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


async def test_extend_moves_only_a_timer_of_the_same_tag():
    clock, fired = SystemClock(), []
    loop = asyncio.get_running_loop()
    start = loop.time()
    mine, other = object(), object()
    clock.schedule("k", 30, lambda: fired.append(loop.time() - start), mine)
    assert not clock.extend("missing", 80, mine)
    assert not clock.extend("k", 80, other)  # set by another context/epoch: left alone
    await asyncio.sleep(0.01)
    assert clock.extend("k", 80, mine)
    await asyncio.sleep(0.05)
    assert fired == []  # the first deadline passed without firing
    await asyncio.sleep(0.1)
    assert len(fired) == 1 and fired[0] >= 0.085
    assert not clock.extend("k", 80, mine)  # fired: nothing left to extend


async def test_extend_to_an_earlier_deadline_is_refused():
    """The armed loop timer cannot wake up earlier: the caller must schedule instead."""
    clock, fired = SystemClock(), []
    tag = object()
    clock.schedule("k", 500, lambda: fired.append("late"), tag)
    assert not clock.extend("k", 10, tag)
    clock.schedule("k", 10, lambda: fired.append("early"), tag)
    await asyncio.sleep(0.06)
    assert fired == ["early"]
