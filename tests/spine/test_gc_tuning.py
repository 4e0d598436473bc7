"""broker/cli/gc_tuning.py: the CLI's broker collects its young generation rarely and freezes what it
holds once its group coordinator has loaded; a failed load freezes nothing."""

from __future__ import annotations

import asyncio
import gc

from kafkette.broker.cli import gc_tuning


class _Broker:
    def __init__(self, error: Exception | None = None) -> None:
        self.ready = asyncio.Event()
        self.error = error

    async def wait_ready(self) -> None:
        await self.ready.wait()
        if self.error is not None:
            raise self.error


def test_tune_raises_only_the_young_threshold() -> None:
    before = gc.get_threshold()
    try:
        gc_tuning.tune()
        assert gc.get_threshold() == (gc_tuning.YOUNG_THRESHOLD, *before[1:])
    finally:
        gc.set_threshold(*before)


def test_freeze_waits_for_the_coordinator_and_skips_a_failed_load() -> None:
    async def main() -> None:
        failed = _Broker(RuntimeError("load failed"))
        task = asyncio.ensure_future(gc_tuning.freeze_when_ready(failed))
        await asyncio.sleep(0)
        failed.ready.set()
        await task
        assert gc.get_freeze_count() == 0
        ok = _Broker()
        task = asyncio.ensure_future(gc_tuning.freeze_when_ready(ok))
        await asyncio.sleep(0)
        assert gc.get_freeze_count() == 0  # not before the coordinator has loaded
        ok.ready.set()
        await task
        assert gc.get_freeze_count() > 0

    assert gc.get_freeze_count() == 0
    try:
        asyncio.run(main())
    finally:
        gc.unfreeze()
