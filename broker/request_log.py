"""The DEBUG request log: one line per request with its API, version, client id and duration.

``connection.py`` calls ``handle(handler, ctx, body)`` instead of the handler; below DEBUG this
is the handler call itself. The duration runs from dispatch until the handler's result is ready
(for a waiting request, such as a long-polling Fetch, until it completes).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from kafkette.protocol.codec import request_type

from .context import RequestContext

log = logging.getLogger("kafkette.requests")


def api_name(api_key: int, version: int) -> str:
    try:
        return request_type(api_key, version).__name__.removesuffix("Request")
    except Exception:  # noqa: BLE001 - a name for a log line only
        return f"api {api_key}"


def _line(ctx: RequestContext, correlation_id: int, started: float, outcome: str = "") -> None:
    log.debug("%s v%d correlation=%d client_id=%s from %s: %.3f ms%s",
              api_name(ctx.api_key, ctx.api_version), ctx.api_version, correlation_id,
              ctx.client_id, ctx.client_host, (time.perf_counter() - started) * 1000, outcome)


async def _timed(awaitable: Any, ctx: RequestContext, correlation_id: int, started: float) -> Any:
    try:
        return await awaitable
    finally:
        _line(ctx, correlation_id, started)


def handle(handler: Callable[[RequestContext, Any], Any], ctx: RequestContext, body: Any) -> Any:
    if not log.isEnabledFor(logging.DEBUG):
        return handler(ctx, body)
    started = time.perf_counter()
    # Read now: pipelined OffsetCommits may share one context (broker/request_memo.py).
    corr = ctx.correlation_id
    result = handler(ctx, body)
    if isinstance(result, asyncio.Future):
        result.add_done_callback(lambda _fut: _line(ctx, corr, started))
    elif hasattr(result, "__await__"):
        return _timed(result, ctx, corr, started)
    else:
        _line(ctx, corr, started)
    return result
