"""``kafkette acls``: kafka-acls.sh's flags, refusals and output against a broker with ACLs."""

from __future__ import annotations

import io

import pytest

from kafkette.broker.cli import acls_command

from .conftest import scram_properties

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@pytest.fixture
def bootstrap(kafka_broker_factory) -> str:
    broker = kafka_broker_factory({"authorizer.class.name": STANDARD,
                                   "super.users": "User:ANONYMOUS"})
    return broker.bootstrap


def run(*argv: str, answer: bool = True) -> tuple[int, str]:
    out = io.StringIO()
    asked: list[str] = []

    def confirm(question: str) -> bool:
        asked.append(question)
        return answer

    code = acls_command.main(list(argv), out=out, confirm=confirm)
    return code, out.getvalue() + "".join(f"ASKED {q}\n" for q in asked)


def test_add_then_list_in_kafka_acls_format(bootstrap):
    code, text = run("--bootstrap-server", bootstrap, "--add", "--allow-principal", "User:alice",
                     "--operation", "Read", "--operation", "describe", "--topic", "orders")
    assert code == 0
    assert text == (
        "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, "
        "patternType=LITERAL)`: \n"
        " \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n"
        "\t(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)\n\n")
    code, again = run("--bootstrap-server", bootstrap, "--add", "--allow-principal",
                      "User:alice", "--operation", "Read", "--topic", "orders")
    assert code == 0 and again == (
        "Acl (pattern=ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL), "
        "entry=(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)) "
        "already exists.\n")
    code, listed = run("--bootstrap-server", bootstrap, "--list", "--topic", "orders")
    assert code == 0
    assert listed == (
        "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, "
        "patternType=LITERAL)`:\n"
        "\t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n"
        "\t(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)\n\n")


def test_consumer_and_producer_shortcuts_and_match_listing(bootstrap):
    code, _ = run("--bootstrap-server", bootstrap, "--add", "--allow-principal", "User:bob",
                  "--consumer", "--topic", "orders", "--group", "billing")
    assert code == 0
    code, _ = run("--bootstrap-server", bootstrap, "--add", "--allow-principal", "User:carol",
                  "--allow-host", "10.0.0.1", "--producer", "--topic", "ord",
                  "--resource-pattern-type", "prefixed", "--idempotent")
    assert code == 0
    code, listed = run("--bootstrap-server", bootstrap, "--list", "--topic", "orders",
                       "--resource-pattern-type", "match")
    assert code == 0
    assert "name=orders, patternType=LITERAL)`:\n" \
        "\t(principal=User:bob, host=*, operation=READ, permissionType=ALLOW)\n" \
        "\t(principal=User:bob, host=*, operation=DESCRIBE, permissionType=ALLOW)\n" in listed
    assert "name=ord, patternType=PREFIXED)`:\n" \
        "\t(principal=User:carol, host=10.0.0.1, operation=WRITE, permissionType=ALLOW)\n" \
        "\t(principal=User:carol, host=10.0.0.1, operation=CREATE, permissionType=ALLOW)\n" \
        "\t(principal=User:carol, host=10.0.0.1, operation=DESCRIBE, permissionType=ALLOW)\n" \
        in listed
    code, everything = run("--bootstrap-server", bootstrap, "--list", "--principal", "User:bob")
    assert code == 0 and everything.startswith("ACLs for principal `User:bob`\n")
    assert "resourceType=GROUP, name=billing" in everything and "carol" not in everything
    # --idempotent: IDEMPOTENT_WRITE on the (literal) cluster, whatever the pattern type
    code, cluster = run("--bootstrap-server", bootstrap, "--list", "--cluster")
    assert code == 0 and cluster == (
        "Current ACLs for resource `ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, "
        "patternType=LITERAL)`:\n"
        "\t(principal=User:carol, host=10.0.0.1, operation=IDEMPOTENT_WRITE, "
        "permissionType=ALLOW)\n\n")


def test_remove_asks_unless_forced(bootstrap):
    run("--bootstrap-server", bootstrap, "--add", "--deny-principal", "User:eve",
        "--operation", "All", "--group", "g")
    code, text = run("--bootstrap-server", bootstrap, "--remove", "--group", "g", answer=False)
    assert code == 0 and text == (
        "ASKED Are you sure you want to delete all ACLs for resource filter "
        "`ResourcePattern(resourceType=GROUP, name=g, patternType=LITERAL)`? (y/n)\n")
    assert "User:eve" in run("--bootstrap-server", bootstrap, "--list", "--group", "g")[1]
    code, text = run("--bootstrap-server", bootstrap, "--remove", "--force", "--group", "g")
    assert code == 0 and text == ""
    assert run("--bootstrap-server", bootstrap, "--list", "--group", "g") == (0, "")


def test_refusals_with_kafkas_messages(bootstrap, capsys):
    cases = {
        ("--list", "--add"): "Command must include exactly one action: --list, --add, --remove. ",
        ("--list", "--producer", "--topic", "t"): 'Option "[list]" can\'t be used with option '
                                                  '"[producer]"',
        ("--add", "--topic", "t"): "You must specify one of: --allow-principal, "
                                   "--deny-principal when trying to add ACLs.",
        ("--add", "--allow-principal", "User:a"): "You must provide at least one resource: "
                                                  "--topic <topic> or --cluster or --group "
                                                  "<group> or --delegation-token <Delegation "
                                                  "Token ID>",
        ("--add", "--allow-principal", "User:a", "--operation", "Write", "--group", "g"):
            "ResourceType GROUP only supports operations [ALL, READ, DESCRIBE, DELETE, "
            "DESCRIBE_CONFIGS, ALTER_CONFIGS]",
        ("--add", "--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type",
         "match"): "A '--resource-pattern-type' value of 'MATCH' is not valid when adding acls.",
        ("--add", "--allow-principal", "alice", "--topic", "t"):
            "expected a string in format principalType:principalName but got alice",
        ("--consumer", "--add", "--topic", "t", "--allow-principal", "User:a"):
            "With --consumer you must specify a --topic and a --group and no --cluster or "
            "--transactional-id option should be specified.",
        ("--add", "--allow-principal", "User:a", "--topic", "t", "--operation", "Fly"):
            "Unknown operation name Fly",
    }
    for argv, message in cases.items():
        assert run("--bootstrap-server", bootstrap, *argv)[0] == 1, argv
        assert capsys.readouterr().err == f"kafkette acls: {message}\n", argv


def test_without_an_authorizer_the_error_is_kafkas(kafka_broker_factory):
    broker = kafka_broker_factory()
    code, text = run("--bootstrap-server", broker.bootstrap, "--list")
    assert code == 1
    assert text == "Error while executing ACL command: No Authorizer is configured on the broker\n"


def test_acls_logs_in_with_command_config(kafka_secure_broker_factory, tmp_path):
    """Over SASL_SSL with --command-config, as kafka-acls.sh: the super user adds an ACL; a
    user without rights is refused with Kafka's error."""
    from kafkette.broker.cli import acls_command

    broker = kafka_secure_broker_factory(
        "SASL_SSL", ("SCRAM-SHA-512",), users={"admin": "admin-secret", "eve": "eve-secret"},
        config={"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "super.users": "User:admin"})

    def acls(user: str, *args: str) -> tuple[int, str]:
        out = io.StringIO()
        config = scram_properties(tmp_path / f"{user}.properties", broker, user, f"{user}-secret")
        code = acls_command.main(["--bootstrap-server", broker.bootstrap, "--command-config",
                                  config, *args], out, confirm=lambda _q: True)
        return code, out.getvalue()

    code, out = acls("admin", "--add", "--allow-principal", "User:bob", "--operation", "Read",
                     "--topic", "orders")
    assert code == 0 and "principal=User:bob" in out
    code, out = acls("admin", "--list", "--topic", "orders")
    assert code == 0 and "operation=READ" in out
    code, out = acls("eve", "--list")
    assert (code, out) == (1, "Error while executing ACL command: Cluster authorization failed.\n")
    # the same Kafka-style file logs in kafkette's librdkafka tools (topics, console tools)
    from kafkette.broker.cli import topics_command

    admin = scram_properties(tmp_path / "admin.properties", broker, "admin", "admin-secret")
    created = io.StringIO()
    assert topics_command.main(["--bootstrap-server", broker.bootstrap, "--command-config",
                                admin, "--create", "--topic", "orders"], created) == 0
    listed = io.StringIO()
    assert topics_command.main(["--bootstrap-server", broker.bootstrap, "--command-config",
                                admin, "--list"], listed) == 0
    assert "orders" in listed.getvalue().split()
