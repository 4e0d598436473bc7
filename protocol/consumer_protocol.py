"""ConsumerProtocolSubscription / ConsumerProtocolAssignment: the bytes the classic consumer
protocol embeds in JoinGroup metadata and SyncGroup assignments (Kafka's ConsumerProtocol).

Tolerant like Kafka: the leading int16 picks the schema version, a version newer than the newest
known one is read with the newest schema (later versions only append fields), trailing bytes are
ignored, and a negative version is an error.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from typing import Any

from kio.schema.consumer_protocol_assignment import v0 as _a0
from kio.schema.consumer_protocol_assignment import v1 as _a1
from kio.schema.consumer_protocol_assignment import v2 as _a2
from kio.schema.consumer_protocol_assignment import v3 as _a3
from kio.schema.consumer_protocol_subscription import v0 as _s0
from kio.schema.consumer_protocol_subscription import v1 as _s1
from kio.schema.consumer_protocol_subscription import v2 as _s2
from kio.schema.consumer_protocol_subscription import v3 as _s3
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import SerialError
from kio.static.primitive import i32

_SUBSCRIPTION_READERS = tuple(entity_reader(m.ConsumerProtocolSubscription)
                              for m in (_s0, _s1, _s2, _s3))
_ASSIGNMENT_READERS = tuple(entity_reader(m.ConsumerProtocolAssignment)
                            for m in (_a0, _a1, _a2, _a3))
_ASSIGNMENT_MODULES = (_a0.data, _a1.data, _a2.data, _a3.data)
HIGHEST_VERSION = 3


class ConsumerProtocolError(ValueError):
    """The bytes are not a consumer-protocol subscription/assignment."""


def _read(readers: tuple[Any, ...], data: bytes, what: str) -> Any:
    if len(data) < 2:
        raise ConsumerProtocolError(f"{what} too short")
    version = int.from_bytes(data[:2], "big", signed=True)
    if version < 0:
        raise ConsumerProtocolError(f"unsupported {what} version {version}")
    try:
        value, _end = readers[min(version, len(readers) - 1)](memoryview(data), 2)
    except (SerialError, UnicodeDecodeError, ValueError, IndexError, OverflowError) as exc:
        raise ConsumerProtocolError(f"malformed {what}: {exc}") from exc
    return value


def decode_subscription(data: bytes) -> Any:
    """The ConsumerProtocolSubscription in ``data`` (kio entity of the version read)."""
    return _read(_SUBSCRIPTION_READERS, data, "subscription")


def decode_assignment(data: bytes) -> Any:
    """The ConsumerProtocolAssignment in ``data`` (kio entity of the version read)."""
    return _read(_ASSIGNMENT_READERS, data, "assignment")


def subscription_topics(data: bytes) -> list[str]:
    """Topics a consumer-protocol subscription names; ConsumerProtocolError if undecodable."""
    return list(decode_subscription(data).topics)


def assignment_partitions(data: bytes) -> list[tuple[str, int]]:
    """(topic, partition) pairs of a consumer-protocol assignment; ConsumerProtocolError if
    undecodable."""
    return [(tp.topic, int(p)) for tp in decode_assignment(data).assigned_partitions
            for p in tp.partitions]


def assignment_partitions_or_empty(data: bytes) -> list[tuple[str, int]]:
    """(topic, partition) pairs of a consumer-protocol assignment; [] when the bytes are empty or
    not decodable (for display: describing a group never fails on a member's assignment)."""
    try:
        return assignment_partitions(data)
    except ConsumerProtocolError:
        return []


def version_of(data: bytes) -> int:
    """The schema version the bytes declare (their leading int16)."""
    return int.from_bytes(data[:2], "big", signed=True)


def encode_assignment(partitions: Iterable[tuple[str, Iterable[int]]], version: int) -> bytes:
    """A ConsumerProtocolAssignment without user data, in ``version``'s schema (versions above
    the newest known one are written with the newest schema and their own version number)."""
    module = _ASSIGNMENT_MODULES[min(max(version, 0), HIGHEST_VERSION)]
    value = module.ConsumerProtocolAssignment(
        assigned_partitions=tuple(module.TopicPartition(topic=t, partitions=tuple(map(i32, ps)))
                                  for t, ps in partitions),
        user_data=None)
    buf = io.BytesIO()
    buf.write(version.to_bytes(2, "big", signed=True))
    entity_writer(module.ConsumerProtocolAssignment)(buf, value)
    return buf.getvalue()
