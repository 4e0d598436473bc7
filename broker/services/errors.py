"""The one place where storage and validation failures become Kafka error codes."""

from __future__ import annotations

import logging

from kio.schema.errors import ErrorCode

from kafkette.protocol.records import CorruptRecordError
from kafkette.storage.errors import (
    InvalidTimestampError,
    KafkaStorageError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
)
from kafkette.storage.producer_state import InvalidProducerEpochError, OutOfOrderSequenceError
from kafkette.storage.topic_config import InvalidConfigError
from kafkette.storage.topics import TopicExistsError

log = logging.getLogger("kafkette.services")

UNKNOWN_PARTITION_MESSAGE = "This server does not host this topic-partition."


class ServiceError(Exception):
    """A request a service refuses: the Kafka error code and the message Kafka sends."""

    def __init__(self, code: ErrorCode, message: str | None = None,
                 record_errors: tuple[tuple[int, str | None], ...] = ()) -> None:
        super().__init__(message or code.name)
        self.code = code
        self.message = message
        # Produce: (batch index, message) of each refused record (ProduceResponse v8+)
        self.record_errors = record_errors


_CODES: tuple[tuple[type[BaseException], ErrorCode], ...] = (
    (OutOfOrderSequenceError, ErrorCode.out_of_order_sequence_number),
    (InvalidProducerEpochError, ErrorCode.invalid_producer_epoch),
    (RecordTooLargeError, ErrorCode.message_too_large),
    (InvalidTimestampError, ErrorCode.invalid_timestamp),
    (OffsetOutOfRangeError, ErrorCode.offset_out_of_range),
    (InvalidConfigError, ErrorCode.invalid_config),
    (TopicExistsError, ErrorCode.topic_already_exists),
    (KafkaStorageError, ErrorCode.kafka_storage_error),
    (OSError, ErrorCode.kafka_storage_error),
)


def service_error(exc: BaseException) -> ServiceError:
    """The ServiceError for any exception a service call raised (unknown ones are logged)."""
    if isinstance(exc, ServiceError):
        return exc
    if isinstance(exc, CorruptRecordError):  # CORRUPT_MESSAGE or INVALID_RECORD, as validated
        return ServiceError(ErrorCode(exc.code), str(exc),
                            tuple(getattr(exc, "record_errors", ())))
    for kind, code in _CODES:
        if isinstance(exc, kind):
            return ServiceError(code, str(exc))
    log.error("unexpected failure: %r", exc)
    return ServiceError(ErrorCode.unknown_server_error, str(exc))


def unknown_partition() -> ServiceError:
    return ServiceError(ErrorCode.unknown_topic_or_partition, UNKNOWN_PARTITION_MESSAGE)
