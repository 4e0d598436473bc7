"""The Java client (kafka-clients 3.9.1) over SASL_SSL with SCRAM-SHA-512 and a PEM
truststore, configured exactly as for production; a wrong password fails with Kafka's message."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.tools import ensure_java_client

from .conftest import scram_properties


@pytest.fixture
def java():
    classpath, reason = ensure_java_client()
    if classpath is None:
        pytest.skip(reason)
    return classpath


def properties(tmp_path, broker, password: str) -> str:
    return scram_properties(tmp_path / f"client-{password}.properties", broker, "alice", password)


def run(classpath: str, config: str, *args: str, timeout: float = 120):
    return subprocess.run(["java", "-cp", classpath, "KafketteClient", *args],
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "KAFKETTE_CLIENT_CONFIG": config})


def test_java_sasl_ssl_scram_produce_and_consume(java, kafka_secure_broker_factory, tmp_path):
    broker = kafka_secure_broker_factory("SASL_SSL", ("SCRAM-SHA-512",))
    config = properties(tmp_path, broker, "alice-secret")
    produced = run(java, config, "produce", broker.bootstrap, "java-sasl", "20", "j", "1")
    assert produced.returncode == 0, produced.stderr[-2000:]
    consumed = run(java, config, "consume", broker.bootstrap, "java-sasl", "20")
    assert consumed.returncode == 0, consumed.stderr[-2000:]
    records = [json.loads(line) for line in consumed.stdout.splitlines()
               if line.startswith("{")]
    assert sorted(r["offset"] for r in records if r["event"] == "record") == list(range(20))


def test_java_wrong_password_is_an_authentication_error(java, kafka_secure_broker_factory,
                                                        tmp_path):
    broker = kafka_secure_broker_factory("SASL_SSL", ("SCRAM-SHA-512",))
    config = properties(tmp_path, broker, "not-it")
    result = run(java, config, "metadata", broker.bootstrap, "java-sasl", timeout=120)
    assert result.returncode != 0
    assert ("Authentication failed during authentication due to invalid credentials with SASL "
            "mechanism SCRAM-SHA-512") in result.stdout + result.stderr
