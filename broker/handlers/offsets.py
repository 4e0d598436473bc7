"""Committed offsets: OffsetCommit (8) v2-9, OffsetFetch (9) v1-9, OffsetDelete (47) v0."""

from __future__ import annotations

import asyncio
from functools import lru_cache

from kio.schema.errors import ErrorCode

from kafkette.coordinator import errors as E
from kafkette.coordinator.errors import CoordinatorError, append_error
from kafkette.coordinator.shard import CommitPartition
from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import codec, response_type

from ..context import RequestContext
from ..registry import api
from ._groups_common import ZERO, ms, shard_for


def _partition_count(ctx: RequestContext, topic: str) -> int:
    """Partitions of ``topic`` (0 if it does not exist): valid indexes are 0 <= p < count."""
    info = ctx.services.topics.get(topic)
    return info.partitions if info is not None else 0


# OffsetCommit ------------------------------------------------------------------------------------

Layout = tuple[tuple[str, tuple[int, ...]], ...]


@api(8, 2, 9)
def handle_offset_commit(ctx: RequestContext, req):
    """Answers with the encoded body, or a future of it once the offsets are durable."""
    v = ctx.api_version
    layout: list[tuple[str, tuple[int, ...]]] = []
    codes: list[int] = []  # in request order; -1 until the shard answers
    accepted: list[CommitPartition] = []
    for t in req.topics:
        count = _partition_count(ctx, t.name)
        layout.append((t.name, tuple(p.partition_index for p in t.partitions)))
        for p in t.partitions:
            if 0 <= p.partition_index < count:
                codes.append(-1)
                accepted.append(CommitPartition(
                    t.name, p.partition_index, p.committed_offset,
                    getattr(p, "committed_leader_epoch", -1), p.committed_metadata))
            else:
                codes.append(E.UNKNOWN_TOPIC_OR_PARTITION)
    if not accepted:
        return _commit_body(v, tuple(layout), tuple(codes))
    try:
        shard = shard_for(ctx, req.group_id)
    except CoordinatorError as exc:
        return _commit_body(v, tuple(layout), _fill(codes, [exc.code] * len(accepted)))
    retention = ms(req.retention_time) if 2 <= v <= 4 else -1
    shard_codes, write = shard.commit_offsets(
        req.group_id, req.generation_id_or_member_epoch, req.member_id,
        getattr(req, "group_instance_id", None), retention, accepted, v)
    if write is None:
        return _commit_body(v, tuple(layout), _fill(codes, shard_codes))
    answer: asyncio.Future = asyncio.get_running_loop().create_future()

    def written(f: asyncio.Future) -> None:
        failed = E.COORDINATOR_NOT_AVAILABLE if f.cancelled() else \
            None if f.exception() is None else append_error(f.exception())
        final = shard_codes if failed is None else \
            [failed if c == E.NONE else c for c in shard_codes]
        answer.set_result(_commit_body(v, tuple(layout), _fill(codes, final)))
    write.add_done_callback(written)
    return answer


def _fill(codes: list[int], shard_codes: list[int]) -> tuple[int, ...]:
    """The request-order codes with the placeholders (-1) replaced by the shard's answers."""
    answers = iter(shard_codes)
    return tuple(next(answers) if c == -1 else c for c in codes)


@lru_cache(maxsize=1024)
def _commit_body(version: int, layout: Layout, codes: tuple[int, ...]) -> bytes:
    """Encoded OffsetCommit response; consumers commit the same partitions again and again."""
    cls = response_type(8, version)
    topic_cls = item_type(cls, "topics")
    part_cls = item_type(topic_cls, "partitions")
    answers = iter(codes)
    body = make(cls, throttle_time=ZERO, topics=tuple(
        make(topic_cls, name=name, partitions=tuple(
            make(part_cls, partition_index=p, error_code=ErrorCode(next(answers)))
            for p in parts))
        for name, parts in layout))
    return codec(8, version).encode_body(body)


# OffsetFetch -------------------------------------------------------------------------------------

async def _fetch_group(ctx: RequestContext, group_id: str, topics) -> tuple[int, list]:
    """(group error, [(topic, [(partition, offset, epoch, metadata, error)])])."""
    wanted = None if topics is None else [(t.name, list(t.partition_indexes)) for t in topics]
    try:
        shard = shard_for(ctx, group_id)
    except CoordinatorError as exc:
        return exc.code, [(name, [(p, -1, -1, "", exc.code) for p in parts])
                          for name, parts in (wanted or [])]
    pending = shard.pending_write()
    if pending is not None:
        # Kafka reads committed state; waiting for in-flight writes also gives
        # requireStable its "no pending commit" guarantee.
        await asyncio.wait([pending])
    return E.NONE, shard.fetch_offsets(group_id, wanted)


def _topics(ctx_cls: type, rows: list, copy_error: int | None = None) -> tuple:
    topic_cls = item_type(ctx_cls, "topics")
    part_cls = item_type(topic_cls, "partitions")
    return tuple(
        make(topic_cls, name=name, partitions=tuple(
            make(part_cls, partition_index=p, committed_offset=off, committed_leader_epoch=epoch,
                 metadata=meta, error_code=ErrorCode(err if copy_error is None else copy_error))
            for p, off, epoch, meta, err in parts))
        for name, parts in rows)


@api(9, 1, 9)
async def handle_offset_fetch(ctx: RequestContext, req):
    v = ctx.api_version
    cls = ctx.response_type
    if v >= 8:
        group_cls = item_type(cls, "groups")
        out = []
        for g in req.groups:
            error, rows = await _fetch_group(ctx, g.group_id, g.topics)
            if error != E.NONE:
                rows = []
            out.append(make(group_cls, group_id=g.group_id, topics=_topics(group_cls, rows),
                            error_code=ErrorCode(error)))
        return ctx.respond(throttle_time=ZERO, groups=tuple(out))
    topics = req.topics if v >= 2 else (req.topics or ())
    error, rows = await _fetch_group(ctx, req.group_id, topics)
    if v < 2:
        return ctx.respond(topics=_topics(cls, rows, copy_error=error if error else None))
    if error != E.NONE:
        rows = []
    return ctx.respond(throttle_time=ZERO, topics=_topics(cls, rows), error_code=ErrorCode(error))


# OffsetDelete ------------------------------------------------------------------------------------

@api(47, 0, 0)
async def handle_offset_delete(ctx: RequestContext, req):
    topic_cls = item_type(ctx.response_type, "topics")
    part_cls = item_type(topic_cls, "partitions")

    def respond(top: int, per: dict[tuple[str, int], int]):
        return ctx.respond(error_code=ErrorCode(top), throttle_time=ZERO, topics=tuple(
            make(topic_cls, name=t.name, partitions=tuple(
                make(part_cls, partition_index=p.partition_index,
                     error_code=ErrorCode(per.get((t.name, p.partition_index), E.NONE)))
                for p in t.partitions))
            for t in req.topics) if top == E.NONE else ())

    if not req.group_id:
        return respond(E.INVALID_GROUP_ID, {})
    per: dict[tuple[str, int], int] = {}
    wanted: dict[str, list[int]] = {}
    for t in req.topics:
        count = _partition_count(ctx, t.name)
        for p in t.partitions:
            if 0 <= p.partition_index < count:
                wanted.setdefault(t.name, []).append(p.partition_index)
            else:
                per[(t.name, p.partition_index)] = E.UNKNOWN_TOPIC_OR_PARTITION
    try:
        shard = shard_for(ctx, req.group_id)
    except CoordinatorError as exc:
        return respond(exc.code, {})
    top, results, write = shard.delete_offsets(req.group_id, list(wanted.items()))
    if top != E.NONE:
        return respond(top, {})
    if write is not None:
        try:
            await write
        except Exception as exc:  # noqa: BLE001 - mapped to a Kafka error
            return respond(append_error(exc), {})
    for name, parts in results:
        for p, err in parts:
            per[(name, p)] = err
    return respond(E.NONE, per)
