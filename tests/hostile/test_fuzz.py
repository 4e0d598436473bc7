"""The wire fuzzer in CI: a few thousand mutated requests with a fixed seed.

A longer run by hand: ``KAFKETTE_FUZZ_CASES=100000 pytest tests/hostile/test_fuzz.py`` or
``python -m tests.hostile.fuzz --cases 100000``.
"""

from __future__ import annotations

import os

from tests.hostile.admin_fuzz import run_admin_fuzz
from tests.hostile.fuzz import run_fuzz


def test_fuzzed_requests_never_kill_freeze_or_bloat_the_broker():
    cases = int(os.environ.get("KAFKETTE_FUZZ_CASES", "3000"))
    result = run_fuzz(cases, seed=int(os.environ.get("KAFKETTE_FUZZ_SEED", "1")))
    assert result.broker_alive, f"broker died (exit {result.returncode}): {result}"
    assert result.healthy_errors == [], result
    assert result.healthy_max_wait < 2, result
    assert result.closed + result.answered > cases * 0.9, result  # the cases reached the broker
    assert result.tracebacks == 0, result  # a failed handler or encoder: see --broker-log
    assert result.broker_rss_mib < 1024, result


def test_fuzzed_admin_requests_get_json_4xx_never_500(kafka_broker_factory):
    broker = kafka_broker_factory(**{"admin.listener": "127.0.0.1:0"})
    url = broker.broker.admin.url
    statuses = run_admin_fuzz(url, int(os.environ.get("KAFKETTE_ADMIN_FUZZ_CASES", "300")))
    assert all(400 <= s < 500 or 200 <= s < 300 for s in statuses), statuses
    assert statuses[0] == 0, statuses
    broker.clear_faults()
