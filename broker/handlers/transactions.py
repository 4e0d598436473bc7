"""The transaction APIs of transaction version 1: AddPartitionsToTxn (24) v0-3,
AddOffsetsToTxn (25) v0-4, EndTxn (26) v0-4, TxnOffsetCommit (28) v0-4; DescribeTransactions
(65) and ListTransactions (66) for tools. The KIP-890 versions
(AddPartitionsToTxn v4+ verify-only, EndTxn v5+, TxnOffsetCommit v5) are not advertised."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.coordinator.offset_manager import CommitPartition
from kafkette.coordinator.transaction import errors as TE
from kafkette.protocol.build import item_type, make
from kafkette.protocol.transaction_records import STATE_NAMES

from ..context import RequestContext
from ..routes import api
from ._groups_common import ZERO, coordinator


def transactions(ctx: RequestContext) -> Any:
    """The transaction coordinator, or None before it has loaded."""
    return ctx.services.groups.transaction_coordinator()


@api(24, 0, 3)
async def handle_add_partitions_to_txn(ctx: RequestContext, req: Any):
    v = ctx.api_version
    wanted = {t.name: set(t.partitions) for t in req.v3_and_below_topics}
    missing = {(name, p) for name, parts in wanted.items() for p in parts
               if not ctx.services.records.has_partition(name, p)}
    coord = transactions(ctx)
    if coord is None:
        error = TE.COORDINATOR_NOT_AVAILABLE
    elif missing:
        error = TE.OPERATION_NOT_ATTEMPTED
    else:
        error = await coord.add_partitions(req.v3_and_below_transactional_id,
                                           req.v3_and_below_producer_id,
                                           req.v3_and_below_producer_epoch, wanted)
        error = TE.fenced_for(error, v, 2)
    topic_cls = item_type(ctx.response_type, "results_by_topic_v3_and_below")
    part_cls = item_type(topic_cls, "results_by_partition")
    return ctx.respond(throttle_time=ZERO, results_by_topic_v3_and_below=tuple(
        make(topic_cls, name=t.name, results_by_partition=tuple(
            make(part_cls, partition_index=p, partition_error_code=ErrorCode(
                TE.UNKNOWN_TOPIC_OR_PARTITION if (t.name, p) in missing else error))
            for p in t.partitions))
        for t in req.v3_and_below_topics))


@api(25, 0, 4)
async def handle_add_offsets_to_txn(ctx: RequestContext, req: Any):
    partition = coordinator(ctx).partition_for(req.group_id)
    return await _answer(ctx, lambda coord: coord.add_partitions(
        req.transactional_id, req.producer_id, req.producer_epoch,
        {"__consumer_offsets": {partition}}))


@api(26, 0, 4)
async def handle_end_txn(ctx: RequestContext, req: Any):
    return await _answer(ctx, lambda coord: coord.end_txn(
        req.transactional_id, req.producer_id, req.producer_epoch, req.committed))


async def _answer(ctx: RequestContext, call: Callable[[Any], Awaitable[int]]) -> Any:
    """A response with one error code: ``call``'s on the transaction coordinator (PRODUCER_FENCED
    from version 2 on)."""
    coord = transactions(ctx)
    error = TE.COORDINATOR_NOT_AVAILABLE if coord is None else \
        TE.fenced_for(await call(coord), ctx.api_version, 2)
    return ctx.respond(throttle_time=ZERO, error_code=ErrorCode(error))


@api(28, 0, 4)
async def handle_txn_offset_commit(ctx: RequestContext, req: Any):
    v = ctx.api_version
    partitions = [CommitPartition(t.name, p.partition_index, p.committed_offset,
                                  getattr(p, "committed_leader_epoch", -1), p.committed_metadata)
                  for t in req.topics for p in t.partitions]
    codes = await coordinator(ctx).txn_commit_offsets(
        req.group_id, req.producer_id, req.producer_epoch, getattr(req, "generation_id", -1),
        getattr(req, "member_id", ""), getattr(req, "group_instance_id", None), partitions)
    answers = iter(TE.fenced_for(c, v, 3) for c in codes)
    topic_cls = item_type(ctx.response_type, "topics")
    part_cls = item_type(topic_cls, "partitions")
    return ctx.respond(throttle_time=ZERO, topics=tuple(
        make(topic_cls, name=t.name, partitions=tuple(
            make(part_cls, partition_index=p.partition_index, error_code=ErrorCode(next(answers)))
            for p in t.partitions))
        for t in req.topics))


# Admin: DescribeTransactions (65) v0, ListTransactions (66) v0-1 -----------------------------

@api(65, 0, 0)
async def handle_describe_transactions(ctx: RequestContext, req: Any):
    coord = transactions(ctx)
    state_cls = item_type(ctx.response_type, "transaction_states")
    topic_cls = item_type(state_cls, "topics")
    out = []
    for tid in req.transactional_ids:
        error, md = (TE.COORDINATOR_NOT_AVAILABLE, None) if coord is None \
            else await coord.describe(tid)
        if md is None:
            out.append(make(state_cls, error_code=ErrorCode(error), transactional_id=tid,
                            transaction_state="", transaction_timeout=ZERO,
                            transaction_start_time=_timestamp(-1), producer_id=-1,
                            producer_epoch=-1, topics=()))
            continue
        out.append(make(state_cls, error_code=ErrorCode.none, transactional_id=tid,
                        transaction_state=STATE_NAMES[md.state],
                        transaction_timeout=timedelta(milliseconds=md.timeout_ms),
                        transaction_start_time=_timestamp(md.start_ms),
                        producer_id=md.producer_id, producer_epoch=md.producer_epoch,
                        topics=tuple(make(topic_cls, topic=t, partitions=tuple(sorted(p)))
                                     for t, p in sorted(md.partitions.items()))))
    return ctx.respond(throttle_time=ZERO, transaction_states=tuple(out))


@api(66, 0, 1)
async def handle_list_transactions(ctx: RequestContext, req: Any):
    coord = transactions(ctx)
    state_cls = item_type(ctx.response_type, "transaction_states")
    known = set(STATE_NAMES)
    states = set(req.state_filters)
    unknown = tuple(s for s in req.state_filters if s not in known)
    pids = set(req.producer_id_filters)
    min_duration = getattr(req, "duration_filter", -1)
    rows: list[Any] = []
    error = TE.COORDINATOR_NOT_AVAILABLE if coord is None else TE.NONE
    if coord is not None:
        now = int(time.time() * 1000)
        for md in await coord.list():
            name = STATE_NAMES[md.state]
            if (states and name not in states) or (pids and md.producer_id not in pids):
                continue
            if min_duration >= 0 and (md.start_ms < 0 or now - md.start_ms < min_duration):
                continue
            rows.append(make(state_cls, transactional_id=md.transactional_id,
                             producer_id=md.producer_id, transaction_state=name))
    return ctx.respond(throttle_time=ZERO, error_code=ErrorCode(error),
                       unknown_state_filters=unknown, transaction_states=tuple(rows))


def _timestamp(ms_: int) -> datetime:
    return datetime.fromtimestamp(ms_ / 1000, UTC)
