"""The topics -> partitions response shape shared by ListOffsets, DeleteRecords and
OffsetForLeaderEpoch: one answer per requested partition, in request order."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from datetime import timedelta
from typing import Any

from kafkette.protocol.build import item_type, make

from ..context import RequestContext

# (topic name, requested partition) -> fields of the response partition.
Answer = Callable[[str, Any], dict[str, Any]]
AsyncAnswer = Callable[[str, Any], Awaitable[dict[str, Any]]]


def _response(ctx: RequestContext, topic_field: str,
              answered: Iterable[tuple[str, list[dict[str, Any]]]]) -> Any:
    cls = ctx.response_type
    topic_cls = item_type(cls, "topics")
    part_cls = item_type(topic_cls, "partitions")
    topics = tuple(make(topic_cls, **{topic_field: name},
                        partitions=tuple(make(part_cls, **fields) for fields in parts))
                   for name, parts in answered)
    return make(cls, throttle_time=timedelta(0), topics=topics)


def per_partition(ctx: RequestContext, req: Any, answer: Answer, *, topic_field: str = "name") -> Any:
    """The response with ``answer(topic, partition)`` for each requested partition."""
    answered = []
    for t in req.topics:
        name = getattr(t, topic_field)
        answered.append((name, [answer(name, p) for p in t.partitions]))
    return _response(ctx, topic_field, answered)


async def per_partition_async(ctx: RequestContext, req: Any, answer: AsyncAnswer, *,
                              topic_field: str = "name") -> Any:
    """:func:`per_partition` for an awaited ``answer``; partitions are answered one at a time."""
    answered = []
    for t in req.topics:
        name = getattr(t, topic_field)
        answered.append((name, [await answer(name, p) for p in t.partitions]))
    return _response(ctx, topic_field, answered)
