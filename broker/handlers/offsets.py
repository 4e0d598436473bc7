"""Committed offsets: OffsetCommit (8) v2-9, OffsetFetch (9) v1-9, OffsetDelete (47) v0."""

from __future__ import annotations

import asyncio

from kio.schema.errors import ErrorCode

from coordinator import errors as E
from coordinator.errors import CoordinatorError, append_error
from coordinator.shard import CommitPartition
from protocol.build import item_type, make

from ..context import RequestContext
from ..registry import api
from ._groups_common import ZERO, ms, shard_for


def _partition_exists(ctx: RequestContext, topic: str, partition: int) -> bool:
    info = ctx.broker.logs.topic(topic)
    return info is not None and 0 <= partition < info.partitions


# OffsetCommit ------------------------------------------------------------------------------------

@api(8, 2, 9)
async def handle_offset_commit(ctx: RequestContext, req):
    v = ctx.api_version
    topic_cls = item_type(ctx.response_type, "topics")
    part_cls = item_type(topic_cls, "partitions")
    # (topic, partition) -> error, in request order
    errors: dict[tuple[str, int], int] = {}
    order: list[tuple[str, list[int]]] = []
    accepted: list[CommitPartition] = []
    for t in req.topics:
        order.append((t.name, [p.partition_index for p in t.partitions]))
        for p in t.partitions:
            if not _partition_exists(ctx, t.name, p.partition_index):
                errors[(t.name, p.partition_index)] = E.UNKNOWN_TOPIC_OR_PARTITION
            else:
                accepted.append(CommitPartition(
                    t.name, p.partition_index, p.committed_offset,
                    getattr(p, "committed_leader_epoch", -1), p.committed_metadata))
    if accepted:
        codes: list[int]
        try:
            shard = shard_for(ctx, req.group_id)
        except CoordinatorError as exc:
            codes = [exc.code] * len(accepted)
        else:
            retention = ms(req.retention_time) if 2 <= v <= 4 else -1
            codes, write = shard.commit_offsets(
                req.group_id, req.generation_id_or_member_epoch, req.member_id,
                getattr(req, "group_instance_id", None), retention, accepted, v)
            if write is not None:
                try:
                    await write
                except Exception as exc:  # noqa: BLE001 - mapped to a Kafka error
                    failed = append_error(exc)
                    codes = [failed if c == E.NONE else c for c in codes]
        for p, code in zip(accepted, codes, strict=True):
            errors[(p.topic, p.partition)] = code
    return ctx.respond(throttle_time=ZERO, topics=tuple(
        make(topic_cls, name=name, partitions=tuple(
            make(part_cls, partition_index=p, error_code=ErrorCode(errors[(name, p)]))
            for p in parts))
        for name, parts in order))


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
        for p in t.partitions:
            if _partition_exists(ctx, t.name, p.partition_index):
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
