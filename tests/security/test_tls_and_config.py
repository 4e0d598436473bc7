"""TLS listeners from Kafka's ssl.* configs (file and inline PEM keystores), what a wrong
client costs (one log line, that connection only), and the security configs' checks."""

from __future__ import annotations

import logging
import socket
import ssl

import pytest

from kafkette.broker.config import BrokerConfig
from kafkette.broker.config_def import ConfigError
from kafkette.broker.server import Broker, StartupError
from kafkette.broker.testing.certificates import TestCA
from kafkette.protocol.codec import decode_response


@pytest.fixture
def ca(tmp_path):
    return TestCA(tmp_path / "certs")


def api_versions_over_tls(bootstrap: str, ca: TestCA) -> int:
    host, port = bootstrap.rsplit(":", 1)
    context = ssl.create_default_context(cafile=str(ca.cert_path))
    with socket.create_connection((host, int(port)), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname=host) as sock:
        sock.sendall(bytes.fromhex("0000000f0012000000000007000562656e6368"))  # ApiVersions v0
        size = int.from_bytes(sock.recv(4), "big")
        data = b""
        while len(data) < size:
            data += sock.recv(size - len(data))
    return decode_response(18, 0, data)[1].error_code


def closed_by_peer(sock: socket.socket) -> bool:
    try:
        for _ in range(10):
            if sock.recv(4096) == b"":
                return True
    except ConnectionResetError:
        return True
    return False


def test_inline_pem_keystore(kafka_broker_factory, ca):
    server = ca.issue("broker")
    broker = kafka_broker_factory({
        "listeners": "SSL://127.0.0.1:0", "ssl.keystore.type": "PEM",
        "ssl.keystore.key": server.key.read_text(),
        "ssl.keystore.certificate.chain": server.cert.read_text()})
    assert api_versions_over_tls(broker.bootstrap, ca) == 0


def test_plaintext_client_and_garbage_on_a_tls_port_cost_one_line_each(kafka_broker_factory,
                                                                       ca, caplog):
    caplog.set_level(logging.INFO, "kafkette.security")
    server = ca.issue("broker")
    broker = kafka_broker_factory({"listeners": "SSL://127.0.0.1:0", "ssl.keystore.type": "PEM",
                                   "ssl.keystore.location": str(server.combined)})
    host, port = broker.bootstrap.rsplit(":", 1)
    for payload in (bytes.fromhex("0000000f0012000000000007000562656e6368"),  # a Kafka request
                    b"\x16\x03\x01\x00\x05hello" + b"\xff" * 32):  # a broken TLS record
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(payload)
            sock.settimeout(10)
            assert closed_by_peer(sock)  # perhaps after a TLS alert
    assert api_versions_over_tls(broker.bootstrap, ca) == 0  # others are served
    lines = [r.getMessage() for r in caplog.records
             if r.getMessage().startswith("Failed authentication")]
    assert len(lines) == 2
    assert all(line.startswith("Failed authentication with /127.0.0.1 (SSL handshake failed")
               for line in lines)


def start_fails(config: dict, tmp_path) -> str:
    import asyncio

    async def run() -> None:
        broker = Broker({"log.dirs": str(tmp_path / "logs"), **config})
        try:
            await broker.start()
        finally:
            await broker.stop()

    with pytest.raises((StartupError, ConfigError)) as failure:
        asyncio.run(run())
    return str(failure.value)


def test_keystore_problems_name_the_key(tmp_path, ca):
    server = ca.issue("broker")
    base = {"listeners": "SSL://127.0.0.1:0"}
    assert "ssl.keystore.type=JKS" in start_fails(
        {**base, "ssl.keystore.location": str(tmp_path / "k.jks")}, tmp_path)
    assert start_fails({**base, "ssl.keystore.type": "PEM", "ssl.keystore.password": "x",
                        "ssl.keystore.location": str(server.combined)}, tmp_path).endswith(
        "SSL key store password cannot be specified with PEM format, only key password may be "
        "specified")
    assert "no such file" in start_fails(
        {**base, "ssl.keystore.type": "PEM",
         "ssl.keystore.location": str(tmp_path / "missing.pem")}, tmp_path)


@pytest.mark.parametrize("config, message", [
    ({"listeners": "SASL_PLAINTEXT://127.0.0.1:0"},
     "sasl.enabled.mechanisms: kafkette does not serve GSSAPI (Kerberos)"),
    ({"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN"},
     "listener.name.sasl_plaintext.plain.sasl.jaas.config is not set"),
    ({"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "CRAM-MD5"},
     "sasl.enabled.mechanisms: unknown SASL mechanism CRAM-MD5"),
    ({"listeners": "SSL://127.0.0.1:0", "ssl.client.auth": "sometimes"},
     "Invalid value sometimes for configuration ssl.client.auth: String must be one of: "
     "required, requested, none"),
    ({"scram.credentials": "SCRAM-SHA-512=[name=alice]"},
     "Invalid value [hidden] for configuration scram.credentials"),
])
def test_config_checks(config, message):
    with pytest.raises(ConfigError) as failure:
        BrokerConfig(config).validate()
    assert message in str(failure.value)


def test_listener_scoped_keys_are_known_and_secrets_hidden(caplog):
    config = BrokerConfig({
        "listeners": "SASL_SSL://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_ssl.plain.sasl.jaas.config":
            'org.apache.kafka.common.security.plain.PlainLoginModule required user_a="s3cret";',
        "listener.name.sasl_ssl.ssl.keystore.location": "/k.pem",
        "listener.name.sasl_ssl.ssl.key.password": "k3y",
    })
    assert config.validate() == []
    caplog.set_level(logging.INFO, "kafkette.broker.config")
    config.log_values()
    assert "listener.name.sasl_ssl.plain.sasl.jaas.config = [hidden]" in caplog.text
    assert "s3cret" not in caplog.text and "k3y" not in caplog.text
