"""The SASL_SSL example of docker-compose.yml (profile ``secure``): its services agree with each
other and with kafkette's config keys (checked statically), and their command lines run here
the way the containers run them: examples/dev_certs.py writes the certificates, the broker
serves SASL_SSL with SCRAM-SHA-512, the healthcheck logs in, the example clients get through."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafkette.broker.config import BrokerConfig
from kafkette.broker.security.config_keys import parse_add_scram
from tests.tools import ROOT

from .test_compose import (
    _entrypoint,
    _free_port,
    _start_broker,
    _stop,
    overrides,
    services,
)

SECURE = {"certs", "kafkette-secure", "producer-secure", "consumer-secure"}
# what the README has a user write on the host (after `docker compose cp` of ca.pem)
HOST_PROPERTIES = """\
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.username=app
sasl.password=app-secret
ssl.ca.location=ca.pem
"""
CLIENTS = ("producer-secure", "consumer-secure")


def _dev_certs():
    """examples/dev_certs.py as a module (its file names are what the services point at)."""
    pytest.importorskip("cryptography")
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import dev_certs
    finally:
        sys.path.remove(str(ROOT / "examples"))
    return dev_certs


def _mount(service: dict, volume: str) -> str:
    """Where ``service`` mounts the named ``volume``."""
    for item in service.get("volumes", []):
        name, target = item.split(":")[:2]
        if name == volume:
            return target
    raise AssertionError(f"{volume} is not mounted")


def test_the_secure_services_are_a_profile_of_their_own() -> None:
    spec = services()
    assert {name for name, service in spec.items() if service.get("profiles")} == SECURE
    for name in SECURE:
        assert spec[name]["profiles"] == ["secure"], name
    # nothing of the default `docker compose up` depends on them
    for name, service in spec.items():
        if name not in SECURE:
            assert not set(service.get("depends_on", {})) & SECURE, name


def test_broker_config_is_valid_and_matches_the_clients_and_the_certificates() -> None:
    dev_certs = _dev_certs()
    spec = services()
    broker, certs = spec["kafkette-secure"], spec["certs"]
    config = BrokerConfig(overrides(broker["command"]))
    assert config.validate() == []  # every key known, every value valid, every listener served
    listeners = {item.name: item.port for item in config.listeners}
    assert set(config.security_protocols[name] for name in listeners) == {"SASL_SSL"}
    advertised = {item.name: (item.host, item.port) for item in config.advertised_listeners}
    assert set(advertised) == set(listeners)
    mechanisms = config["sasl.enabled.mechanisms"]
    assert config["sasl.mechanism.inter.broker.protocol"] in mechanisms
    users = {(mechanism, name): password
             for mechanism, name, password, _ in parse_add_scram(config["scram.credentials"])}

    # the certificates: written where the broker and the clients read them, for every name
    # the broker is reached by (advertised hosts, the healthcheck's address)
    certs_dir = _mount(certs, "kafkette-certs")
    assert certs["command"] == ["python", "dev_certs.py", certs_dir]
    broker_certs = _mount(broker, "kafkette-certs")
    assert broker["volumes"].count(f"kafkette-certs:{broker_certs}:ro") == 1
    assert config["ssl.keystore.type"] == "PEM"
    assert config["ssl.keystore.location"] == f"{broker_certs}/{dev_certs.KEYSTORE_FILE}"
    hosts = set(certs["environment"]["CERT_HOSTS"].split(","))
    assert {host for host, _port in advertised.values()} <= hosts
    health = broker["healthcheck"]["test"]
    assert health[:4] == ["CMD", "python", "-m", "kafkette.broker.cli.healthcheck"]
    host, port = health[4].rsplit(":", 1)
    assert host in hosts and int(port) in listeners.values()
    assert health[5:] == ["--command-config", f"{broker_certs}/{dev_certs.CLIENT_PROPERTIES}"]
    assert broker["depends_on"]["certs"]["condition"] == "service_completed_successfully"
    # client.properties (the healthcheck's login) names a user the broker has
    login = certs["environment"]
    assert login["SASL_MECHANISM"] in mechanisms
    assert users[(login["SASL_MECHANISM"], login["CLIENT_USER"])] == login["CLIENT_PASSWORD"]

    # the host reaches the EXTERNAL listener through the published port
    external = listeners["EXTERNAL"]
    assert broker["ports"] == [f"{external}:{external}"]
    assert advertised["EXTERNAL"] == ("localhost", external)

    for name in CLIENTS:
        service = spec[name]
        env = service["environment"]
        assert env["BOOTSTRAP"] == "{}:{}".format(*advertised["INTERNAL"]), name
        assert env["SECURITY_PROTOCOL"] == "SASL_SSL"
        assert env["SSL_CAFILE"] == f"{_mount(service, 'kafkette-certs')}/{dev_certs.CA_FILE}"
        assert env["SASL_MECHANISM"] in mechanisms
        assert users[(env["SASL_MECHANISM"], env["SASL_USERNAME"])] == env["SASL_PASSWORD"]
        assert service["depends_on"]["kafkette-secure"]["condition"] == "service_healthy"


def _in_here(command: list[str], certs_container: str, certs_here: Path) -> list[str]:
    return [arg.replace(f"{certs_container}/", f"{certs_here}/") for arg in command]


def _healthcheck(test: list[str], port: int, certs_container: str,
                 certs_here: Path) -> subprocess.CompletedProcess:
    argv = [sys.executable if arg == "python" else arg for arg in test[1:]]
    argv[3] = f"127.0.0.1:{port}"  # the listener's port here
    return subprocess.run(_in_here(argv, certs_container, certs_here), capture_output=True,
                          text=True, timeout=30)


def test_secure_services_run_here(tmp_path: Path) -> None:
    _dev_certs()
    spec = services()
    certs, broker = spec["certs"], spec["kafkette-secure"]
    certs_here = tmp_path / "certs"
    made = subprocess.run([sys.executable, "dev_certs.py", str(certs_here)],
                          cwd=ROOT / "examples", capture_output=True, text=True, timeout=60,
                          env={**os.environ, **certs["environment"]})
    assert made.returncode == 0, made.stderr
    again = subprocess.run([sys.executable, "dev_certs.py", str(certs_here)],
                           cwd=ROOT / "examples", capture_output=True, text=True, timeout=60,
                           env={**os.environ, **certs["environment"]})
    assert again.returncode == 0 and again.stdout.startswith("keeping")  # a restart keeps its CA

    in_broker = _mount(broker, "kafkette-certs")
    internal, external = _free_port(), _free_port()
    proc = _start_broker(_in_here(broker["command"], in_broker, certs_here),
                         {9093: internal, 19093: external}, tmp_path / "data",
                         advertise={"INTERNAL": f"127.0.0.1:{internal}",
                                    "EXTERNAL": f"127.0.0.1:{external}"})
    try:
        health = broker["healthcheck"]["test"]
        healthy = _healthcheck(health, internal, in_broker, certs_here)
        assert healthy.returncode == 0, healthy.stderr
        # without the login properties the TLS listener does not answer a plain request
        plain = _healthcheck(health[:5], internal, in_broker, certs_here)
        assert plain.returncode == 1 and plain.stderr.startswith("unhealthy: ")

        outputs = {}
        for name in CLIENTS:
            service = spec[name]
            in_client = _mount(service, "kafkette-certs")
            env = {**os.environ, **{k: str(v) for k, v in service["environment"].items()},
                   "COUNT": "5", "PYTHONUNBUFFERED": "1"}
            env["BOOTSTRAP"] = f"127.0.0.1:{internal}"
            env["SSL_CAFILE"] = env["SSL_CAFILE"].replace(f"{in_client}/", f"{certs_here}/")
            argv = [sys.executable if a == "python" else a for a in service["command"]]
            ran = subprocess.run(argv, cwd=ROOT / "examples", env=env, capture_output=True,
                                 text=True, timeout=90)
            assert ran.returncode == 0, ran.stderr
            outputs[name] = sorted(line.split()[1] for line in ran.stdout.splitlines())
        assert outputs["producer-secure"] == outputs["consumer-secure"] == sorted(
            f"n={i}" for i in range(5))
        # From the host, through the EXTERNAL listener, as the README shows: kafkette's
        # librdkafka tools take librdkafka's property names, and the CA copied out
        host_properties = tmp_path / "host.properties"
        host_properties.write_text(HOST_PROPERTIES.replace("ca.pem", str(certs_here / "ca.pem")))
        listed = subprocess.run([_entrypoint(), "topics", "--bootstrap-server",
                                 f"127.0.0.1:{external}", "--command-config",
                                 str(host_properties), "--list"],
                                capture_output=True, text=True, timeout=60)
        assert listed.returncode == 0 and "example-events" in listed.stdout.split(), listed
    finally:
        stderr = _stop(proc)
    assert "isn't a known config" not in stderr
