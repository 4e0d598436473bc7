"""Log lines about a recurring event (a full disk, no file descriptors left) at most once per
interval: a failing disk fails every write, and a line per write buries the log (1,142 lines in
2 s were seen). The lines held back are counted into the next one that is written."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Hashable

DEFAULT_INTERVAL_S = 10.0


class RateLimitedLog:
    def __init__(self, logger: logging.Logger, interval_s: float = DEFAULT_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._logger = logger
        self._interval = interval_s
        self._clock = clock
        self._events: dict[Hashable, tuple[float, int]] = {}  # key -> (last written, held back)

    def log(self, level: int, key: Hashable, msg: str, *args: object) -> bool:
        """Write the line unless a line of ``key`` was written less than an interval ago;
        True when written."""
        now = self._clock()
        last = self._events.get(key)
        if last is not None and now - last[0] < self._interval:
            self._events[key] = (last[0], last[1] + 1)
            return False
        if last is not None and last[1]:
            msg += " (%d more like it in the last %.0f s)"
            args = (*args, last[1], now - last[0])
        self._events[key] = (now, 0)
        self._logger.log(level, msg, *args)
        return True

    def error(self, key: Hashable, msg: str, *args: object) -> bool:
        return self.log(logging.ERROR, key, msg, *args)

    def warning(self, key: Hashable, msg: str, *args: object) -> bool:
        return self.log(logging.WARNING, key, msg, *args)

    def info(self, key: Hashable, msg: str, *args: object) -> bool:
        return self.log(logging.INFO, key, msg, *args)
