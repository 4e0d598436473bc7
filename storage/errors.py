"""The errors a partition log raises, each with the Kafka error code the broker answers."""

from __future__ import annotations


class OffsetOutOfRangeError(Exception):
    code = 1  # OFFSET_OUT_OF_RANGE


class RecordTooLargeError(Exception):
    code = 10  # MESSAGE_TOO_LARGE


class InvalidTimestampError(Exception):
    code = 32  # INVALID_TIMESTAMP


class KafkaStorageError(Exception):
    code = 56  # KAFKA_STORAGE_ERROR


__all__ = ["InvalidTimestampError", "KafkaStorageError", "OffsetOutOfRangeError",
           "RecordTooLargeError"]
