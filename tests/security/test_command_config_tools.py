"""``--command-config`` logs ``kafkette groups``, ``share-groups`` and ``transactions`` in over
SASL_SSL, on every connection they open; settings the tools cannot honour are refused before
anything is sent, and WriteTxnMarkers (``transactions abort``) needs CLUSTER_ACTION."""

from __future__ import annotations

import io
import time

import pytest

from kafkette.broker.cli import acls_command, groups_command, share_groups_command
from kafkette.broker.cli.client_security import unsupported_setting
from kafkette.broker.cli.main import main as kafkette

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
SMALL = {"offsets.topic.num.partitions": "3", "transaction.state.log.num.partitions": "3",
         "group.initial.rebalance.delay.ms": "0"}


@pytest.fixture
def secure(kafka_secure_broker_factory, tmp_path):
    broker = kafka_secure_broker_factory(
        "SASL_SSL", ("SCRAM-SHA-512",), users={"admin": "admin-secret", "eve": "eve-secret"},
        config={"authorizer.class.name": STANDARD, "super.users": "User:admin", **SMALL})

    def properties(user: str, password: str | None = None, extra: str = "") -> str:
        path = tmp_path / f"{user}-{password}.properties"
        path.write_text(
            "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{user}" password="{password or user + "-secret"}";\n'
            f"ssl.truststore.type=PEM\nssl.truststore.location={broker.ca_file}\n{extra}")
        return str(path)

    broker.properties = properties
    return broker


def _setup(broker) -> None:
    """Topic "orders", group "billing" with a committed offset, an open transaction of
    "billing-app" on orders-0."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin_config = broker.confluent_config(user="admin")
    topics = AdminClient(admin_config)  # alive until the answer
    topics.create_topics([NewTopic("orders", 1, 1)])["orders"].result(10)
    consumer = Consumer({**admin_config, "group.id": "billing", "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition("orders", 0, 0)], asynchronous=False)
    consumer.close()
    producer = Producer({**admin_config, "transactional.id": "billing-app", "linger.ms": 0})
    producer.init_transactions(20)
    producer.begin_transaction()
    producer.produce("orders", b"open")
    assert producer.flush(10) == 0
    broker.open_producer = producer  # kept alive for the test


def _groups(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return groups_command.main(list(argv), out), out.getvalue()


def _share_groups(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return share_groups_command.main(list(argv), out), out.getvalue()


def _transactions(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = kafkette(["transactions", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_groups_share_groups_and_transactions_log_in(secure, capsys):
    _setup(secure)
    admin = secure.properties("admin")
    base = ("--bootstrap-server", secure.bootstrap, "--command-config", admin)
    code, out = _groups(*base, "--describe", "--group", "billing")
    assert code == 0 and "billing" in out and "orders" in out
    code, out = _groups(*base, "--list")
    assert (code, out.split()) == (0, ["billing"])
    code, out = _share_groups(*base, "--list")
    assert (code, out) == (0, "")
    code, out = _share_groups(*base, "--describe", "--group", "nobody")
    assert "Error: Share group 'nobody' does not exist." in out  # the broker's answer
    code, out, err = _transactions(capsys, *base, "describe", "--transactional-id",
                                   "billing-app")
    assert code == 0, err
    row = out.splitlines()[1].split("\t")
    assert row[1].strip() == "billing-app" and row[4].strip() == "Ongoing"
    code, out, err = _transactions(capsys, *base, "list")
    assert code == 0 and "billing-app" in out
    code, out, err = _transactions(capsys, *base, "describe-producers", "--topic", "orders",
                                   "--partition", "0")
    assert code == 0 and out.splitlines()[1].split("\t")[-2].strip() == "0"
    # the coordinator holds orders-0: not hanging, even with no timeout at all
    code, out, err = _transactions(capsys, *base, "find-hanging", "--topic", "orders",
                                   "--max-transaction-timeout", "0")
    assert code == 0 and len(out.splitlines()) == 1
    # no login: the SASL_SSL listener does not answer
    code, _, err = _transactions(capsys, "--bootstrap-server", secure.bootstrap, "list")
    assert code == 1 and err.startswith("kafkette transactions: cannot reach")


def test_abort_needs_cluster_action(secure, capsys):
    _setup(secure)
    eve = secure.properties("eve")
    admin = secure.properties("admin")
    out = io.StringIO()
    assert acls_command.main(["--bootstrap-server", secure.bootstrap, "--command-config", admin,
                              "--add", "--allow-principal", "User:eve", "--operation", "Describe",
                              "--operation", "Read", "--topic", "orders"], out,
                             confirm=lambda _q: True) == 0
    abort = ("abort", "--topic", "orders", "--partition", "0", "--start-offset", "0")
    code, out, err = _transactions(capsys, "--bootstrap-server", secure.bootstrap,
                                   "--command-config", eve, *abort)
    assert code == 1 and err.startswith("Failed to abort transaction AbortTransactionSpec("
                                        "topicPartition=orders-0, producerId=")
    assert "Cluster authorization failed." in err
    code, out, err = _transactions(capsys, "--bootstrap-server", secure.bootstrap,
                                   "--command-config", admin, *abort)
    assert (code, err) == (0, "")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        code, out, _ = _transactions(capsys, "--bootstrap-server", secure.bootstrap,
                                     "--command-config", admin, "describe-producers", "--topic",
                                     "orders", "--partition", "0")
        if out.splitlines()[1].split("\t")[-2].strip() == "None":
            break
    assert out.splitlines()[1].split("\t")[-2].strip() == "None"  # no open transaction left


def test_wrong_password_and_unsupported_settings_are_refused(secure, tmp_path, capsys):
    wrong = secure.properties("admin", "not-the-password")
    code, _ = _groups("--bootstrap-server", secure.bootstrap, "--command-config", wrong,
                      "--list")
    assert code == 1
    assert "Authentication failed" in capsys.readouterr().err
    gssapi = secure.properties("admin", extra="sasl.mechanism=GSSAPI\n")
    for tool in (_groups, _share_groups):
        assert tool("--bootstrap-server", secure.bootstrap, "--command-config", gssapi,
                    "--list")[0] == 1
        assert "sasl.mechanism=GSSAPI is not supported by kafkette's tools" in \
            capsys.readouterr().err
    code, _, err = _transactions(capsys, "--bootstrap-server", secure.bootstrap,
                                 "--command-config", gssapi, "list")
    assert code == 1 and "sasl.mechanism=GSSAPI is not supported" in err


@pytest.mark.parametrize(("settings", "problem"), [
    ({}, None),
    ({"client.id": "x", "request.timeout.ms": "1000"}, None),
    ({"security.protocol": "SSL", "ssl.truststore.type": "PEM",
      "ssl.truststore.location": "/ca.pem"}, None),
    ({"security.protocol": "TLS"}, "Invalid value TLS for configuration security.protocol: "
                                   "String must be one of: PLAINTEXT, SSL, SASL_PLAINTEXT, "
                                   "SASL_SSL"),
    ({"security.protocol": "SSL", "ssl.truststore.type": "JKS"},
     "ssl.truststore.type=JKS is not supported by kafkette's tools: use PEM files"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"},
     "sasl.jaas.config is required for SASL"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
      "sasl.jaas.config": "broken"}, "sasl.jaas.config: "),
    ({"sasl.login.callback.handler.class": "x"},
     "sasl.login.callback.handler.class is not supported by kafkette's tools"),
])
def test_unsupported_setting(settings, problem):
    found = unsupported_setting(settings)
    assert (found is None) if problem is None else (found or "").startswith(problem)
