"""``kafkette configs`` for client quotas: kafka-configs.sh's flags, messages and describe lines."""

from __future__ import annotations

import io

from kafkette.broker.cli.client_quota_configs import run


def configs(bootstrap: str, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(["--bootstrap-server", bootstrap, *argv], out, err)
    return code, out.getvalue(), err.getvalue()


def test_alter_and_describe_client_quotas(kafkette_broker) -> None:
    b = kafkette_broker.bootstrap
    assert configs(b, "--alter", "--entity-type", "clients", "--entity-name", "my-app",
                   "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=20971520") == (
        0, "Completed updating config for client my-app.\n", "")
    assert configs(b, "--alter", "--entity-type", "users", "--entity-default",
                   "--add-config", "request_percentage=50") == (
        0, "Completed updating default config for users in the cluster.\n", "")
    assert configs(b, "--alter", "--user", "alice", "--client", "my-app",
                   "--add-config", "producer_byte_rate=1024")[0] == 0

    code, out, _ = configs(b, "--describe", "--entity-type", "clients", "--entity-name", "my-app")
    assert code == 0
    assert out == ("Quota configs for client-id 'my-app' are consumer_byte_rate=2.097152E7, "
                   "producer_byte_rate=1048576.0\n")
    code, out, _ = configs(b, "--describe", "--entity-type", "users", "--entity-default")
    assert out == "Quota configs for the default user-principal are request_percentage=50.0\n"
    code, out, _ = configs(b, "--describe", "--entity-type", "users", "--entity-type", "clients")
    assert out == ("Quota configs for user-principal 'alice', client-id 'my-app' are "
                   "producer_byte_rate=1024.0\n")

    assert configs(b, "--alter", "--entity-type", "clients", "--entity-name", "my-app",
                   "--delete-config", "producer_byte_rate")[0] == 0
    code, out, _ = configs(b, "--describe", "--entity-type", "clients")
    assert out == "Quota configs for client-id 'my-app' are consumer_byte_rate=2.097152E7\n"


def test_refusals(kafkette_broker) -> None:
    b = kafkette_broker.bootstrap
    code, _, err = configs(b, "--alter", "--entity-type", "clients", "--entity-name", "x",
                           "--add-config", "producer_byte_rate=0.5")
    assert code == 1 and err == "Error: producer_byte_rate cannot be a fractional value.\n"
    code, _, err = configs(b, "--alter", "--entity-type", "clients", "--entity-name", "x",
                           "--add-config", "flush.ms=1")
    assert code == 1 and err == "Error: Invalid configuration key flush.ms\n"
    code, _, err = configs(b, "--alter", "--entity-type", "clients", "--entity-name", "x")
    assert code == 1 and "--add-config or --delete-config" in err


def test_kafkette_configs_routes_quotas_and_scram_credentials(kafkette_broker, capsys) -> None:
    from kafkette.broker.cli.main import main

    b = kafkette_broker.bootstrap
    assert main(["configs", "--bootstrap-server", b, "--alter", "--entity-type", "users",
                 "--entity-name", "alice", "--add-config", "producer_byte_rate=4096"]) == 0
    assert main(["configs", "--bootstrap-server", b, "--alter", "--entity-type", "users",
                 "--entity-name", "alice", "--add-config",
                 "SCRAM-SHA-256=[iterations=8192,password=secret]"]) == 0
    capsys.readouterr()
    assert main(["configs", "--bootstrap-server", b, "--describe", "--entity-type", "users",
                 "--entity-name", "alice"]) == 0
    assert capsys.readouterr().out == (
        "Quota configs for user-principal 'alice' are producer_byte_rate=4096.0\n"
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192\n")
