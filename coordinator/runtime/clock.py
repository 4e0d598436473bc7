"""Time for the coordinator: wall-clock ms plus keyed one-shot timers.

``schedule(key, ...)`` replaces a pending timer with the same key (Kafka's timer keys:
``join-<group>``, ``sync-<group>``, ``heartbeat-<group>-<member>``).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable, Hashable
from typing import Protocol


class _Timer:
    __slots__ = ("deadline", "callback", "handle", "handle_at", "tag")

    def __init__(self, deadline: float, callback: Callable[[], object], tag: object) -> None:
        self.deadline = deadline
        self.callback = callback
        self.handle: asyncio.TimerHandle
        self.handle_at = deadline
        self.tag = tag

    def arm(self, loop: asyncio.AbstractEventLoop, fire: Callable[[Hashable, _Timer], None],
            key: Hashable) -> None:
        self.handle_at = self.deadline
        self.handle = loop.call_at(self.deadline, fire, key, self)


class Clock(Protocol):
    def now_ms(self) -> int: ...

    def schedule(self, key: Hashable, delay_ms: int, callback: Callable[[], object],
                 tag: object = None) -> None: ...

    def extend(self, key: Hashable, delay_ms: int, tag: object) -> bool: ...

    def cancel(self, key: Hashable) -> None: ...


class SystemClock:
    """Wall-clock time; timers run on the event loop that is current when first used.

    Re-arming a timer to a later deadline (every heartbeat does) only records the new deadline;
    the loop timer already armed wakes up at the old one and re-arms itself for the rest.
    ``extend`` is that re-arm without a new callback (Kafka's session-timeout deadline update).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._loop = loop
        self._timers: dict[Hashable, _Timer] = {}

    def now_ms(self) -> int:
        return int(time.time() * 1000)

    def schedule(self, key: Hashable, delay_ms: int, callback: Callable[[], object],
                 tag: object = None) -> None:
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        deadline = loop.time() + max(delay_ms, 0) / 1000
        timer = self._timers.get(key)
        if timer is not None and timer.handle_at <= deadline:
            timer.deadline = deadline
            timer.callback = callback
            timer.tag = tag
            return
        if timer is not None:
            timer.handle.cancel()
        timer = _Timer(deadline, callback, tag)
        timer.arm(loop, self._fire, key)
        self._timers[key] = timer

    def extend(self, key: Hashable, delay_ms: int, tag: object) -> bool:
        """Move the pending timer ``key`` scheduled with ``tag`` to ``delay_ms`` from now,
        keeping its callback; False (nothing changed) if there is no such timer or the move
        needs an earlier loop wake-up: then ``schedule`` it."""
        timer = self._timers.get(key)
        if timer is None or timer.tag is not tag:
            return False
        deadline = self._loop.time() + (delay_ms / 1000 if delay_ms > 0 else 0)  # type: ignore[union-attr]  # a pending timer was made by schedule, which binds _loop
        if timer.handle_at > deadline:
            return False
        timer.deadline = deadline
        return True

    def _fire(self, key: Hashable, timer: _Timer) -> None:
        if self._timers.get(key) is not timer:
            return
        loop = self._loop
        assert loop is not None
        if loop.time() < timer.deadline:
            timer.arm(loop, self._fire, key)
            return
        del self._timers[key]
        timer.callback()

    def cancel(self, key: Hashable) -> None:
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.handle.cancel()

    def cancel_all(self) -> None:
        for timer in self._timers.values():
            timer.handle.cancel()
        self._timers.clear()

    def pending(self) -> int:
        return len(self._timers)


class ManualClock:
    """Test clock: time moves only by ``advance(ms)``, which fires due timers in time order.

    Use it on the broker's loop (``ThreadedBroker.run(clock.advance, ms)``).
    """

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms
        self._seq = itertools.count()
        self._heap: list[tuple[int, int, Hashable]] = []
        self._timers: dict[Hashable, tuple[int, int, Callable[[], object], object]] = {}

    def now_ms(self) -> int:
        return self._now

    def schedule(self, key: Hashable, delay_ms: int, callback: Callable[[], object],
                 tag: object = None) -> None:
        entry = (self._now + max(delay_ms, 0), next(self._seq), callback, tag)
        self._timers[key] = entry
        heapq.heappush(self._heap, (entry[0], entry[1], key))

    def extend(self, key: Hashable, delay_ms: int, tag: object) -> bool:
        entry = self._timers.get(key)
        if entry is None or entry[3] is not tag:
            return False
        self.schedule(key, delay_ms, entry[2], tag)
        return True

    def cancel(self, key: Hashable) -> None:
        self._timers.pop(key, None)

    def cancel_all(self) -> None:
        self._timers.clear()
        self._heap.clear()

    def pending(self) -> int:
        return len(self._timers)

    def deadline(self, key: Hashable) -> int | None:
        entry = self._timers.get(key)
        return None if entry is None else entry[0]

    def advance(self, ms: int = 0) -> None:
        target = self._now + ms
        while self._heap and self._heap[0][0] <= target:
            due, seq, key = heapq.heappop(self._heap)
            entry = self._timers.get(key)
            if entry is None or entry[1] != seq:
                continue  # cancelled or replaced
            del self._timers[key]
            self._now = max(self._now, due)
            entry[2]()
        self._now = target
