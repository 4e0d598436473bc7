"""The coordinator the broker serves before its own exists: every call answers
COORDINATOR_NOT_AVAILABLE."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..runtime.coordinator_log import CoordinatorLog
from ..runtime.error_codes import COORDINATOR_NOT_AVAILABLE, CoordinatorError
from .group_config import CoordinatorConfig
from .group_service import GroupCoordinator


def unavailable_coordinator() -> GroupCoordinator:
    """A coordinator that never started: every call answers COORDINATOR_NOT_AVAILABLE (what the
    broker serves before its coordinator exists)."""
    global _UNAVAILABLE
    if _UNAVAILABLE is None:
        _UNAVAILABLE = GroupCoordinator(-1, 1, _NoClock(), CoordinatorConfig(), _no_log)
    return _UNAVAILABLE


_UNAVAILABLE: GroupCoordinator | None = None


class _NoClock:
    def now_ms(self) -> int:
        return int(time.time() * 1000)

    def schedule(self, key: Any, delay_ms: int, callback: Callable[[], object],
                 tag: object = None) -> None:
        pass

    def extend(self, key: Any, delay_ms: int, tag: object) -> bool:
        return False

    def cancel(self, key: Any) -> None:
        pass


def _no_log(partition: int) -> CoordinatorLog:
    raise CoordinatorError(COORDINATOR_NOT_AVAILABLE)
