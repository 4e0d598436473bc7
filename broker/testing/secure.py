"""Secured test brokers: a TLS and/or SASL listener with generated certificates and users, and
ready client settings for confluent-kafka, aiokafka and kafka-python.

``kafka_secure_broker_factory(protocol="SASL_SSL", mechanisms=("SCRAM-SHA-512",),
users={"alice": "alice-secret"})`` (the pytest fixture) starts one; the handle is a
:class:`~kafkette.broker.testing.broker_handle.KafkaBroker` whose ``config()`` (and so
``producer()``, ``consumer()``, ``admin()``) logs in as the first user, plus:

- ``confluent_config(user=, mechanism=, config=)``: librdkafka settings;
- ``aiokafka_settings(user=, mechanism=)``: keyword arguments (with an ``ssl_context``);
- ``kafka_python_settings(user=, mechanism=)``: keyword arguments;
- ``ca_file``, ``client_certificate(name, organizational_unit=)`` for mutual TLS.

PLAIN users go into the listener's JAAS config, SCRAM users into ``scram.credentials`` (created
at start, 4096 iterations); OAUTHBEARER takes unsecured JWTs (no users needed).
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from .broker_handle import BrokerSettings, KafkaBroker
from .certificates import CertificateFiles, TestCA
from .runners import ThreadedBroker

SASL = ("SASL_PLAINTEXT", "SASL_SSL")
TLS = ("SSL", "SASL_SSL")


def secure_config(directory: Path, protocol: str, mechanisms: tuple[str, ...],
                  users: Mapping[str, str], client_auth: str = "none",
                  ca: TestCA | None = None) -> tuple[dict[str, str], TestCA | None]:
    """Broker config for one listener named ``protocol`` on a free port, and the CA used."""
    listener = protocol.lower()
    config = {"listeners": f"{protocol}://127.0.0.1:0"}
    if protocol in TLS:
        ca = ca or TestCA(directory / "certs")
        broker_cert = ca.issue("broker")
        config.update({"ssl.keystore.type": "PEM",
                       "ssl.keystore.location": str(broker_cert.combined),
                       "ssl.truststore.type": "PEM",
                       "ssl.truststore.location": str(ca.cert_path),
                       "ssl.client.auth": client_auth})
    if protocol in SASL:
        config["sasl.enabled.mechanisms"] = ",".join(mechanisms)
        if "PLAIN" in mechanisms:
            options = " ".join(f'user_{name}="{password}"' for name, password in users.items())
            config[f"listener.name.{listener}.plain.sasl.jaas.config"] = (
                "org.apache.kafka.common.security.plain.PlainLoginModule required "
                f"{options};")
        scram = [m for m in mechanisms if m.startswith("SCRAM-")]
        if scram:
            config["scram.credentials"] = ";".join(
                f'{m}=[name={name},password="{password}"]'
                for m in scram for name, password in users.items())
    return config, ca


class SecureKafkaBroker(KafkaBroker):
    """A running secured test broker (see the module docstring)."""

    protocol: str
    mechanisms: tuple[str, ...]
    users: dict[str, str]
    ca: TestCA | None

    def __new__(cls, runner: ThreadedBroker, protocol: str = "SASL_SSL",
                mechanisms: tuple[str, ...] = (), users: Mapping[str, str] | None = None,
                ca: TestCA | None = None) -> SecureKafkaBroker:
        handle = cast(SecureKafkaBroker, super().__new__(cls, runner))
        handle.protocol = protocol
        handle.mechanisms = tuple(mechanisms)
        handle.users = dict(users or {})
        handle.ca = ca
        return handle

    @property
    def ca_file(self) -> str | None:
        return str(self.ca.cert_path) if self.ca is not None else None

    def client_certificate(self, name: str = "client",
                           organizational_unit: str | None = None) -> CertificateFiles:
        """A client certificate (CN=name) for mutual TLS, signed by the broker's CA."""
        assert self.ca is not None, "the broker has no TLS listener"
        return self.ca.issue(name, organizational_unit=organizational_unit, hosts=())

    def _login(self, user: str | None, mechanism: str | None) -> tuple[str, str, str]:
        mechanism = mechanism or (self.mechanisms[0] if self.mechanisms else "")
        if user is None:
            user = next(iter(self.users), "")
        return user, self.users.get(user, ""), mechanism

    # confluent-kafka (librdkafka) ---------------------------------------------------------------
    def confluent_config(self, config: Mapping[str, Any] | None = None, *,
                         user: str | None = None, password: str | None = None,
                         mechanism: str | None = None,
                         certificate: CertificateFiles | None = None) -> dict[str, Any]:
        name, known, mechanism = self._login(user, mechanism)
        out: dict[str, Any] = {"bootstrap.servers": str(self),
                               "security.protocol": self.protocol}
        if self.protocol in TLS:
            out["ssl.ca.location"] = self.ca_file
            if certificate is not None:
                out["ssl.certificate.location"] = str(certificate.cert)
                out["ssl.key.location"] = str(certificate.key)
        if self.protocol in SASL:
            out["sasl.mechanisms"] = mechanism
            if mechanism == "OAUTHBEARER":
                out["enable.sasl.oauthbearer.unsecure.jwt"] = True
                out["sasl.oauthbearer.config"] = f"principal={name or 'alice'}"
            else:
                out["sasl.username"] = name
                out["sasl.password"] = known if password is None else password
        out.update(config or {})
        return out

    @property
    def config(self) -> BrokerSettings:
        """The broker's config; ``.config(extra)`` is the librdkafka client config (secured)."""
        return BrokerSettings(self.runner.config, str(self), self.confluent_config)

    # aiokafka -----------------------------------------------------------------------------------
    def aiokafka_settings(self, *, user: str | None = None, password: str | None = None,
                          mechanism: str | None = None,
                          certificate: CertificateFiles | None = None) -> dict[str, Any]:
        name, known, mechanism = self._login(user, mechanism)
        out: dict[str, Any] = {"security_protocol": self.protocol}
        if self.protocol in TLS:
            out["ssl_context"] = self.client_ssl_context(certificate)
        if self.protocol in SASL:
            out.update(sasl_mechanism=mechanism, sasl_plain_username=name,
                       sasl_plain_password=known if password is None else password)
        return out

    def client_ssl_context(self, certificate: CertificateFiles | None = None) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=self.ca_file)
        if certificate is not None:
            context.load_cert_chain(str(certificate.cert), str(certificate.key))
        return context

    def aiokafka_producer(self, **kwargs: Any) -> Any:
        return super().aiokafka_producer(**{**self.aiokafka_settings(), **kwargs})

    def aiokafka_consumer(self, *topics: str, **kwargs: Any) -> Any:
        return super().aiokafka_consumer(*topics, **{**self.aiokafka_settings(), **kwargs})

    # kafka-python -------------------------------------------------------------------------------
    def kafka_python_settings(self, *, user: str | None = None, password: str | None = None,
                              mechanism: str | None = None,
                              certificate: CertificateFiles | None = None) -> dict[str, Any]:
        name, known, mechanism = self._login(user, mechanism)
        out: dict[str, Any] = {"bootstrap_servers": str(self),
                               "security_protocol": self.protocol}
        if self.protocol in TLS:
            out["ssl_cafile"] = self.ca_file
            if certificate is not None:
                out["ssl_certfile"] = str(certificate.cert)
                out["ssl_keyfile"] = str(certificate.key)
        if self.protocol in SASL:
            out.update(sasl_mechanism=mechanism, sasl_plain_username=name,
                       sasl_plain_password=known if password is None else password)
        return out
