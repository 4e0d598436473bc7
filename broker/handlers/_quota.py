"""Produce and Fetch under client quotas (broker/services/client_quotas.py), as KafkaApis applies
them: the request's bytes (Produce) or the response's bytes (Fetch) are recorded against the
client's byte-rate quota and its handling time against its request_percentage quota; the larger
throttle time goes into the response's ``throttle_time_ms`` and the connection is muted for it.
A throttled Fetch is answered with no data (its bytes are taken back off the rate), and a Fetch
is never given more than its quota allows in the sample windows (Kafka's
getMaxValueInQuotaWindow). These run only while some quota is set (``ClientQuotas.active``).

CreateTopics, CreatePartitions and DeleteTopics take a controller mutation quota
(``mutation_quota``) that their topics are charged to, and answer its throttle time
(``mutation_throttle``). Every other API is under the request quota through the connection
(broker/request_quota.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from ..context import RequestContext
from ..request_quota import with_throttle
from ..responses import SplicedResponse
from ..services.client_quotas import ClientQuotas, user_of
from ..services.mutation_quota import MutationQuota


def _mute(ctx: RequestContext, throttle_ms: int) -> None:
    if ctx.mute is not None:
        ctx.mute(throttle_ms)


def produce_under_quota(ctx: RequestContext, req: Any, quotas: ClientQuotas,
                        produce: Callable[[], Any]) -> Any:
    size = sum(len(p.records or b"") for t in req.topic_data for p in t.partition_data)
    started = time.perf_counter_ns()
    result = produce()
    elapsed = time.perf_counter_ns() - started
    now = quotas.now_ms()
    user, client = user_of(ctx.principal), ctx.client_id or ""
    # acks=0 is exempt from the request quota (Kafka's sendNoOpResponseExemptThrottle)
    throttle = max(quotas.produce.record(user, client, size, now) if quotas.produce.enabled
                   else 0, quotas.record_request_time(ctx.principal, ctx.client_id, elapsed, now)
                   if req.acks != 0 else 0)
    if not throttle:
        return result
    _mute(ctx, throttle)
    if asyncio.iscoroutine(result):
        return _throttled_later(result, throttle)
    return with_throttle(result, throttle)


async def _throttled_later(result: Any, throttle_ms: int) -> Any:
    return with_throttle(await result, throttle_ms)


def fetch_under_quota(ctx: RequestContext, quotas: ClientQuotas, max_bytes: int,
                      fetch: Callable[[int], Any],
                      throttled: Callable[[int], SplicedResponse]) -> Any:
    user, client = user_of(ctx.principal), ctx.client_id or ""
    if quotas.fetch.enabled:
        window_max = quotas.fetch.max_in_window(user, client)
        if window_max is not None:
            max_bytes = max(min(max_bytes, int(window_max)), 1)
    started = time.perf_counter_ns()
    result = fetch(max_bytes)
    elapsed = time.perf_counter_ns() - started
    if asyncio.iscoroutine(result):
        return _fetched_later(ctx, quotas, result, elapsed, throttled)
    return _settle_fetch(ctx, quotas, result, elapsed, throttled)


async def _fetched_later(ctx: RequestContext, quotas: ClientQuotas, result: Any, elapsed: int,
                         throttled: Callable[[int], SplicedResponse]) -> Any:
    return _settle_fetch(ctx, quotas, await result, elapsed, throttled)


def _settle_fetch(ctx: RequestContext, quotas: ClientQuotas, response: Any, elapsed: int,
                  throttled: Callable[[int], SplicedResponse]) -> Any:
    if type(response) is not SplicedResponse:
        return response
    now = quotas.now_ms()
    user, client = user_of(ctx.principal), ctx.client_id or ""
    fetched = quotas.fetch.record(user, client, response.size, now) if quotas.fetch.enabled \
        else 0
    throttle = max(fetched, quotas.record_request_time(ctx.principal, ctx.client_id, elapsed,
                                                       now))
    if not throttle:
        return response
    if quotas.fetch.enabled:
        quotas.fetch.unrecord(user, client, response.size, now)
    _mute(ctx, throttle)
    return throttled(throttle)


def mutation_quota(ctx: RequestContext, strict_since: int) -> MutationQuota | None:
    """The request's controller mutation quota (KIP-599), strict from version ``strict_since``
    on; None when the client has no controller_mutation_rate (or none is set at all)."""
    quotas = ctx.services.quotas
    if not quotas.mutation.enabled:
        return None
    return quotas.mutation_quota(ctx.principal, ctx.client_id, ctx.api_version >= strict_since)


def mutation_throttle(ctx: RequestContext, quota: MutationQuota | None) -> timedelta:
    """The response's throttle time under the mutation quota; the connection is muted for it
    (the request quota's, if larger, is applied on top by broker/request_quota.py)."""
    throttle_ms = quota.throttle_ms() if quota is not None else 0
    if not throttle_ms:
        return _NO_THROTTLE
    if ctx.mute is not None:
        ctx.mute(throttle_ms)
    return timedelta(milliseconds=throttle_ms)


_NO_THROTTLE = timedelta(0)
