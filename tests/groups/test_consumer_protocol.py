"""KIP-848 (``group.protocol=consumer``) is advertised but disabled, as in Kafka 4.0 with the
consumer protocol off: ConsumerGroupHeartbeat/Describe v0-1 answer UNSUPPORTED_VERSION, so
librdkafka fails fast instead of hanging. Classic consumers are covered by the other tests."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import timedelta

import pytest
from kio.schema.errors import ErrorCode

from tests.wire import WireClient

_HEARTBEAT, _DESCRIBE = 68, 69


def test_api_versions_advertises_the_consumer_protocol(kafka_broker):
    with WireClient(kafka_broker) as client:
        response = client.request(18, 3, client_software_name="kafkette-tests",
                                  client_software_version="1.0")
    advertised = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert advertised[_HEARTBEAT] == (0, 1)
    assert advertised[_DESCRIBE] == (0, 1)


@pytest.mark.parametrize("version", [0, 1])
def test_heartbeat_answers_unsupported_version(kafka_broker, version):
    with WireClient(kafka_broker) as client:
        response = client.request(
            _HEARTBEAT, version, group_id="g", member_id="m-1", member_epoch=0, instance_id=None,
            rack_id=None, rebalance_timeout=timedelta(seconds=30), subscribed_topic_names=("t",),
            subscribed_topic_regex=None, server_assignor=None, topic_partitions=())
        # The connection stays usable after the refusal.
        again = client.request(_HEARTBEAT, version, group_id="g", member_id="m-1",
                               member_epoch=-1, instance_id=None, rack_id=None,
                               rebalance_timeout=timedelta(seconds=30),
                               subscribed_topic_names=None, subscribed_topic_regex=None,
                               server_assignor=None, topic_partitions=None)
    assert response.__version__ == version
    assert response.error_code == ErrorCode.unsupported_version
    assert response.member_id is None and response.member_epoch == 0
    assert response.heartbeat_interval == timedelta(0) and response.assignment is None
    assert again.error_code == ErrorCode.unsupported_version


@pytest.mark.parametrize("version", [0, 1])
def test_describe_answers_unsupported_version_per_group(kafka_broker, version):
    with WireClient(kafka_broker) as client:
        response = client.request(_DESCRIBE, version, group_ids=("a", "b"),
                                  include_authorized_operations=False)
    assert response.__version__ == version
    assert [(g.group_id, g.error_code) for g in response.groups] == [
        ("a", ErrorCode.unsupported_version), ("b", ErrorCode.unsupported_version)]
    assert all(g.members == () and g.group_epoch == 0 for g in response.groups)


_CONSUMER_PROTOCOL_CLIENT = textwrap.dedent("""
    import sys, time
    from confluent_kafka import Consumer
    errors = []
    consumer = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "kip848",
                         "group.protocol": "consumer", "error_cb": errors.append})
    consumer.subscribe(["kip848-topic"])
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            try:
                msg = consumer.poll(0.2)
            except Exception as exc:  # a fatal consumer error raises from poll
                errors.append(exc)
                msg = None
            if msg is not None and msg.error():
                errors.append(msg.error())
            if errors:
                break
    finally:
        print("ERRORS:", " | ".join(str(e) for e in errors), flush=True)
        consumer.close()
""")


def test_librdkafka_consumer_protocol_fails_fast(kafka_broker):
    pytest.importorskip("confluent_kafka")
    done = subprocess.run([sys.executable, "-c", _CONSUMER_PROTOCOL_CLIENT, kafka_broker],
                          capture_output=True, text=True, timeout=60)
    out = done.stdout + done.stderr
    errors = out.split("ERRORS:", 1)[1] if "ERRORS:" in out else ""
    # Before key 68 was advertised librdkafka looped silently: no error at all within 30 s.
    assert "version" in errors.lower(), out
