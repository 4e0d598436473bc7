"""Produce (key 0): validate v2 batches, check idempotent sequences, append, acknowledge."""

from __future__ import annotations

import asyncio
import logging
import struct
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.headers import encode_uvarint
from kafkette.protocol.records import (
    HEADER_SIZE,
    CorruptRecordError,
    build_batch,
    decode_records,
    parse_batch_header,
    validate_batch,
)
from kafkette.storage.log import (
    AppendInfo,
    InvalidTimestampError,
    KafkaStorageError,
    RecordTooLargeError,
)
from kafkette.storage.producer_state import InvalidProducerEpochError, OutOfOrderSequenceError

from ..connection import NO_RESPONSE
from ..context import RequestContext
from ..registry import api

log = logging.getLogger("kafkette.produce")


class _Failed(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _append(ctx: RequestContext, topic: str, index: int, records: bytes | None, acks: int):
    """Validate and start the append of one partition's data; an awaitable of AppendInfo."""
    logs = ctx.broker.logs
    plog = logs.get_partition(topic, index)
    if plog is None:
        raise _Failed(ErrorCode.unknown_topic_or_partition,
                      "This server does not host this topic-partition.")
    topic_info = logs.topic(topic)
    if topic_info is not None and topic_info.internal:
        raise _Failed(ErrorCode.invalid_topic_exception, f"Cannot append to internal topic {topic}")
    if not records:
        raise _Failed(ErrorCode.invalid_record, "Produce request has no record batch")
    try:
        first = parse_batch_header(records)
        if first.magic == 2 and HEADER_SIZE <= first.size < len(records):
            raise _Failed(ErrorCode.invalid_record,
                          "Produce requests with version 3 and above must contain exactly one "
                          "record batch")
        header = validate_batch(records)
    except CorruptRecordError as exc:
        raise _Failed(ErrorCode.corrupt_message, str(exc)) from None
    if header.is_control:
        raise _Failed(ErrorCode.invalid_record, "Clients are not allowed to write control records")
    if acks == -1 and plog.config.min_insync_replicas > 1:
        # One broker is the whole ISR: acks=all cannot meet a larger min.insync.replicas.
        raise _Failed(ErrorCode.not_enough_replicas,
                      f"The size of the current ISR Set(1) is insufficient to satisfy the "
                      f"min.isr requirement of {plog.config.min_insync_replicas} for partition "
                      f"{topic}-{index}")
    if plog.config.compact:
        try:
            if any(r.key is None for r in decode_records(records)):
                raise _Failed(ErrorCode.invalid_record,
                              "Compacted topic cannot accept message without key in topic "
                              f"partition {topic}-{index}.")
        except CorruptRecordError as exc:
            raise _Failed(ErrorCode.corrupt_message, str(exc)) from None
    target = plog.config.compression
    if target >= 0 and header.compression != target:
        records, header = _recompress(records, header, target)
    try:
        info, fut = plog.append_nowait(records, [header])
    except Exception as exc:  # noqa: BLE001 - mapped below
        raise _map_error(exc) from None
    return info if fut is None else _durable(info, fut)


async def _durable(info: AppendInfo, fut: asyncio.Future) -> AppendInfo:
    await fut
    return info


def _recompress(records: bytes, header: Any, codec: int) -> tuple[bytes, Any]:
    """A topic with compression.type other than 'producer' stores batches in its own codec."""
    try:
        batch = build_batch(decode_records(records), base_offset=header.base_offset,
                            compression=codec, producer_id=header.producer_id,
                            producer_epoch=header.producer_epoch,
                            base_sequence=header.base_sequence,
                            transactional=header.is_transactional,
                            timestamp_type=header.timestamp_type,
                            partition_leader_epoch=header.partition_leader_epoch)
    except CorruptRecordError as exc:
        raise _Failed(ErrorCode.corrupt_message, str(exc)) from None
    return batch, parse_batch_header(batch)


def _map_error(exc: BaseException) -> _Failed:
    if isinstance(exc, _Failed):
        return exc
    if isinstance(exc, OutOfOrderSequenceError):
        return _Failed(ErrorCode.out_of_order_sequence_number, str(exc))
    if isinstance(exc, InvalidProducerEpochError):
        return _Failed(ErrorCode.invalid_producer_epoch, str(exc))
    if isinstance(exc, RecordTooLargeError):
        return _Failed(ErrorCode.message_too_large, str(exc))
    if isinstance(exc, InvalidTimestampError):
        return _Failed(ErrorCode.invalid_timestamp, str(exc))
    if isinstance(exc, CorruptRecordError):
        return _Failed(ErrorCode.corrupt_message, str(exc))
    if isinstance(exc, (KafkaStorageError, OSError)):
        return _Failed(ErrorCode.kafka_storage_error, str(exc))
    log.error("produce failed: %r", exc)
    return _Failed(ErrorCode.unknown_server_error, str(exc))


_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_PART = struct.Struct(">ihqq")  # index, error code, base offset, log append time
_I64 = struct.Struct(">q")


def _string(value: str | None, flexible: bool) -> bytes:
    if value is None:
        return b"\x00" if flexible else b"\xff\xff"
    raw = value.encode()
    return (encode_uvarint(len(raw) + 1) if flexible else _I16.pack(len(raw))) + raw


def encode_produce_response(version: int,
                            rows: list[tuple[str, list[tuple[int, ErrorCode, int, int, int, str | None]]]]
                            ) -> bytes:
    """The body of a Produce v3-12 response (kio's generic writer costs ~100 us per response,
    which dominates small produces). Per partition: (index, error, base offset, log append
    time, log start offset, error message)."""
    flexible = version >= 9

    def count(n: int) -> bytes:
        return encode_uvarint(n + 1) if flexible else _I32.pack(n)

    out = bytearray(count(len(rows)))
    for name, parts in rows:
        out += _string(name, flexible)
        out += count(len(parts))
        for index, code, base, append_time, start, message in parts:
            out += _PART.pack(index, code.value, base, append_time)
            if version >= 5:
                out += _I64.pack(start)
            if version >= 8:
                out += count(0)  # record_errors
                out += _string(message, flexible)
            if flexible:
                out.append(0)
        if flexible:
            out.append(0)
    out += _I32.pack(0)  # throttle time
    if flexible:
        out.append(0)
    return bytes(out)


class ProduceResponseBytes:
    """A Produce response body encoded by hand, framed here."""

    __slots__ = ("body",)

    def __init__(self, body: bytes) -> None:
        self.body = body

    def write_to(self, transport: Any, correlation_id: int, api_codec: Any) -> None:
        header = _I32.pack(correlation_id) + (b"\x00" if api_codec.flexible else b"")
        transport.write(_I32.pack(len(header) + len(self.body)) + header + self.body)


class _CloseConnection:
    """A 'response' that closes the connection instead of answering."""

    def write_to(self, transport: Any, correlation_id: int, api_codec: Any) -> None:
        log.info("closing connection after a failed acks=0 produce (correlation id %d)",
                 correlation_id)
        transport.close()


_CLOSE_CONNECTION = _CloseConnection()


@api(0, 0, 12, min_accepted=3)
def handle_produce(ctx: RequestContext, req: Any):
    acks = req.acks

    results: list[tuple[str, list[tuple[int, Any]]]] = []
    pending: list[Any] = []
    for tdata in req.topic_data:
        parts: list[tuple[int, Any]] = []
        for pdata in tdata.partition_data:
            if acks not in (0, 1, -1):
                outcome: Any = _Failed(ErrorCode.invalid_required_acks, "Invalid required acks")
            else:
                try:
                    outcome = _append(ctx, tdata.name, pdata.index, pdata.records, acks)
                    ctx.broker.stats.produced(tdata.name, len(pdata.records))
                    if not isinstance(outcome, AppendInfo):
                        pending.append(outcome)
                except _Failed as failed:
                    outcome = failed
                    log.info("produce to %s-%d rejected: %s", tdata.name, pdata.index, failed.message)
            parts.append((pdata.index, outcome))
        results.append((tdata.name, parts))

    def build(done: dict[int, Any]) -> ProduceResponseBytes:
        rows: list[tuple[str, list[tuple[int, ErrorCode, int, int, int, str | None]]]] = []
        for name, parts in results:
            out = []
            for index, outcome in parts:
                if not isinstance(outcome, _Failed):
                    outcome = outcome if isinstance(outcome, AppendInfo) else done[id(outcome)]
                    if isinstance(outcome, BaseException):
                        outcome = _map_error(outcome)
                if isinstance(outcome, _Failed):
                    out.append((index, outcome.code, -1, -1, -1, outcome.message))
                else:
                    out.append((index, ErrorCode.none, outcome.base_offset, outcome.log_append_time,
                                outcome.log_start_offset, None))
            rows.append((name, out))
        return ProduceResponseBytes(encode_produce_response(ctx.api_version, rows))

    def answer(done: dict[int, Any]) -> Any:
        if acks == 0:
            failed = any(isinstance(o, _Failed) for _, parts in results for _, o in parts) or any(
                isinstance(v, BaseException) for v in done.values())
            # Kafka closes the connection when an acks=0 produce fails: the client's only signal.
            return _CLOSE_CONNECTION if failed else NO_RESPONSE
        return build(done)

    if not pending:  # everything was written inline (or rejected): answer without a task
        return answer({})

    async def finish() -> Any:
        done: dict[int, Any] = {}
        if len(pending) == 1:
            try:
                done[id(pending[0])] = await pending[0]
            except Exception as exc:  # noqa: BLE001
                done[id(pending[0])] = exc
        else:
            values = await asyncio.gather(*pending, return_exceptions=True)
            done = {id(p): v for p, v in zip(pending, values, strict=True)}
        return answer(done)

    return finish()
