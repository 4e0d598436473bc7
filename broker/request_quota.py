"""The request quota (``request_percentage``) on every API, as Kafka's KafkaApis applies
ClientRequestQuotaManager through ``sendResponseMaybeThrottle``.

The connection runs a request through ``handle`` instead of its handler while some
request_percentage quota is set (``ClientQuotas.request.enabled``: the one test it makes on
every request); otherwise nothing here runs. For a client with a request quota, the time its
handler spends (the call, and each step of a coroutine it returns: not the time it waits) is
recorded against the quota when the answer is ready, as Kafka records the request thread's time
when it sends the response. Over the quota, the answer carries the throttle time in
``throttle_time_ms`` (the larger of it and a throttle time the handler set itself, such as a
controller mutation quota's) and the connection is muted for it after the answer (Kafka
throttles the channel): answers still leave in request order.

Not metered here: Produce and Fetch, whose handlers record their time with their byte rates
(broker/handlers/_quota.py; a Produce with acks=0 and a follower's Fetch are exempt there, as in
Kafka), and Kafka's cluster actions (``ApiKeys.clusterAction``: the inter-broker APIs, exempt
from client quotas). Requests answered before authentication (the
SASL handshake on a SASL listener) never reach a handler, so are not metered either, as in
Kafka, where they never reach KafkaApis.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Generator
from datetime import timedelta
from typing import Any

from kafkette.protocol.build import field_names

from .context import RequestContext
from .responses import ParkedResponse
from .services.client_quotas import user_of

# Kafka's ApiKeys with clusterAction: LeaderAndIsr, StopReplica, UpdateMetadata,
# ControlledShutdown, WriteTxnMarkers, Vote, BeginQuorumEpoch, EndQuorumEpoch, DescribeQuorum,
# AlterPartition, UpdateFeatures, Envelope, BrokerRegistration, BrokerHeartbeat,
# AllocateProducerIds and the share-group state APIs.
CLUSTER_ACTIONS = frozenset({4, 5, 6, 7, 27, 52, 53, 54, 55, 56, 57, 58, 62, 63, 67,
                             83, 84, 85, 86, 87})
# Produce and Fetch: metered by their handlers, with their byte rates.
METERED_BY_HANDLER = frozenset({0, 1})
NOT_METERED = CLUSTER_ACTIONS | METERED_BY_HANDLER


def with_throttle(result: Any, throttle_ms: int) -> Any:
    """A response object with ``throttle_time_ms`` set (NO_RESPONSE and the like as they are)."""
    if dataclasses.is_dataclass(result) and not isinstance(result, type) \
            and "throttle_time" in field_names(type(result)):
        return dataclasses.replace(result, throttle_time=timedelta(milliseconds=throttle_ms))
    return result


def metered(handler: Callable[[RequestContext, Any], Any]) -> Callable[[RequestContext, Any], Any]:
    """``handler`` under the request quota (see ``handle``)."""
    return lambda ctx, body: handle(handler, ctx, body)


def handle(handler: Callable[[RequestContext, Any], Any], ctx: RequestContext,
           body: Any) -> Any:
    """``handler(ctx, body)`` under the client's request quota."""
    if ctx.api_key in NOT_METERED:
        return handler(ctx, body)
    quotas = ctx.services.quotas
    if quotas.request.limit(user_of(ctx.principal), ctx.client_id or "") is None:
        return handler(ctx, body)  # no request_percentage applies to this client
    started = time.perf_counter_ns()
    result = handler(ctx, body)
    spent = time.perf_counter_ns() - started
    if isinstance(result, asyncio.Future):
        return _future_answer(ctx, result, spent)
    if hasattr(result, "__await__"):
        return _MeteredAnswer(ctx, result, spent)
    return settle(ctx, result, spent)


def settle(ctx: RequestContext, response: Any, spent_ns: int) -> Any:
    """Record ``spent_ns`` of handler time; the response with the throttle time it earns, the
    connection muted for it."""
    quotas = ctx.services.quotas
    throttle = quotas.record_request_time(ctx.principal, ctx.client_id, spent_ns,
                                          quotas.now_ms())
    own = getattr(response, "throttle_time", None)
    if own is not None:  # a throttle time the handler set (a controller mutation quota's)
        throttle = max(throttle, round(own.total_seconds() * 1000))
    if throttle <= 0:
        return response
    if ctx.mute is not None:
        ctx.mute(throttle)
    return with_throttle(response, throttle)


def _future_answer(ctx: RequestContext, fut: asyncio.Future, spent_ns: int) -> asyncio.Future:
    """A future of the same kind as ``fut`` that completes with its answer, throttled. A
    parked answer stays parked: it is completed inside whatever completes ``fut``."""
    if type(fut) is ParkedResponse:
        parked = ParkedResponse(loop=fut.get_loop())
        fut.add_listener(lambda done: _pass_on(ctx, done, parked, spent_ns))
        return parked
    answer = fut.get_loop().create_future()
    fut.add_done_callback(lambda done: _pass_on(ctx, done, answer, spent_ns))
    return answer


def _pass_on(ctx: RequestContext, done: asyncio.Future, answer: asyncio.Future,
             spent_ns: int) -> None:
    if answer.done():
        return
    if done.cancelled():
        answer.cancel()
    elif (exc := done.exception()) is not None:
        answer.set_exception(exc)
    else:
        answer.set_result(settle(ctx, done.result(), spent_ns))


class _MeteredAnswer:
    """Awaits a handler's coroutine, timing each of its steps (not the waits between them);
    its result is the coroutine's, throttled once it is done."""

    __slots__ = ("_ctx", "_coro", "_spent")

    def __init__(self, ctx: RequestContext, coro: Any, spent_ns: int) -> None:
        self._ctx = ctx
        self._coro = coro
        self._spent = spent_ns

    def __await__(self) -> Generator[Any, Any, Any]:
        steps = self._coro.__await__()
        send: Any = None
        error: BaseException | None = None
        while True:
            started = time.perf_counter_ns()
            try:
                waiting_on = steps.send(send) if error is None else steps.throw(error)
            except StopIteration as finished:
                self._spent += time.perf_counter_ns() - started
                return settle(self._ctx, finished.value, self._spent)
            except BaseException:
                self._spent += time.perf_counter_ns() - started
                raise
            self._spent += time.perf_counter_ns() - started
            try:
                send, error = (yield waiting_on), None
            except BaseException as exc:  # noqa: BLE001 - handed to the coroutine (cancellation)
                send, error = None, exc
