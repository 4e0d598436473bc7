"""Helpers shared by the group API handlers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import timedelta
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any, Protocol

from kio.schema.errors import ErrorCode

from kafkette.coordinator.group.group_service import GroupCoordinator
from kafkette.coordinator.group.unavailable import unavailable_coordinator
from kafkette.coordinator.runtime.futures import ParkedFuture

from ..responses import ParkedResponse
from ..security.acl import AclOperation, ResourceType

if TYPE_CHECKING:
    from ..context import RequestContext

ZERO = timedelta(0)
_MS = timedelta(milliseconds=1)


@lru_cache(maxsize=64)
def interval(interval_ms: int) -> timedelta:
    """A heartbeat interval as the response field's timedelta (few distinct values: cached)."""
    return timedelta(milliseconds=interval_ms)


class SubscribingRequest(Protocol):
    @property
    def group_id(self) -> str: ...
    @property
    def subscribed_topic_names(self) -> Sequence[str] | None: ...


def refused_heartbeat(ctx: RequestContext, request: SubscribingRequest) -> int:
    """A ConsumerGroupHeartbeat's / ShareGroupHeartbeat's ACL checks, as Kafka's: READ on the
    group (GROUP_AUTHORIZATION_FAILED), then DESCRIBE on every subscribed topic name
    (TOPIC_AUTHORIZATION_FAILED); 0 when allowed."""
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return int(ErrorCode.group_authorization_failed)
    names = request.subscribed_topic_names
    if names and ctx.denied(AclOperation.DESCRIBE, ResourceType.TOPIC, names):
        return int(ErrorCode.topic_authorization_failed)
    return 0


def modern_heartbeat_response(types: tuple[type, type, type], answer: Any) -> Any:
    """A ConsumerGroupHeartbeat / ShareGroupHeartbeat response from the coordinator's
    (error, message, result): ``types`` are the response, its assignment and topic-partitions
    classes of the request's version. Built directly (not with ``make``): every field is set."""
    code, message, result = answer
    response_cls, assignment_cls, tp_cls = types
    if result is None:
        return response_cls(throttle_time=ZERO, error_code=ErrorCode(code),
                            error_message=message, member_id=None, member_epoch=0,
                            heartbeat_interval=ZERO, assignment=None)
    assignment = None
    if result.assignment is not None:
        assignment = assignment_cls(topic_partitions=tuple(
            tp_cls(topic_id=tid, partitions=tuple(sorted(ps)))
            for tid, ps in sorted(result.assignment.items())))
    return response_cls(throttle_time=ZERO, error_code=ErrorCode.none, error_message=None,
                        member_id=result.member_id, member_epoch=result.member_epoch,
                        heartbeat_interval=interval(result.heartbeat_interval_ms),
                        assignment=assignment)


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
