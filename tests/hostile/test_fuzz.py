"""The wire fuzzer in CI: a few thousand mutated requests with a fixed seed.

A longer run by hand: ``KAFKETTE_FUZZ_CASES=100000 pytest tests/hostile/test_fuzz.py`` or
``python -m tests.hostile.fuzz --cases 100000``.
"""

from __future__ import annotations

import os

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
