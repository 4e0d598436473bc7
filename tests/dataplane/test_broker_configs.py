"""Dynamic broker configs with confluent-kafka's AdminClient: a per-broker value (resource "1")
and a cluster-wide default (resource ""), described with their sources, refused for a config
that cannot change at run time, applied to the logs at once and kept across a restart."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)
from kio.schema.errors import ErrorCode

from kafkette.protocol.codec import request_type
from tests.wire import WireClient, entity

# ConfigEntry.source is the wire number
DYNAMIC_BROKER = ConfigSource.DYNAMIC_BROKER_CONFIG.value
DYNAMIC_DEFAULT = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
DEFAULT = ConfigSource.DEFAULT_CONFIG.value
BIG = 1_500_000  # over Kafka's default message.max.bytes (1048588)


def alter_cluster_default(bootstrap: str, **values: str) -> None:
    """IncrementalAlterConfigs on BROKER "" (confluent-kafka refuses an empty resource name)."""
    cls = request_type(44, 1)
    r_cls = type(entity(cls, "resources", resource_type=4, resource_name="", configs=()))
    configs = tuple(entity(r_cls, "configs", name=k.replace("_", "."), config_operation=0,
                           value=v) for k, v in values.items())
    with WireClient(bootstrap) as w:
        r = w.request(44, 1, resources=(entity(cls, "resources", resource_type=4,
                                               resource_name="", configs=configs),),
                      validate_only=False).responses[0]
    assert r.error_code == ErrorCode.none, r.error_message


def describe_cluster_default(bootstrap: str) -> dict[str, tuple[str, int]]:
    cls = request_type(32, 4)
    with WireClient(bootstrap) as w:
        r = w.request(32, 4, resources=(entity(cls, "resources", resource_type=4, resource_name="",
                                               configuration_keys=None),),
                      include_synonyms=False, include_documentation=False).results[0]
    return {c.name: (c.value, c.config_source) for c in r.configs}


def alter(admin, name: str, **values: str | None) -> None:
    entries = [ConfigEntry(k.replace("_", "."), v,
                           incremental_operation=AlterConfigOpType.SET if v is not None
                           else AlterConfigOpType.DELETE) for k, v in values.items()]
    resource = ConfigResource(ResourceType.BROKER, name, incremental_configs=entries)
    admin.incremental_alter_configs([resource])[resource].result(30)


def describe(admin, rtype: ResourceType, name: str) -> dict:
    resource = ConfigResource(rtype, name)
    return admin.describe_configs([resource])[resource].result(30)


def produce_big(broker, topic: str) -> KafkaError | None:
    outcome: list[KafkaError | None] = []
    producer = broker.producer({"message.max.bytes": 4_000_000, "linger.ms": 0})
    producer.produce(topic, b"x" * BIG, on_delivery=lambda err, _msg: outcome.append(err))
    producer.flush(30)
    return outcome[0]


def test_per_broker_and_default_dynamic_configs(kafka_broker):
    admin = kafka_broker.admin()
    admin.create_topics([NewTopic("dyn", 1, 1)])["dyn"].result(30)
    before = describe(admin, ResourceType.BROKER, "1")
    assert before["message.max.bytes"].source == DEFAULT
    assert not before["message.max.bytes"].is_read_only
    assert before["num.partitions"].is_read_only
    err = produce_big(kafka_broker, "dyn")
    assert err is not None and err.code() == KafkaError.MSG_SIZE_TOO_LARGE

    alter(admin, "1", message_max_bytes="2000000", log_retention_ms="3600000")
    alter_cluster_default(kafka_broker, log_cleaner_threads="2", log_retention_ms="7200000")

    def check() -> None:
        got = describe(admin, ResourceType.BROKER, "1")
        assert got["message.max.bytes"].value == "2000000"
        assert got["message.max.bytes"].source == DYNAMIC_BROKER
        # the per-broker value wins over the cluster default
        retention = got["log.retention.ms"]
        assert (retention.value, retention.source) == ("3600000", DYNAMIC_BROKER)
        assert (got["log.cleaner.threads"].value, got["log.cleaner.threads"].source) == (
            "2", DYNAMIC_DEFAULT)
        assert describe_cluster_default(kafka_broker) == {
            "log.cleaner.threads": ("2", DYNAMIC_DEFAULT),
            "log.retention.ms": ("7200000", DYNAMIC_DEFAULT)}
        topic = describe(admin, ResourceType.TOPIC, "dyn")
        assert (topic["max.message.bytes"].value, topic["max.message.bytes"].source) == (
            "2000000", DYNAMIC_BROKER)
        assert topic["retention.ms"].value == "3600000"
        assert produce_big(kafka_broker, "dyn") is None  # the log took the new limit

    check()
    kafka_broker.restart()
    admin = kafka_broker.admin()
    check()

    # Deleting the per-broker value falls back to the cluster default.
    alter(admin, "1", log_retention_ms=None)
    got = describe(admin, ResourceType.BROKER, "1")["log.retention.ms"]
    assert (got.value, got.source) == ("7200000", DYNAMIC_DEFAULT)
    assert describe(admin, ResourceType.TOPIC, "dyn")["retention.ms"].value == "7200000"


@pytest.mark.parametrize(("name", "values", "message"), [
    ("1", {"num.partitions": "3", "log.dirs": "/x"},
     "Cannot update these configs dynamically: Set(log.dirs, num.partitions)"),
    ("", {"log.cleaner.threads": "many"},
     "Invalid value many for configuration log.cleaner.threads: Not a number of type INT"),
    ("7", {"log.cleaner.threads": "2"}, "Unexpected broker id, expected 1, but received 7"),
])
def test_refused_broker_configs(kafka_broker, name, values, message):
    cls = request_type(44, 1)
    r_cls = type(entity(cls, "resources", resource_type=4, resource_name=name, configs=()))
    configs = tuple(entity(r_cls, "configs", name=k, config_operation=0, value=v)
                    for k, v in values.items())
    with WireClient(kafka_broker) as w:
        r = w.request(44, 1, resources=(entity(cls, "resources", resource_type=4,
                                               resource_name=name, configs=configs),),
                      validate_only=False).responses[0]
    assert (r.error_code, r.error_message) == (ErrorCode.invalid_request, message)
    assert describe_cluster_default(kafka_broker) == {}
