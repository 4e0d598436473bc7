"""Produce (key 0): hand each partition's batch to the record service, answer per partition."""

from __future__ import annotations

import asyncio
import logging
import struct
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.coordinator.runtime.error_codes import (
    CONCURRENT_TRANSACTIONS,
    COORDINATOR_LOAD_IN_PROGRESS,
    COORDINATOR_NOT_AVAILABLE,
    NOT_COORDINATOR,
    fenced_for,
)
from kafkette.protocol.build import field_names, item_type
from kafkette.protocol.codec import response_type
from kafkette.storage.log import AppendInfo
from kafkette.storage.rate_limited_log import RateLimitedLog

from ..context import RequestContext
from ..responses import CLOSE_CONNECTION, NO_RESPONSE
from ..routes import api
from ..security.acl import AclOperation, ResourceType
from ..services.errors import ServiceError, service_error
from ._quota import produce_under_quota

log = logging.getLogger("kafkette.produce")
# A full disk rejects every produce: one line per error code a while, not one per request.
rejections = RateLimitedLog(log)
ZERO = timedelta(0)


_TXN_HEADER = struct.Struct(">qh")  # producer id, epoch at byte 43 of a v2 batch
# an implicit add that failed retriably is answered NOT_ENOUGH_REPLICAS: the client retries the
# produce (Kafka's ReplicaManager does the same)
_RETRY_ADD = frozenset({CONCURRENT_TRANSACTIONS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR,
                        COORDINATOR_LOAD_IN_PROGRESS})


@api(0, 0, 12, min_accepted=3)
def handle_produce(ctx: RequestContext, req: Any):
    quotas = ctx.services.quotas
    if quotas.active:  # some client quota is set: this client's may throttle it
        return produce_under_quota(ctx, req, quotas, lambda: _handle_produce(ctx, req))
    return _handle_produce(ctx, req)


def _handle_produce(ctx: RequestContext, req: Any) -> Any:
    # ctx.authorizing, inlined: the hot path
    refused = _unauthorized(ctx, req) if ctx.services.acls is not None else None
    if req.transactional_id is not None and ctx.api_version >= 12 and \
            ctx.config.get_int("transaction.version") >= 2:
        # Transaction version 2 (KIP-890): a partition not yet in the transaction is added by
        # the broker (AddPartitionsToTxn on the client's behalf) before the batch is appended.
        txn = ctx.services.groups.transaction_coordinator()
        missing = _not_added(txn, req, refused) if txn is not None else None
        if missing:
            return _add_then_produce(ctx, req, txn, *missing, refused)
    return _produce(ctx, req, refused)


def _is_transactional(records: Any) -> bool:
    """Whether a partition's records are a transactional v2 batch (attributes bit 4)."""
    return bool(records) and len(records) >= 61 and bool(records[22] & 0x10)


def _unauthorized(ctx: RequestContext, req: Any) -> dict[tuple[str, int], ServiceError] | None:
    """The partitions refused by the authorizer, as Kafka checks Produce: transactional records
    need WRITE on the transactional id (else every partition is refused), then each topic WRITE.
    """
    topics = req.topic_data
    if any(_is_transactional(p.records) for t in topics for p in t.partition_data) and (
            req.transactional_id is None or not ctx.authorize(
                AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, req.transactional_id)):
        denied_txn = ServiceError(ErrorCode.transactional_id_authorization_failed)
        return {(t.name, p.index): denied_txn for t in topics for p in t.partition_data}
    denied = ctx.denied(AclOperation.WRITE, ResourceType.TOPIC, (t.name for t in topics))
    if not denied:
        return None
    denied_topic = ServiceError(ErrorCode.topic_authorization_failed)
    return {(t.name, p.index): denied_topic for t in topics if t.name in denied
            for p in t.partition_data}


def _not_added(txn: Any, req: Any, refused: dict[tuple[str, int], ServiceError] | None
               ) -> tuple[int, int, dict[str, set[int]]] | None:
    verify = txn.verifier(req.transactional_id)
    found: dict[str, set[int]] = {}
    pid = epoch = -1
    for tdata in req.topic_data:
        for pdata in tdata.partition_data:
            if refused and (tdata.name, pdata.index) in refused:
                continue
            raw = pdata.records
            if not raw or len(raw) < 61 or not raw[22] & 0x10:
                continue
            pid, epoch = _TXN_HEADER.unpack_from(raw, 43)
            if verify(tdata.name, pdata.index, pid, epoch):
                found.setdefault(tdata.name, set()).add(pdata.index)
    return (pid, epoch, found) if found else None


async def _add_then_produce(ctx: RequestContext, req: Any, txn: Any, pid: int, epoch: int,
                            partitions: dict[str, set[int]],
                            refused: dict[tuple[str, int], ServiceError] | None) -> Any:
    code = await txn.add_partitions(req.transactional_id, pid, epoch, partitions, tv=2)
    rejected: dict[tuple[str, int], ServiceError] = dict(refused or {})
    if code:
        code = ErrorCode.not_enough_replicas.value if code in _RETRY_ADD else \
            fenced_for(code, 0, 1)  # Produce has no PRODUCER_FENCED
        rejected.update({(t, p): ServiceError(ErrorCode(code), "the partition could not be added "
                                              "to the transaction") for t, ps in partitions.items()
                         for p in ps})
    answer = _produce(ctx, req, rejected)
    return await answer if asyncio.iscoroutine(answer) else answer


def _produce(ctx: RequestContext, req: Any,
             rejected: dict[tuple[str, int], ServiceError] | None) -> Any:
    acks = req.acks
    records = ctx.services.records
    results: list[tuple[str, list[tuple[int, Any]]]] = []
    pending: list[Any] = []
    verify = None
    if req.transactional_id is not None and \
            ctx.config.get_bool("transaction.partition.verification.enable"):
        txn = ctx.services.groups.transaction_coordinator()
        verify = txn.verifier(req.transactional_id) if txn is not None else _not_available
    for tdata in req.topic_data:
        parts: list[tuple[int, Any]] = []
        for pdata in tdata.partition_data:
            outcome: Any
            if acks not in (0, 1, -1):
                outcome = ServiceError(ErrorCode.invalid_required_acks, "Invalid required acks")
            elif rejected and (tdata.name, pdata.index) in rejected:
                outcome = rejected[(tdata.name, pdata.index)]
            else:
                try:
                    outcome = records.append(tdata.name, pdata.index, pdata.records, acks,
                                             ctx.client_id, verify)
                    if not isinstance(outcome, AppendInfo):
                        pending.append(outcome)
                except ServiceError as failed:
                    outcome = failed
                    rejections.info(failed.code, "produce to %s-%d rejected: %s", tdata.name,
                                    pdata.index, failed.message)
            parts.append((pdata.index, outcome))
        results.append((tdata.name, parts))

    def answer(done: dict[int, Any]) -> Any:
        if acks == 0:
            failed = any(isinstance(o, ServiceError) for _, parts in results for _, o in parts) \
                or any(isinstance(v, BaseException) for v in done.values())
            # Kafka closes the connection when an acks=0 produce fails: the client's only signal.
            return CLOSE_CONNECTION if failed else NO_RESPONSE
        return _response(ctx, results, done)

    if not pending:  # everything was written inline (or rejected): answer without a task
        return answer({})

    async def finish() -> Any:
        done: dict[int, Any] = {}
        if len(pending) == 1:
            try:
                done[id(pending[0])] = await pending[0]
            except Exception as exc:  # noqa: BLE001 - answered as the partition's error
                done[id(pending[0])] = exc
        else:
            values = await asyncio.gather(*pending, return_exceptions=True)
            done = {id(p): v for p, v in zip(pending, values, strict=True)}
        return answer(done)

    return finish()


def _not_available(_topic: str, _partition: int, _pid: int, _epoch: int) -> int:
    return ErrorCode.coordinator_not_available.value


@cache
def _shape(version: int) -> tuple[type, type, type, frozenset[str]]:
    cls = response_type(0, version)
    topic_cls = item_type(cls, "responses")
    part_cls = item_type(topic_cls, "partition_responses")
    return cls, topic_cls, part_cls, field_names(part_cls)


def _response(ctx: RequestContext, results: list[tuple[str, list[tuple[int, Any]]]],
              done: dict[int, Any]) -> Any:
    # Built with the kio constructors directly (not protocol.build.make): this is the hot path.
    cls, topic_cls, part_cls, names = _shape(ctx.api_version)
    has_start, has_errors = "log_start_offset" in names, "error_message" in names
    topics = []
    for name, parts in results:
        out = []
        for index, outcome in parts:
            if not isinstance(outcome, (ServiceError, AppendInfo)):
                outcome = done[id(outcome)]
                if isinstance(outcome, BaseException):
                    outcome = service_error(outcome)
            fields: dict[str, Any]
            if isinstance(outcome, ServiceError):
                fields = dict(index=index, error_code=outcome.code, base_offset=-1,
                              log_append_time=None)
                start, message = -1, outcome.message
                refused = outcome.record_errors
            else:
                append_time = outcome.log_append_time
                fields = dict(index=index, error_code=ErrorCode.none,
                              base_offset=outcome.base_offset,
                              log_append_time=None if append_time < 0
                              else datetime.fromtimestamp(append_time / 1000, UTC))
                start, message = outcome.log_start_offset, None
                refused = ()
            if has_start:
                fields["log_start_offset"] = start
            if has_errors:
                fields["record_errors"] = _record_errors(refused, part_cls) if refused else ()
                fields["error_message"] = message
            out.append(part_cls(**fields))
        topics.append(topic_cls(name=name, partition_responses=tuple(out)))
    return cls(responses=tuple(topics), throttle_time=ZERO)


def _record_errors(found: tuple[tuple[int, str | None], ...], part_cls: type) -> tuple[Any, ...]:
    """ProduceResponse's record_errors of a refused partition (LogValidator's RecordErrors)."""
    if not found:
        return ()
    cls = item_type(part_cls, "record_errors")
    return tuple(cls(batch_index=i, batch_index_error_message=m) for i, m in found)
