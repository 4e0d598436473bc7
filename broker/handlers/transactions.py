"""The transaction APIs: AddPartitionsToTxn (24) v0-5, AddOffsetsToTxn (25) v0-4, EndTxn (26)
v0-5, TxnOffsetCommit (28) v0-5; DescribeTransactions (65) and ListTransactions (66) for tools.

Transaction version 2 (KIP-890 part 2) is chosen by the request's version when the broker's
``transaction.version`` is 2: EndTxn v5+ bumps the epoch and returns it, TxnOffsetCommit v5+ adds
the group's ``__consumer_offsets`` partition itself (no AddOffsetsToTxn), Produce v12+ adds data
partitions (handlers/produce.py). AddPartitionsToTxn v4+ is the batched, broker-to-coordinator
form (verify-only or an add of transaction version 2). Below level 2 ApiVersions advertises the
older versions only (broker/api_versions.py)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.coordinator.group.offsets.offset_manager import CommitPartition
from kafkette.coordinator.runtime.error_codes import (
    COORDINATOR_NOT_AVAILABLE,
    NONE,
    OPERATION_NOT_ATTEMPTED,
    UNKNOWN_TOPIC_OR_PARTITION,
    fenced_for,
)
from kafkette.protocol.build import item_type, make
from kafkette.protocol.transaction_records import STATE_NAMES

from ..context import RequestContext
from ..routes import api
from ..security.acl import CLUSTER_NAME, AclOperation, ResourceType
from ._groups_common import ZERO, coordinator

WRITE, READ, DESCRIBE = AclOperation.WRITE, AclOperation.READ, AclOperation.DESCRIBE
TRANSACTIONAL_ID, GROUP, TOPIC = (ResourceType.TRANSACTIONAL_ID, ResourceType.GROUP,
                                  ResourceType.TOPIC)
TXN_ID_AUTHORIZATION_FAILED = int(ErrorCode.transactional_id_authorization_failed)
GROUP_AUTHORIZATION_FAILED = int(ErrorCode.group_authorization_failed)
TOPIC_AUTHORIZATION_FAILED = int(ErrorCode.topic_authorization_failed)


def transactions(ctx: RequestContext) -> Any:
    """The transaction coordinator, or None before it has loaded."""
    return ctx.services.groups.transaction_coordinator()


def client_tv(ctx: RequestContext, first_v2: int) -> int:
    """The transaction version of this request: 2 from version ``first_v2`` on when the broker
    finalizes transaction.version 2, else 1 (Kafka lets each client choose by its version)."""
    if ctx.api_version >= first_v2 and ctx.config.get_int("transaction.version") >= 2:
        return 2
    return 1


@api(24, 0, 5)
async def handle_add_partitions_to_txn(ctx: RequestContext, req: Any):
    v = ctx.api_version
    if v >= 4:
        return await _add_partitions_batched(ctx, req)
    wanted = {t.name: set(t.partitions) for t in req.v3_and_below_topics}
    # WRITE on the transactional id (else every partition refused), then on each topic:
    # partitions of a refused topic TOPIC_AUTHORIZATION_FAILED, the others not attempted
    refused: dict[tuple[str, int], int] = {}
    if not ctx.authorize(WRITE, TRANSACTIONAL_ID, req.v3_and_below_transactional_id):
        refused = {(name, p): TXN_ID_AUTHORIZATION_FAILED for name, parts in wanted.items()
                   for p in parts}
    else:
        denied = ctx.denied(WRITE, TOPIC, wanted)
        refused = {(name, p): TOPIC_AUTHORIZATION_FAILED for name in denied
                   for p in wanted[name]}
    missing = {(name, p) for name, parts in wanted.items() for p in parts
               if (name, p) not in refused and not ctx.services.records.has_partition(name, p)}
    coord = transactions(ctx)
    if refused:
        error = OPERATION_NOT_ATTEMPTED
    elif coord is None:
        error = COORDINATOR_NOT_AVAILABLE
    elif missing:
        error = OPERATION_NOT_ATTEMPTED
    else:
        error = await coord.add_partitions(req.v3_and_below_transactional_id,
                                           req.v3_and_below_producer_id,
                                           req.v3_and_below_producer_epoch, wanted)
        error = fenced_for(error, v, 2)
    topic_cls = item_type(ctx.response_type, "results_by_topic_v3_and_below")
    part_cls = item_type(topic_cls, "results_by_partition")
    return ctx.respond(throttle_time=ZERO, results_by_topic_v3_and_below=tuple(
        make(topic_cls, name=t.name, results_by_partition=tuple(
            make(part_cls, partition_index=p, partition_error_code=ErrorCode(
                UNKNOWN_TOPIC_OR_PARTITION if (t.name, p) in missing
                else refused.get((t.name, p), error)))
            for p in t.partitions))
        for t in req.v3_and_below_topics))


@api(25, 0, 4)
async def handle_add_offsets_to_txn(ctx: RequestContext, req: Any):
    if not ctx.authorize(WRITE, TRANSACTIONAL_ID, req.transactional_id):
        return ctx.respond(throttle_time=ZERO, error_code=ErrorCode(TXN_ID_AUTHORIZATION_FAILED))
    if not ctx.authorize(READ, GROUP, req.group_id):
        return ctx.respond(throttle_time=ZERO, error_code=ErrorCode(GROUP_AUTHORIZATION_FAILED))
    partition = coordinator(ctx).partition_for(req.group_id)
    return await _answer(ctx, lambda coord: coord.add_partitions(
        req.transactional_id, req.producer_id, req.producer_epoch,
        {"__consumer_offsets": {partition}}))


async def _add_partitions_batched(ctx: RequestContext, req: Any) -> Any:
    """AddPartitionsToTxn v4+: several transactions; ``verify_only`` asks whether the partitions
    are in the ongoing transaction (TRANSACTION_ABORTABLE when not), else adds them with
    transaction version 2 (Kafka's handleVerifyPartitionsInTransaction /
    handleAddPartitionsToTransaction)."""
    coord = transactions(ctx)
    if not ctx.authorize(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME):
        # the brokers' form of the API: only a broker may send it
        return ctx.respond(throttle_time=ZERO, error_code=ErrorCode.cluster_authorization_failed,
                           results_by_transaction=())
    result_cls = item_type(ctx.response_type, "results_by_transaction")
    topic_cls = item_type(result_cls, "topic_results")
    part_cls = item_type(topic_cls, "results_by_partition")
    out = []
    for txn in req.transactions:
        wanted = {t.name: set(t.partitions) for t in txn.topics}
        per: dict[tuple[str, int], int] = {}
        if coord is None:
            error = COORDINATOR_NOT_AVAILABLE
        elif txn.verify_only:
            error = NONE
            per = coord.verify_partitions(txn.transactional_id, txn.producer_id,
                                          txn.producer_epoch, wanted)
        else:
            error = await coord.add_partitions(txn.transactional_id, txn.producer_id,
                                               txn.producer_epoch, wanted, tv=2)
        out.append(make(result_cls, transactional_id=txn.transactional_id, topic_results=tuple(
            make(topic_cls, name=t.name, results_by_partition=tuple(
                make(part_cls, partition_index=p,
                     partition_error_code=ErrorCode(per.get((t.name, p), error)))
                for p in t.partitions))
            for t in txn.topics)))
    return ctx.respond(throttle_time=ZERO, error_code=ErrorCode.none,
                       results_by_transaction=tuple(out))


@api(26, 0, 5)
async def handle_end_txn(ctx: RequestContext, req: Any):
    """EndTxn; v5+ (transaction version 2) answers the producer id and bumped epoch to use for
    the next transaction."""
    coord = transactions(ctx)
    if not ctx.authorize(WRITE, TRANSACTIONAL_ID, req.transactional_id):
        error, pid, epoch = TXN_ID_AUTHORIZATION_FAILED, -1, -1
    elif coord is None:
        error, pid, epoch = COORDINATOR_NOT_AVAILABLE, -1, -1
    else:
        error, pid, epoch = await coord.end_txn(
            req.transactional_id, req.producer_id, req.producer_epoch, req.committed,
            client_tv(ctx, 5))
    error = fenced_for(error, ctx.api_version, 2)
    if ctx.api_version >= 5:
        return ctx.respond(throttle_time=ZERO, error_code=ErrorCode(error), producer_id=pid,
                           producer_epoch=epoch)
    return ctx.respond(throttle_time=ZERO, error_code=ErrorCode(error))


async def _answer(ctx: RequestContext, call: Callable[[Any], Awaitable[int]]) -> Any:
    """A response with one error code: ``call``'s on the transaction coordinator (PRODUCER_FENCED
    from version 2 on)."""
    coord = transactions(ctx)
    error = COORDINATOR_NOT_AVAILABLE if coord is None else \
        fenced_for(await call(coord), ctx.api_version, 2)
    return ctx.respond(throttle_time=ZERO, error_code=ErrorCode(error))


@api(28, 0, 5)
async def handle_txn_offset_commit(ctx: RequestContext, req: Any):
    v = ctx.api_version
    # WRITE on the transactional id, READ on the group (each refuses every partition), then
    # READ on each topic (its partitions refused, the others committed)
    if not ctx.authorize(WRITE, TRANSACTIONAL_ID, req.transactional_id):
        return _txn_offset_commit_response(ctx, req, iter(lambda: TXN_ID_AUTHORIZATION_FAILED,
                                                          None))
    if not ctx.authorize(READ, GROUP, req.group_id):
        return _txn_offset_commit_response(ctx, req, iter(lambda: GROUP_AUTHORIZATION_FAILED,
                                                          None))
    denied = ctx.denied(READ, TOPIC, (t.name for t in req.topics))
    if client_tv(ctx, 5) >= 2:
        # transaction version 2: the broker adds the group's offsets partition to the
        # transaction (the client sends no AddOffsetsToTxn)
        coord = transactions(ctx)
        error = COORDINATOR_NOT_AVAILABLE if coord is None else await coord.add_partitions(
            req.transactional_id, req.producer_id, req.producer_epoch,
            {"__consumer_offsets": {coordinator(ctx).partition_for(req.group_id)}}, tv=2)
        if error != NONE:
            return _txn_offset_commit_response(ctx, req, iter(lambda: error, None))
    partitions = [CommitPartition(t.name, p.partition_index, p.committed_offset,
                                  getattr(p, "committed_leader_epoch", -1), p.committed_metadata)
                  for t in req.topics if t.name not in denied for p in t.partitions]
    codes = await coordinator(ctx).txn_commit_offsets(
        req.group_id, req.producer_id, req.producer_epoch, getattr(req, "generation_id", -1),
        getattr(req, "member_id", ""), getattr(req, "group_instance_id", None), partitions)
    answered = iter(fenced_for(c, v, 3) for c in codes)
    return _txn_offset_commit_response(ctx, req, iter(
        TOPIC_AUTHORIZATION_FAILED if t.name in denied else next(answered)
        for t in req.topics for _p in t.partitions))


def _txn_offset_commit_response(ctx: RequestContext, req: Any, answers: Any) -> Any:
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
        if not ctx.authorize(DESCRIBE, TRANSACTIONAL_ID, tid):
            error, md = TXN_ID_AUTHORIZATION_FAILED, None
        else:
            error, md = (COORDINATOR_NOT_AVAILABLE, None) if coord is None \
                else await coord.describe(tid)
        if md is None:
            out.append(make(state_cls, error_code=ErrorCode(error), transactional_id=tid,
                            transaction_state="", transaction_timeout=ZERO,
                            transaction_start_time=_timestamp(-1), producer_id=-1,
                            producer_epoch=-1, topics=()))
            continue
        # the partitions of topics it may not DESCRIBE are left out
        hidden = ctx.denied(DESCRIBE, TOPIC, md.partitions)
        out.append(make(state_cls, error_code=ErrorCode.none, transactional_id=tid,
                        transaction_state=STATE_NAMES[md.state],
                        transaction_timeout=timedelta(milliseconds=md.timeout_ms),
                        transaction_start_time=_timestamp(md.start_ms),
                        producer_id=md.producer_id, producer_epoch=md.producer_epoch,
                        topics=tuple(make(topic_cls, topic=t, partitions=tuple(sorted(p)))
                                     for t, p in sorted(md.partitions.items())
                                     if t not in hidden)))
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
    error = COORDINATOR_NOT_AVAILABLE if coord is None else NONE
    if coord is not None:
        now = int(time.time() * 1000)
        for md in await coord.list():
            name = STATE_NAMES[md.state]
            if (states and name not in states) or (pids and md.producer_id not in pids):
                continue
            if min_duration >= 0 and (md.start_ms < 0 or now - md.start_ms < min_duration):
                continue
            if not ctx.authorize(DESCRIBE, TRANSACTIONAL_ID, md.transactional_id):
                continue  # listed only where it may DESCRIBE the transactional id
            rows.append(make(state_cls, transactional_id=md.transactional_id,
                             producer_id=md.producer_id, transaction_state=name))
    return ctx.respond(throttle_time=ZERO, error_code=ErrorCode(error),
                       unknown_state_filters=unknown, transaction_states=tuple(rows))


def _timestamp(ms_: int) -> datetime:
    return datetime.fromtimestamp(ms_ / 1000, UTC)
