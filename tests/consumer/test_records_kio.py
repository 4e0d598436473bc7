"""Cross-check of the consumer-group record values against an independent encoder: kio's
generic entity writer/reader (the library behind the wire codecs) over dataclasses transcribed
from Kafka's JSON schemas, on randomized values. ClassicMemberMetadata (a tagged nullable
struct, which kio encodes without Kafka's presence byte) is covered by the hand-built golden
bytes in test_records.py instead."""

# no "from __future__ import annotations": kio reads the field types at runtime

import io
import random
import uuid
from dataclasses import dataclass, field
from typing import ClassVar

import pytest
from kio.serial import entity_reader, entity_writer
from kio.static.constants import EntityType
from kio.static.primitive import i8, i16, i32, i64

from kafkette.protocol import consumer_group_records as cgr

FLEX: dict = dict(frozen=True, slots=True, kw_only=True)


class _Schema:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True


@dataclass(**FLEX)
class KMetadata(_Schema):
    epoch: i32 = field(metadata={"kafka_type": "int32"})


@dataclass(**FLEX)
class KPartitionRacks(_Schema):
    partition: i32 = field(metadata={"kafka_type": "int32"})
    racks: tuple[str, ...] = field(metadata={"kafka_type": "string"})


@dataclass(**FLEX)
class KTopicMetadata(_Schema):
    topic_id: uuid.UUID = field(metadata={"kafka_type": "uuid"})
    topic_name: str = field(metadata={"kafka_type": "string"})
    num_partitions: i32 = field(metadata={"kafka_type": "int32"})
    partition_metadata: tuple[KPartitionRacks, ...]


@dataclass(**FLEX)
class KPartitionMetadata(_Schema):
    topics: tuple[KTopicMetadata, ...]


@dataclass(**FLEX)
class KMemberMetadata(_Schema):
    instance_id: str | None = field(metadata={"kafka_type": "string"})
    rack_id: str | None = field(metadata={"kafka_type": "string"})
    client_id: str = field(metadata={"kafka_type": "string"})
    client_host: str = field(metadata={"kafka_type": "string"})
    subscribed_topic_names: tuple[str, ...] = field(metadata={"kafka_type": "string"})
    subscribed_topic_regex: str | None = field(metadata={"kafka_type": "string"})
    rebalance_timeout_ms: i32 = field(metadata={"kafka_type": "int32"})
    server_assignor: str | None = field(metadata={"kafka_type": "string"})


@dataclass(**FLEX)
class KTargetMetadata(_Schema):
    assignment_epoch: i32 = field(metadata={"kafka_type": "int32"})


@dataclass(**FLEX)
class KTopicPartitions(_Schema):
    topic_id: uuid.UUID = field(metadata={"kafka_type": "uuid"})
    partitions: tuple[i32, ...] = field(metadata={"kafka_type": "int32"})


@dataclass(**FLEX)
class KTargetMember(_Schema):
    topic_partitions: tuple[KTopicPartitions, ...]


@dataclass(**FLEX)
class KCurrentAssignment(_Schema):
    member_epoch: i32 = field(metadata={"kafka_type": "int32"})
    previous_member_epoch: i32 = field(metadata={"kafka_type": "int32"})
    state: i8 = field(metadata={"kafka_type": "int8"})
    assigned_partitions: tuple[KTopicPartitions, ...]
    partitions_pending_revocation: tuple[KTopicPartitions, ...]


@dataclass(**FLEX)
class KRegex(_Schema):
    topics: tuple[str, ...] = field(metadata={"kafka_type": "string"})
    version: i64 = field(metadata={"kafka_type": "int64"})
    timestamp: i64 = field(metadata={"kafka_type": "int64"})


def names(rng, n):
    alphabet = "abcxyz-._é€"
    return tuple("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 150)))
                 for _ in range(n))


def maybe(rng, value):
    return None if rng.random() < 0.3 else value


def tps(rng):
    items = [(uuid.UUID(int=rng.getrandbits(128)),
              tuple(rng.randrange(-1, 2**31) for _ in range(rng.randint(0, 140))))
             for _ in range(rng.randint(0, 4))]
    ours = tuple(cgr.TopicPartitions(t, ps) for t, ps in items)
    theirs = tuple(KTopicPartitions(topic_id=t, partitions=tuple(map(i32, ps))) for t, ps in items)
    return ours, theirs


def random_pair(rng, kind):
    if kind == 3:
        e = rng.randrange(-2**31, 2**31)
        return cgr.ConsumerGroupMetadataValue(e), KMetadata(epoch=i32(e))
    if kind == 4:
        topics = []
        for _ in range(rng.randint(0, 3)):
            tid, name, n = uuid.UUID(int=rng.getrandbits(128)), names(rng, 1)[0], rng.randint(0, 999)
            racks = [(rng.randint(0, 9), names(rng, rng.randint(0, 3))) for _ in range(rng.randint(0, 2))]
            topics.append((tid, name, n, racks))
        ours = cgr.ConsumerGroupPartitionMetadataValue(tuple(
            cgr.TopicMetadata(t, nm, n, tuple(cgr.PartitionRacks(p, r) for p, r in rk))
            for t, nm, n, rk in topics))
        theirs = KPartitionMetadata(topics=tuple(
            KTopicMetadata(topic_id=t, topic_name=nm, num_partitions=i32(n), partition_metadata=tuple(
                KPartitionRacks(partition=i32(p), racks=r) for p, r in rk)) for t, nm, n, rk in topics))
        return ours, theirs
    if kind == 5:
        f = dict(instance_id=maybe(rng, names(rng, 1)[0]), rack_id=maybe(rng, "rack"),
                 client_id=names(rng, 1)[0], client_host="/127.0.0.1",
                 subscribed_topic_names=names(rng, rng.randint(0, 5)),
                 subscribed_topic_regex=maybe(rng, ".*"),
                 rebalance_timeout_ms=rng.randrange(-1, 2**31),
                 server_assignor=maybe(rng, "uniform"))
        return (cgr.ConsumerGroupMemberMetadataValue(**f),
                KMemberMetadata(**{**f, "rebalance_timeout_ms": i32(f["rebalance_timeout_ms"])}))
    if kind == 6:
        e = rng.randrange(-1, 2**31)
        return cgr.ConsumerGroupTargetAssignmentMetadataValue(e), KTargetMetadata(assignment_epoch=i32(e))
    if kind == 7:
        ours, theirs = tps(rng)
        return cgr.ConsumerGroupTargetAssignmentMemberValue(ours), KTargetMember(topic_partitions=theirs)
    if kind == 8:
        (a, ka), (p, kp) = tps(rng), tps(rng)
        e, prev, st = rng.randrange(-2, 2**31), rng.randrange(-2, 2**31), rng.choice([0, 1, 2, 127])
        return (cgr.ConsumerGroupCurrentMemberAssignmentValue(e, prev, st, a, p),
                KCurrentAssignment(member_epoch=i32(e), previous_member_epoch=i32(prev),
                                   state=i8(st), assigned_partitions=ka,
                                   partitions_pending_revocation=kp))
    topics, version, ts = names(rng, rng.randint(0, 6)), rng.randrange(2**63), rng.randrange(2**63)
    return (cgr.ConsumerGroupRegularExpressionValue(topics, version, ts),
            KRegex(topics=topics, version=i64(version), timestamp=i64(ts)))


KEYS = {3: cgr.ConsumerGroupMetadataKey("g"), 4: cgr.ConsumerGroupPartitionMetadataKey("g"),
        5: cgr.ConsumerGroupMemberMetadataKey("g", "m"),
        6: cgr.ConsumerGroupTargetAssignmentMetadataKey("g"),
        7: cgr.ConsumerGroupTargetAssignmentMemberKey("g", "m"),
        8: cgr.ConsumerGroupCurrentMemberAssignmentKey("g", "m"),
        16: cgr.ConsumerGroupRegularExpressionKey("g", "r")}


@pytest.mark.parametrize("kind", sorted(KEYS))
@pytest.mark.parametrize("seed", range(25))
def test_same_bytes_as_kio(kind, seed):
    rng = random.Random(seed * 100 + kind)
    ours, theirs = random_pair(rng, kind)
    buf = io.BytesIO()
    entity_writer(type(theirs))(buf, theirs)
    expected = b"\x00\x00" + buf.getvalue()  # value version 0
    assert cgr.encode_value(ours) == expected
    assert cgr.decode_value(KEYS[kind], expected) == ours
    decoded, size = entity_reader(type(theirs))(cgr.encode_value(ours), 2)
    assert decoded == theirs and size == len(expected) - 2
