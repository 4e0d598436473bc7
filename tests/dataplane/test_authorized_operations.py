"""Authorized operations without an authorizer: Kafka answers every operation a resource supports
(AclEntry.supportedOperations), as confluent-kafka's describe_topics / describe_cluster see them."""

from __future__ import annotations

from confluent_kafka import TopicCollection
from confluent_kafka.admin import AclOperation, NewTopic

TOPIC_OPERATIONS = {AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE,
                    AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE,
                    AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}
CLUSTER_OPERATIONS = {AclOperation.CREATE, AclOperation.ALTER, AclOperation.DESCRIBE,
                      AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS,
                      AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE}


def test_describe_topics_and_cluster_answer_every_supported_operation(kafka_broker):
    admin = kafka_broker.admin()
    admin.create_topics([NewTopic("ops", 2, 1)])["ops"].result(30)
    described = admin.describe_topics(TopicCollection(["ops"]),
                                      include_authorized_operations=True)["ops"].result(30)
    assert set(described.authorized_operations) == TOPIC_OPERATIONS
    cluster = admin.describe_cluster(include_authorized_operations=True).result(30)
    assert set(cluster.authorized_operations) == CLUSTER_OPERATIONS
    # Not asked: omitted, as in Kafka.
    assert admin.describe_cluster().result(30).authorized_operations is None
