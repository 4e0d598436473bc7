"""WriteTxnMarkers (27) from a client, as Kafka's partition leaders answer it: a COMMIT marker
closes the producer's open transaction (read_committed consumers read on), an epoch older than
the producer's is fenced, partitions the broker does not have or lead are refused per
partition, a ``__consumer_offsets`` partition gets its marker through the group coordinator."""

from __future__ import annotations

import pytest

from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import request_type
from tests.wire import WireClient

from .helpers import FAST, create_topic, read_all
from .test_fencing import _init
from .test_isolation import _list_offset
from .test_transactions_cli import UNVERIFIED, produce_unadded

WRITE_TXN_MARKERS = 27
NONE, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, INVALID_PRODUCER_EPOCH = 0, 3, 6, 47


def write_markers(bootstrap: str, pid: int, epoch: int, commit: bool,
                  partitions: list[tuple[str, int]], version: int = 1) -> list[int]:
    """The error code of each partition, in request order."""
    marker_cls = item_type(request_type(WRITE_TXN_MARKERS, version), "markers")
    topic_cls = item_type(marker_cls, "topics")
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    with WireClient(bootstrap) as w:
        r = w.request(WRITE_TXN_MARKERS, version, markers=(make(
            marker_cls, producer_id=pid, producer_epoch=epoch, transaction_result=commit,
            coordinator_epoch=0, transaction_version=0, topics=tuple(
                make(topic_cls, name=t, partition_indexes=tuple(ps))
                for t, ps in by_topic.items())),))
    (marker,) = r.markers
    assert marker.producer_id == pid
    return [int(p.error_code) for t in marker.topics for p in t.partitions]


@pytest.mark.parametrize("version", [1, 2])
def test_commit_marker_closes_the_transaction(kafka_broker_factory, version):
    broker = kafka_broker_factory(UNVERIFIED)
    create_topic(broker.bootstrap, "m")
    with WireClient(broker.bootstrap) as w:
        _error, pid, epoch = _init(w, "marked-app")
    assert produce_unadded(broker.bootstrap, "marked-app", "m", 0, pid, epoch, b"kept") == 0
    assert _list_offset(broker.bootstrap, "m", 1) == 0
    assert write_markers(broker.bootstrap, pid, epoch, True, [("m", 0), ("m", 5), ("nope", 0)],
                         version) == [NONE, UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_OR_PARTITION]
    assert _list_offset(broker.bootstrap, "m", 1) == 2  # the batch 0, the COMMIT marker 1
    assert read_all(broker.bootstrap, "m", "read_committed", expect=1) == [b"kept"]


def test_older_epoch_is_fenced(kafka_broker_factory):
    broker = kafka_broker_factory(UNVERIFIED)
    create_topic(broker.bootstrap, "f")
    with WireClient(broker.bootstrap) as w:
        _error, pid, _epoch = _init(w, "fenced-app")
    assert produce_unadded(broker.bootstrap, "fenced-app", "f", 0, pid, 3) == 0
    assert write_markers(broker.bootstrap, pid, 2, False, [("f", 0)]) == [INVALID_PRODUCER_EPOCH]
    assert _list_offset(broker.bootstrap, "f", 1) == 0  # still open
    assert write_markers(broker.bootstrap, pid, 3, False, [("f", 0)]) == [NONE]
    assert _list_offset(broker.bootstrap, "f", 1) == 2


def test_offsets_partition_marker_goes_through_the_group_coordinator(kafka_broker_factory):
    broker = kafka_broker_factory(FAST)
    with WireClient(broker.bootstrap) as w:
        _error, pid, epoch = _init(w, "offsets-app")  # __consumer_offsets exists from here on
    assert write_markers(broker.bootstrap, pid, epoch, False,
                         [("__consumer_offsets", 0)]) == [NONE]


def test_only_the_leader_writes_markers(kafka_cluster_factory):
    cluster = kafka_cluster_factory(3, UNVERIFIED)
    create_topic(cluster.bootstrap, "led")
    nodes = {n["id"]: f"{n['host']}:{n['port']}" for n in cluster.nodes}
    leader = cluster.leader_of("led", 0)
    other = next(node for node in nodes if node != leader)
    with WireClient(nodes[leader]) as w:
        _error, pid, epoch = _init(w, "led-app")
    assert produce_unadded(nodes[leader], "led-app", "led", 0, pid, epoch) == 0
    assert write_markers(nodes[other], pid, epoch, False, [("led", 0)]) == [NOT_LEADER_OR_FOLLOWER]
    assert write_markers(nodes[leader], pid, epoch, False, [("led", 0)]) == [NONE]
