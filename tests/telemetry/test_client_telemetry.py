"""Client telemetry (KIP-714): subscriptions as CLIENT_METRICS config resources set with
``kafkette client-metrics``, a confluent-kafka producer pushing its metrics, which /v1/clients
and /metrics show for its client id; GetTelemetrySubscriptions / PushTelemetry refusals as
Kafka's."""

from __future__ import annotations

import io
import json
import time
import urllib.request
import uuid

import pytest
from confluent_kafka import Producer
from kio.schema.errors import ErrorCode

from kafkette.broker.cli.client_metrics_command import run as client_metrics
from tests.wire import WireClient


def cli(bootstrap: str, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return client_metrics(["--bootstrap-server", bootstrap, *argv], out, err), out.getvalue(), \
        err.getvalue()


@pytest.fixture
def broker(kafka_broker_factory):
    return kafka_broker_factory(**{"admin.listener": "127.0.0.1:0"})


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return answer.read()


def test_a_producers_pushed_metrics_show_per_client(broker) -> None:
    b = broker.bootstrap
    assert cli(b, "--alter", "--name", "producers", "--metrics", "org.apache.kafka.producer.",
               "--interval", "300", "--match", "client_id=telemetry-.*") == (
        0, "Altered client metrics config for producers.\n", "")
    producer = Producer({"bootstrap.servers": b, "client.id": "telemetry-app",
                         "enable.metrics.push": True})
    for _ in range(50):
        producer.produce("telemetry-topic", b"x" * 100)
    producer.flush(30)
    url = broker.broker.admin.url
    deadline = time.monotonic() + 20
    clients: list = []
    while time.monotonic() < deadline:
        producer.poll(0.2)
        clients = [c for c in json.loads(_get(url + "/v1/clients"))
                   if c["client_id"] == "telemetry-app" and c["metrics"]]
        if clients:
            break
    assert clients, "no metrics pushed"
    [client] = clients
    assert client["requested_metrics"] == ["org.apache.kafka.producer."]
    assert client["push_interval_ms"] == 300
    uuid.UUID(client["client_instance_id"])
    names = {m["name"] for m in client["metrics"]}
    assert "org.apache.kafka.producer.record.queue.time.avg" in names
    assert all(name.startswith("org.apache.kafka.producer.") for name in names)
    text = _get(url + "/metrics").decode()
    assert any(line.startswith("kafkette_client_metric{") and 'client_id="telemetry-app"' in line
               and "org.apache.kafka.producer.record.queue.time.avg" in line
               for line in text.splitlines())
    page = _get(url + "/clients").decode()
    assert "<h2>telemetry-app</h2>" in page
    assert "org.apache.kafka.producer.record.queue.time.avg" in page
    producer.flush(5)


def test_client_metrics_command_alters_describes_lists_and_deletes(broker) -> None:
    b = broker.bootstrap
    assert cli(b, "--alter", "--name", "a", "--metrics", "*", "--interval", "1000")[0] == 0
    assert cli(b, "--alter", "--name", "b", "--metrics", "org.apache.kafka.consumer.")[0] == 0
    assert cli(b, "--list") == (0, "a\nb\n", "")
    assert cli(b, "--describe", "--name", "a") == (
        0, "Client metrics configs for a are:\n  interval.ms=1000\n  match=\n  metrics=*\n", "")
    code, _, err = cli(b, "--alter", "--name", "a", "--interval", "50")
    assert code == 1
    assert err == ("Error: Invalid value 50 for interval.ms, interval must be between 100 and "
                   "3600000 (1 hour)\n")
    code, _, err = cli(b, "--alter", "--name", "a", "--match", "client_colour=red")
    assert code == 1 and err == "Error: Illegal client matching pattern: client_colour=red\n"
    assert cli(b, "--delete", "--name", "a") == (0, "Deleted client metrics config for a.\n", "")
    assert cli(b, "--list") == (0, "b\n", "")
    broker.restart()  # kept in log.dirs
    assert cli(broker.bootstrap, "--list") == (0, "b\n", "")


def test_push_refusals_are_kafkas(broker) -> None:
    b = broker.bootstrap
    assert cli(b, "--alter", "--name", "all", "--metrics", "*", "--interval", "60000")[0] == 0
    with WireClient(b, client_id="raw-client") as w:
        r = w.request(71, 0, client_instance_id=None)
        assert r.error_code == ErrorCode.none
        assert list(r.requested_metrics) == ["*"]
        assert list(r.accepted_compression_types) == [4, 3, 1, 2]
        assert r.push_interval.total_seconds() == 60 and r.delta_temporality
        iid, sub = r.client_instance_id, r.subscription_id
        # asked again before the push interval
        assert w.request(71, 0, client_instance_id=iid).error_code == \
            ErrorCode.throttling_quota_exceeded

        def push(subscription: int, **fields) -> ErrorCode:
            body = {"client_instance_id": iid, "subscription_id": subscription,
                    "terminating": False, "compression_type": 0, "metrics": b""} | fields
            return w.request(72, 0, **body).error_code

        assert push(sub + 1) == ErrorCode.unknown_subscription_id
        # the first push after GetTelemetrySubscriptions is accepted, the next one is early
        assert w.request(71, 0, client_instance_id=iid).error_code == ErrorCode.none
        assert push(sub) == ErrorCode.none
        assert push(sub) == ErrorCode.throttling_quota_exceeded
        assert push(sub, terminating=True, metrics=b"not protobuf \xff") == \
            ErrorCode.invalid_record
        assert push(sub, terminating=True) == ErrorCode.invalid_request  # after terminating
        assert w.request(72, 0, client_instance_id=None, subscription_id=0, terminating=False,
                         compression_type=0, metrics=b"").error_code == ErrorCode.invalid_request


def test_a_changed_subscription_is_a_new_subscription_id(broker) -> None:
    b = broker.bootstrap
    assert cli(b, "--alter", "--name", "s", "--metrics", "a.", "--interval", "60000")[0] == 0
    with WireClient(b, client_id="raw-client") as w:
        first = w.request(71, 0, client_instance_id=None)
        iid = first.client_instance_id
        assert cli(b, "--alter", "--name", "s", "--metrics", "b.")[0] == 0
        # the push with the old id is refused; the client may ask again at once
        assert w.request(72, 0, client_instance_id=iid, subscription_id=first.subscription_id,
                         terminating=False, compression_type=0, metrics=b"").error_code == \
            ErrorCode.unknown_subscription_id
        again = w.request(71, 0, client_instance_id=iid)
        assert again.error_code == ErrorCode.none and again.client_instance_id == iid
        assert again.subscription_id != first.subscription_id
        assert list(again.requested_metrics) == ["b."]
