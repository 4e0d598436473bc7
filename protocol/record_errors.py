"""The two ways a v2 record batch is refused, as exceptions that carry Kafka's error code.

Imports nothing: protocol/varint.py raises ``CorruptRecordError`` for an over-long record varint.
"""

from __future__ import annotations


class CorruptRecordError(ValueError):
    """Bytes that do not form a valid v2 record batch (Kafka's CORRUPT_MESSAGE)."""

    code = 2


class InvalidRecordError(CorruptRecordError):
    """A well-formed batch that breaks a rule of the log (Kafka's INVALID_RECORD)."""

    code = 87
