"""Every advertised API version can be decoded and answered; Metadata at every version."""

from __future__ import annotations

import uuid

import pytest

import kafkette.broker.server  # noqa: F401  (registers the routes)
from kafkette.broker.registry import ROUTES
from kafkette.protocol.codec import codec, request_type
from tests.wire import WireClient, entity


def test_every_accepted_version_has_a_codec():
    for route in ROUTES.values():
        for version in range(route.min_accepted, route.max_version + 1):
            c = codec(route.api_key, version)
            assert c.request_type.__api_key__ == route.api_key
            assert c.request_type.__version__ == version


def test_api_versions_lists_every_route(kafka_broker):
    with WireClient(kafka_broker) as client:
        response = client.request(18, 3, client_software_name="kafkette-tests",
                                  client_software_version="1.0")
    advertised = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert advertised == {r.api_key: (r.min_version, r.max_version) for r in ROUTES.values()}
    assert response.error_code == 0


@pytest.mark.parametrize("version", range(0, 14))
def test_metadata_every_version(kafka_broker_factory, version):
    broker = kafka_broker_factory(**{"num.partitions": 2})
    cls = request_type(3, version)
    wanted = (entity(cls, "topics", name="t1", topic_id=uuid.UUID(int=0)),)
    with WireClient(broker.bootstrap) as client:
        md = client.request(3, version, topics=wanted, allow_auto_topic_creation=True,
                            include_cluster_authorized_operations=False,
                            include_topic_authorized_operations=False)
        everything = client.request(3, version, topics=() if version == 0 else None,
                                    allow_auto_topic_creation=False,
                                    include_cluster_authorized_operations=False,
                                    include_topic_authorized_operations=False)
    (topic,) = md.topics
    assert topic.error_code == 0 and topic.name == "t1"
    assert sorted(p.partition_index for p in topic.partitions) == [0, 1]
    assert all(p.leader_id == 1 for p in topic.partitions)
    assert md.brokers[0].port == broker.address[1]
    if version >= 10:
        info = broker.broker.logs.topic("t1")
        assert topic.topic_id == info.topic_id
    if version >= 2:
        assert md.cluster_id == broker.broker.cluster_id
    assert "t1" in {t.name for t in everything.topics}


def test_metadata_v12_by_topic_id(kafka_broker_factory):
    broker = kafka_broker_factory()
    info = broker.run(broker.broker.logs.create_topic("by-id", 3))
    cls = request_type(3, 12)
    unknown = uuid.uuid4()
    with WireClient(broker.bootstrap) as client:
        md = client.request(3, 12, topics=(entity(cls, "topics", name=None, topic_id=info.topic_id),
                                           entity(cls, "topics", name=None, topic_id=unknown)),
                            allow_auto_topic_creation=False,
                            include_topic_authorized_operations=False)
    found, missing = md.topics
    assert (found.error_code, found.name, len(found.partitions)) == (0, "by-id", 3)
    assert (missing.error_code, missing.topic_id) == (100, unknown)  # UNKNOWN_TOPIC_ID
