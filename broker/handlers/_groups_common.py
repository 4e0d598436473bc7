"""Helpers shared by the group API handlers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from kafkette.coordinator.group.group_service import GroupCoordinator
from kafkette.coordinator.group.unavailable import unavailable_coordinator
from kafkette.coordinator.runtime.futures import ParkedFuture

from ..responses import ParkedResponse

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
    """``build(answer)``, or a future of it when the coordinator answers later. A parked
    answer's response (ParkedResponse) is completed in the same call as the answer, so the
    connection writes it at the coordinator's transition."""
    if not isinstance(answer, asyncio.Future):
        return build(answer)
    if type(answer) is ParkedFuture:
        parked = ParkedResponse(loop=answer.get_loop())
        answer.add_listener(partial(_complete_parked, parked, build))
        return parked
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


def _complete_parked(parked: ParkedResponse, build: Callable[[Any], Any],
                     answer: asyncio.Future) -> None:
    if parked.done():
        return
    if answer.cancelled():
        parked.cancel()
    elif (failure := answer.exception()) is not None:
        parked.set_exception(failure)
    else:
        try:
            response = build(answer.result())
        except Exception as exc:  # noqa: BLE001 - the connection logs it and closes
            parked.set_exception(exc)
            return
        parked.set_result(response)
