"""RateLimitedLog: one line per key per interval; the held-back lines are counted in the next."""

from __future__ import annotations

import logging

from kafkette.storage.rate_limited_log import RateLimitedLog


def test_one_line_per_key_per_interval(caplog):
    now = [0.0]
    logger = logging.getLogger("kafkette.test-rate")
    limited = RateLimitedLog(logger, interval_s=10, clock=lambda: now[0])
    caplog.set_level(logging.INFO, logger="kafkette.test-rate")
    for i in range(100):
        limited.error("write", "write %d failed", i)
        limited.warning("other", "other %d", i)
        now[0] += 0.05  # 100 failures in 5 s
    now[0] = 10.1
    assert limited.error("write", "write %d failed", 100)
    assert not limited.error("write", "write %d failed", 101)
    assert [r.getMessage() for r in caplog.records] == [
        "write 0 failed", "other 0", "write 100 failed (99 more like it in the last 10 s)"]
