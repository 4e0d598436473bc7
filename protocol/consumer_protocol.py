"""The embedded consumer protocol of classic groups: ConsumerProtocolSubscription (JoinGroup
protocol metadata) and ConsumerProtocolAssignment (SyncGroup assignment), versions 0-3, encoded
with kio from Kafka's clients/src/main/resources/common/message/ConsumerProtocol*.json.

A newer version than 3 is read with the v3 format, as Kafka does (new versions may only append
fields); trailing bytes are ignored. Needed by KIP-848 migration: a classic member's
subscription/owned partitions become a consumer-group member, and a classic member of a
consumer group receives its target as a ConsumerProtocolAssignment.
"""

# No "from __future__ import annotations": kio reads the dataclass field types at runtime.

import io
import struct
from dataclasses import dataclass, field
from typing import ClassVar

from kio.serial import entity_reader, entity_writer
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32

HIGHEST_VERSION = 3
_I16 = struct.Struct(">h")


class ConsumerProtocolError(ValueError):
    """Bytes that are not a consumer protocol subscription/assignment."""


@dataclass(frozen=True, slots=True)
class Subscription:
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[tuple[str, tuple[int, ...]], ...] = ()  # v1+
    generation_id: int = -1  # v2+
    rack_id: str | None = None  # v3+


@dataclass(frozen=True, slots=True)
class Assignment:
    assigned_partitions: tuple[tuple[str, tuple[int, ...]], ...] = ()
    user_data: bytes | None = None


# kio schemas, one class per version (fields appear with their versions) ----------------------

class _Data:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False


_FROZEN: dict = dict(frozen=True, slots=True, kw_only=True)


@dataclass(**_FROZEN)
class _TopicPartition(_Data):
    topic: str = field(metadata={"kafka_type": "string"})
    partitions: tuple[i32, ...] = field(metadata={"kafka_type": "int32"})


@dataclass(**_FROZEN)
class _SubscriptionV0(_Data):
    topics: tuple[str, ...] = field(metadata={"kafka_type": "string"})
    user_data: bytes | None = field(metadata={"kafka_type": "bytes"})


@dataclass(**_FROZEN)
class _SubscriptionV1(_SubscriptionV0):
    owned_partitions: tuple[_TopicPartition, ...]


@dataclass(**_FROZEN)
class _SubscriptionV2(_SubscriptionV1):
    generation_id: i32 = field(metadata={"kafka_type": "int32"})


@dataclass(**_FROZEN)
class _SubscriptionV3(_SubscriptionV2):
    rack_id: str | None = field(metadata={"kafka_type": "string"})


@dataclass(**_FROZEN)
class _Assignment(_Data):
    assigned_partitions: tuple[_TopicPartition, ...]
    user_data: bytes | None = field(metadata={"kafka_type": "bytes"})


_SUBSCRIPTIONS = (_SubscriptionV0, _SubscriptionV1, _SubscriptionV2, _SubscriptionV3)


def _tps(items: tuple[tuple[str, tuple[int, ...]], ...]) -> tuple[_TopicPartition, ...]:
    return tuple(_TopicPartition(topic=t, partitions=tuple(i32(p) for p in ps)) for t, ps in items)


def _plain(items: tuple[_TopicPartition, ...]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    return tuple((tp.topic, tuple(tp.partitions)) for tp in items)


def _write(entity: object, version: int) -> bytes:
    buf = io.BytesIO()
    buf.write(_I16.pack(version))
    entity_writer(type(entity))(buf, entity)
    return buf.getvalue()


def _read(cls: type, data: bytes) -> tuple[int, object]:
    if len(data) < 2:
        raise ConsumerProtocolError("consumer protocol bytes truncated")
    version = _I16.unpack_from(data)[0]
    if version < 0:
        raise ConsumerProtocolError(f"unsupported consumer protocol version {version}")
    try:
        value, _size = entity_reader(cls if cls is _Assignment else
                                     _SUBSCRIPTIONS[min(version, HIGHEST_VERSION)])(data, 2)
    except Exception as exc:  # kio raises several types on malformed input
        raise ConsumerProtocolError(f"{type(exc).__name__}: {exc}") from exc
    return version, value


def encode_subscription(sub: Subscription, version: int = HIGHEST_VERSION) -> bytes:
    fields: dict = {"topics": sub.topics, "user_data": sub.user_data}
    if version >= 1:
        fields["owned_partitions"] = _tps(sub.owned_partitions)
    if version >= 2:
        fields["generation_id"] = i32(sub.generation_id)
    if version >= 3:
        fields["rack_id"] = sub.rack_id
    return _write(_SUBSCRIPTIONS[version](**fields), version)


def decode_subscription(data: bytes) -> tuple[int, Subscription]:
    """(version, subscription); fields the version lacks get their defaults."""
    version, v = _read(_SubscriptionV0, bytes(data))
    return version, Subscription(
        topics=tuple(v.topics), user_data=v.user_data,  # type: ignore[attr-defined]
        owned_partitions=_plain(getattr(v, "owned_partitions", ())),
        generation_id=getattr(v, "generation_id", -1), rack_id=getattr(v, "rack_id", None))


def encode_assignment(assignment: Assignment, version: int = HIGHEST_VERSION) -> bytes:
    """All versions share one format; the version only tells the client what it may expect."""
    return _write(_Assignment(assigned_partitions=_tps(assignment.assigned_partitions),
                              user_data=assignment.user_data), version)


def decode_assignment(data: bytes) -> tuple[int, Assignment]:
    version, v = _read(_Assignment, bytes(data))
    return version, Assignment(_plain(v.assigned_partitions), v.user_data)  # type: ignore[attr-defined]
