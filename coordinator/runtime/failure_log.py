"""A partition's failed writes, logged once per interval, and the backoff of failed loads.

Failed writes are logged once per interval: a full disk fails every append, and
a line per append buries the log. The lines held back are counted into the next one."""

from __future__ import annotations

import logging
import time

INTERVAL_S = 10.0
# A load that failed (the log unreadable for a while) is retried: 200 ms, doubling, 30 s at most.
RETRY_MS = 200
RETRY_MAX_MS = 30_000


def retry_delay_ms(failures: int) -> int:
    """The wait before the next attempt after ``failures`` failed ones in a row."""
    return min(RETRY_MS << min(failures, 16), RETRY_MAX_MS)


class FailureLog:
    def __init__(self, logger: logging.Logger, interval_s: float = INTERVAL_S) -> None:
        self._logger = logger
        self._interval = interval_s
        self._logged_at = -interval_s
        self._unlogged = 0

    def warning(self, msg: str, *args: object) -> None:
        now = time.monotonic()
        if now - self._logged_at < self._interval:
            self._unlogged += 1
            return
        if self._unlogged:
            msg += " (%d more like it in the last %.0f s)"
            args = (*args, self._unlogged, now - self._logged_at)
        self._logged_at, self._unlogged = now, 0
        self._logger.warning(msg, *args)
