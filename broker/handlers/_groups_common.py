"""Helpers shared by the group API handlers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from kafkette.coordinator.group.group_service import GroupCoordinator, unavailable_coordinator

if TYPE_CHECKING:
    from ..context import RequestContext

ZERO = timedelta(0)
_MS = timedelta(milliseconds=1)


def ms(value: timedelta | int) -> int:
    return value // _MS if isinstance(value, timedelta) else int(value)


def coordinator(ctx: RequestContext) -> GroupCoordinator:
    """The group coordinator service; the only place handlers reach it. Before the
    coordinator exists every call answers COORDINATOR_NOT_AVAILABLE."""
    coord = ctx.services.groups.coordinator
    return coord if coord is not None else unavailable_coordinator()


def respond_with(answer: Any, build: Callable[[Any], Any]) -> Any:
    """``build(answer)``, or a future of it when the coordinator answers later."""
    if not isinstance(answer, asyncio.Future):
        return build(answer)
    out = answer.get_loop().create_future()  # get_running_loop costs a getpid syscall

    def done(f: asyncio.Future) -> None:
        if f.cancelled():
            out.cancel()
        elif (error := f.exception()) is not None:
            out.set_exception(error)
        else:
            out.set_result(build(f.result()))
    answer.add_done_callback(done)
    return out
