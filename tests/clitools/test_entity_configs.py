"""``kafkette configs`` for topics, brokers and groups as kafka-configs.sh: the tool runs as a
real process against a broker (and a three-node cluster, where a broker's configs must be asked
of that broker); what it alters, confluent-kafka's AdminClient and producer see."""

from __future__ import annotations

import subprocess
import sys

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic, ResourceType

from tests.tools import ROOT

DEFAULT_RETENTION = "604800000"  # Kafka's log.retention.ms (log.retention.hours=168)


def configs(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkette.broker", "configs", *args],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)


def described(admin: AdminClient, kind: ResourceType, name: str) -> dict[str, tuple[str, int]]:
    resource = ConfigResource(kind, name)
    got = admin.describe_configs([resource])[resource].result(30)
    return {key: (entry.value, entry.source) for key, entry in got.items()}


def create_topic(bootstrap: str, name: str) -> AdminClient:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    return admin


def test_a_topics_configs_are_altered_described_and_seen_by_clients(kafkette_broker,
                                                                   tmp_path) -> None:
    b = kafkette_broker.bootstrap
    admin = create_topic(b, "orders")
    added = configs("--bootstrap-server", b, "--alter", "--entity-type", "topics",
                    "--entity-name", "orders", "--add-config",
                    "retention.ms=1000,cleanup.policy=[compact,delete]")
    assert (added.returncode, added.stdout, added.stderr) == (
        0, "Completed updating config for topic orders.\n", "")
    got = configs("--bootstrap-server", b, "--describe", "--topic", "orders")
    assert got.stdout == (
        "Dynamic configs for topic orders are:\n"
        "  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
        "cleanup.policy=compact,delete, DEFAULT_CONFIG:log.cleanup.policy=delete}\n"
        "  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000, "
        f"DEFAULT_CONFIG:log.retention.ms={DEFAULT_RETENTION}}}\n")
    seen = described(admin, ResourceType.TOPIC, "orders")
    assert seen["retention.ms"] == ("1000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    assert seen["cleanup.policy"] == ("compact,delete", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)

    # --add-config-file and --delete-config in one command: the deletion, then the settings
    properties = tmp_path / "topic.properties"
    properties.write_text("max.message.bytes=2048\n")
    changed = configs("--bootstrap-server", b, "--alter", "--topic", "orders",
                      "--add-config-file", str(properties), "--delete-config", "retention.ms")
    assert changed.returncode == 0
    seen = described(admin, ResourceType.TOPIC, "orders")
    assert seen["retention.ms"][1] == ConfigSource.DEFAULT_CONFIG.value
    assert seen["max.message.bytes"] == ("2048", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    # the topic is compacted now: a producer's record without a key is refused
    errors = []
    producer = Producer({"bootstrap.servers": b})
    producer.produce("orders", b"no key", on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(30)
    assert errors and errors[0].code() == KafkaError.INVALID_RECORD

    unset = configs("--bootstrap-server", b, "--alter", "--topic", "orders",
                    "--delete-config", "flush.ms,retention.ms")
    assert (unset.returncode, unset.stdout, unset.stderr) == (
        1, "", "Invalid config(s): flush.ms,retention.ms\n")


def test_an_invalid_value_and_an_unknown_topic_are_kafkas_errors(kafkette_broker) -> None:
    b = kafkette_broker.bootstrap
    create_topic(b, "orders")
    args = ["--bootstrap-server", b, "--alter", "--topic", "orders", "--add-config",
            "retention.ms=abc"]
    bad = configs(*args)
    assert bad.returncode == 1
    assert bad.stderr.splitlines() == [
        f"Error while executing config command with args '{' '.join(args)}'",
        "java.util.concurrent.ExecutionException: org.apache.kafka.common.errors."
        "InvalidConfigurationException: Invalid value abc for configuration retention.ms: "
        "Not a number of type LONG"]
    unknown = configs("--bootstrap-server", b, "--describe", "--topic", "nosuch")
    assert (unknown.returncode, unknown.stdout) == (
        0, "The topic 'nosuch' doesn't exist and doesn't have dynamic config.\n")
    altered = configs("--bootstrap-server", b, "--alter", "--topic", "nosuch", "--add-config",
                      "retention.ms=1")
    assert altered.returncode == 1
    assert altered.stderr.splitlines()[1] == (
        "java.util.concurrent.ExecutionException: org.apache.kafka.common.errors."
        "UnknownTopicOrPartitionException: The topic 'nosuch' does not exist.")


def test_describe_all_lists_every_config_with_its_defaults(kafkette_broker) -> None:
    b = kafkette_broker.bootstrap
    create_topic(b, "plain")
    topic = configs("--bootstrap-server", b, "--describe", "--all", "--topic", "plain")
    lines = topic.stdout.splitlines()
    assert lines[0] == "All configs for topic plain are:"
    assert ("  compression.type=producer sensitive=false "
            "synonyms={DEFAULT_CONFIG:compression.type=producer}") in lines
    assert len(lines) > 20 and lines[1:] == sorted(lines[1:])
    assert configs("--bootstrap-server", b, "--describe", "--topic", "plain").stdout == (
        "Dynamic configs for topic plain are:\n")
    broker = configs("--bootstrap-server", b, "--describe", "--all", "--broker", "1")
    lines = broker.stdout.splitlines()
    assert lines[0] == "All configs for broker 1 are:"
    assert (f"  log.retention.ms={DEFAULT_RETENTION} sensitive=false "
            f"synonyms={{DEFAULT_CONFIG:log.retention.ms={DEFAULT_RETENTION}}}") in lines


def test_a_groups_config_is_set_checked_and_described(kafkette_broker) -> None:
    b = kafkette_broker.bootstrap
    ok = configs("--bootstrap-server", b, "--alter", "--entity-type", "groups", "--entity-name",
                 "orders-app", "--add-config", "consumer.session.timeout.ms=8000")
    assert (ok.returncode, ok.stdout) == (0, "Completed updating config for group orders-app.\n")
    got = configs("--bootstrap-server", b, "--describe", "--group", "orders-app")
    assert got.stdout == ("Dynamic configs for group orders-app are:\n"
                          "  consumer.session.timeout.ms=8000 sensitive=false synonyms="
                          "{DYNAMIC_GROUP_CONFIG:consumer.session.timeout.ms=8000}\n")
    admin = AdminClient({"bootstrap.servers": b})
    assert described(admin, ResourceType.GROUP, "orders-app")["consumer.session.timeout.ms"] == (
        "8000", ConfigSource.GROUP_CONFIG.value)
    listed = configs("--bootstrap-server", b, "--describe", "--entity-type", "groups")
    assert "Dynamic configs for group orders-app are:" in listed.stdout.splitlines()
    low = configs("--bootstrap-server", b, "--alter", "--group", "orders-app", "--add-config",
                  "consumer.session.timeout.ms=10")
    assert low.returncode == 1
    assert low.stderr.splitlines()[1] == (
        "java.util.concurrent.ExecutionException: org.apache.kafka.common.errors."
        "InvalidConfigurationException: consumer.session.timeout.ms must be greater than or "
        "equal to group.consumer.min.session.timeout.ms")
    gone = configs("--bootstrap-server", b, "--describe", "--group", "never-seen")
    assert gone.stdout == "The group 'never-seen' doesn't exist and doesn't have dynamic config.\n"


def test_broker_configs_and_the_cluster_default_on_three_nodes(kafka_cluster) -> None:
    bootstrap = kafka_cluster.bootstrap.split(",")[0]  # node 1: node 2's configs are node 2's
    node2 = configs("--bootstrap-server", bootstrap, "--alter", "--entity-type", "brokers",
                    "--entity-name", "2", "--add-config", "log.retention.ms=1000")
    assert (node2.returncode, node2.stdout) == (0, "Completed updating config for broker 2.\n")
    default = configs("--bootstrap-server", bootstrap, "--alter", "--entity-type", "brokers",
                      "--entity-default", "--add-config", "log.retention.ms=2000")
    assert (default.returncode, default.stdout) == (
        0, "Completed updating default config for brokers in the cluster.\n")
    got = configs("--bootstrap-server", bootstrap, "--describe", "--broker", "2")
    assert got.stdout == (
        "Dynamic configs for broker 2 are:\n"
        "  log.retention.ms=1000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:"
        "log.retention.ms=1000, DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=2000, "
        f"DEFAULT_CONFIG:log.retention.ms={DEFAULT_RETENTION}}}\n")
    every = configs("--bootstrap-server", bootstrap, "--describe", "--entity-type", "brokers")
    assert [line for line in every.stdout.splitlines() if not line.startswith("  ")] == [
        "Dynamic configs for broker 1 are:", "Dynamic configs for broker 2 are:",
        "Dynamic configs for broker 3 are:", "Default configs for brokers in the cluster are:"]
    assert configs("--bootstrap-server", bootstrap, "--describe", "--entity-type", "brokers",
                   "--entity-default").stdout == (
        "Default configs for brokers in the cluster are:\n"
        "  log.retention.ms=2000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:"
        f"log.retention.ms=2000, DEFAULT_CONFIG:log.retention.ms={DEFAULT_RETENTION}}}\n")
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap})
    assert described(admin, ResourceType.BROKER, "2")["log.retention.ms"][0] == "1000"
    assert described(admin, ResourceType.BROKER, "3")["log.retention.ms"] == (
        "2000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    missing = configs("--bootstrap-server", bootstrap, "--describe", "--broker", "9")
    assert missing.stdout == "The broker '9' doesn't exist and doesn't have dynamic config.\n"
    removed = configs("--bootstrap-server", bootstrap, "--alter", "--broker-defaults",
                      "--delete-config", "log.retention.ms")
    assert removed.returncode == 0
    assert described(admin, ResourceType.BROKER, "3")["log.retention.ms"][0] == DEFAULT_RETENTION


@pytest.mark.parametrize(("args", "refusal"), [
    ([], "This tool helps to manipulate and describe entity config for a topic, client, user, "
         "broker, ip, client-metrics or group"),
    (["--bootstrap-server", "h:1", "--entity-type", "topics"],
     "Command must include exactly one action: --describe, --alter"),
    (["--bootstrap-server", "h:1", "--describe", "--topic", "t", "--add-config", "a=b"],
     'Option "[describe]" can\'t be used with option "[add-config]"'),
    (["--describe", "--entity-type", "topics"],
     "Either --bootstrap-server or --bootstrap-controller must be specified."),
    (["--bootstrap-server", "h:1", "--describe", "--entity-type", "tables"],
     "Invalid entity type tables, the entity type must be one of broker-loggers, topics, "
     "clients, users, brokers, ips, client-metrics, groups with a --bootstrap-server or "
     "--bootstrap-controller argument"),
    (["--bootstrap-server", "h:1", "--describe", "--entity-type", "topics", "--entity-type",
      "users"], "Only 'users' and 'clients' entity types may be specified together"),
    (["--bootstrap-server", "h:1", "--describe", "--topic", "t", "--topic", "u",
      "--entity-type", "topics"],
     "Duplicate entity type(s) specified: topics"),
    (["--bootstrap-server", "h:1", "--describe", "--entity-type", "brokers", "--entity-name",
      "one"], "The entity name for brokers must be a valid integer broker id, but it is: one"),
    (["--bootstrap-server", "h:1", "--describe", "--entity-type", "topics",
      "--entity-default"], "--entity-default must not be specified with --describe of topics"),
    (["--bootstrap-server", "h:1", "--alter", "--entity-type", "topics", "--add-config", "a=b"],
     "An entity name must be specified with --alter of topics"),
    (["--bootstrap-server", "h:1", "--alter", "--entity-type", "brokers", "--add-config", "a=b"],
     "An entity-name or default entity must be specified with --alter of users, clients, "
     "brokers or ips"),
    (["--bootstrap-server", "h:1", "--alter", "--topic", "t"],
     "At least one of --add-config, --add-config-file, or --delete-config must be specified "
     "with --alter"),
    (["--bootstrap-server", "h:1", "--alter", "--topic", "t", "--add-config", "a"],
     'Invalid entity config: all configs to be added must be in the format "key=val" or  '
     '"key=[val1,val2]" to group values which contain commas.'),
    (["--bootstrap-server", "h:1", "--alter", "--topic", "t", "--add-config", "a b=1"],
     "Invalid character found for config key: a b"),
])
def test_refusals_are_kafkas(args, refusal) -> None:
    refused = configs(*args)
    assert refused.returncode == 1
    assert refused.stderr.splitlines()[0] == refusal


def test_the_configs_command_line_goes_to_the_module_for_its_entity() -> None:
    from kafkette.broker.cli import client_quota_configs, configs_command, entity_configs
    from kafkette.broker.cli.main import configs_tool

    for argv, module in [
        (["--describe", "--entity-type", "topics"], entity_configs),
        (["--alter", "--broker-defaults"], entity_configs),
        (["--describe", "--group=g"], entity_configs),
        (["--describe"], entity_configs),
        (["--help"], entity_configs),
        (["--describe", "--entity-type", "clients"], client_quota_configs),
        (["--alter", "--user", "alice", "--add-config", "producer_byte_rate=1"],
         client_quota_configs),
        (["--alter", "--entity-type", "users", "--entity-name", "bob", "--add-config",
          "SCRAM-SHA-256=[password=x]"], configs_command),
    ]:
        assert configs_tool(argv) is module, argv


def test_command_config_logs_in_over_sasl_ssl(kafka_secure_broker_factory, tmp_path) -> None:
    broker = kafka_secure_broker_factory("SASL_SSL", ("SCRAM-SHA-512",))
    properties = tmp_path / "client.properties"
    properties.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="alice" password="alice-secret";\n'
        f"ssl.truststore.type=PEM\nssl.truststore.location={broker.ca_file}\n")
    common = ("--bootstrap-server", broker.bootstrap, "--command-config", str(properties))
    assert configs(*common, "--alter", "--broker", "1", "--add-config",
                   "log.retention.ms=1000").stdout == "Completed updating config for broker 1.\n"
    assert configs(*common, "--describe", "--broker", "1").stdout == (
        "Dynamic configs for broker 1 are:\n"
        "  log.retention.ms=1000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:"
        f"log.retention.ms=1000, DEFAULT_CONFIG:log.retention.ms={DEFAULT_RETENTION}}}\n")
    plaintext = configs("--bootstrap-server", broker.bootstrap, "--describe", "--broker", "1")
    assert plaintext.returncode == 1
