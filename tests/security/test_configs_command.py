"""``kafkette configs --entity-type users``: SCRAM credentials as kafka-configs.sh, over a
PLAINTEXT listener and over SASL_SSL with --command-config; ``serve --add-scram``."""

from __future__ import annotations

import io

from confluent_kafka import Producer

from kafkette.broker.cli import configs_command

from .conftest import scram_properties


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = configs_command.main(list(argv), out)
    return code, out.getvalue()


def test_add_describe_delete_then_login(kafka_secure_broker_factory, tmp_path):
    broker = kafka_secure_broker_factory("SASL_SSL", ("SCRAM-SHA-512",))
    properties = scram_properties(tmp_path / "client.properties", broker, "alice", "alice-secret")
    common = ("--bootstrap-server", broker.bootstrap, "--command-config", properties,
              "--entity-type", "users")
    assert run(*common, "--entity-name", "bob", "--alter", "--add-config",
               "SCRAM-SHA-512=[iterations=8192,password=bob,secret]") == (
        0, "Completed updating config for user bob.\n")
    assert run(*common, "--entity-name", "bob", "--describe") == (
        0, "SCRAM credential configs for user-principal 'bob' are "
           "SCRAM-SHA-512=iterations=8192\n")
    assert run(*common, "--entity-name", "nobody", "--describe") == (0, "")
    producer = Producer(broker.confluent_config(user="bob", password="bob,secret"))
    producer.produce("configs", b"x")
    assert producer.flush(20) == 0
    assert run(*common, "--entity-name", "bob", "--alter", "--delete-config",
               "SCRAM-SHA-512") == (0, "Completed updating config for user bob.\n")
    assert run(*common, "--describe")[1] == ("SCRAM credential configs for user-principal "
                                             "'alice' are SCRAM-SHA-512=iterations=4096\n")


def test_wrong_command_config_password_is_the_brokers_message(kafka_secure_broker_factory,
                                                               tmp_path, capsys):
    broker = kafka_secure_broker_factory("SASL_PLAINTEXT", ("PLAIN",))
    properties = tmp_path / "client.properties"
    properties.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="alice" password="nope";\n')
    code, _ = run("--bootstrap-server", broker.bootstrap, "--command-config", str(properties),
                  "--entity-type", "users", "--describe")
    assert code == 1
    assert "Authentication failed: Invalid username or password" in capsys.readouterr().err


def test_too_few_iterations_is_refused_before_sending(kafka_broker, capsys):
    code, _ = run("--bootstrap-server", kafka_broker.bootstrap, "--entity-type", "users",
                  "--entity-name", "bob", "--alter", "--add-config",
                  "SCRAM-SHA-256=[iterations=100,password=x]")
    assert code == 2
    assert ("Iterations 100 is less than the minimum 4096 required for SCRAM-SHA-256"
            in capsys.readouterr().err)
