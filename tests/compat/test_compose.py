"""docker-compose.yml: valid for the compose CLI, and wired to files that exist."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.tools import ROOT

COMPOSE = ROOT / "docker-compose.yml"


def _compose_command() -> tuple[list[str] | None, str]:
    docker = shutil.which("docker")
    if docker:
        probe = subprocess.run([docker, "compose", "version"], capture_output=True, timeout=30)
        if probe.returncode == 0:
            return [docker, "compose"], ""
    legacy = shutil.which("docker-compose")
    if legacy:
        return [legacy], ""
    if docker:
        return None, "the docker client has no compose plugin (and no docker-compose on PATH)"
    return None, "no docker client on PATH"


def test_compose_config_is_valid() -> None:
    command, reason = _compose_command()
    if command is None:
        pytest.skip(reason)
    proc = subprocess.run([*command, "-f", str(COMPOSE), "config"], capture_output=True,
                          text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "kafkette" in proc.stdout and "producer" in proc.stdout


def test_compose_services_point_at_real_files() -> None:
    yaml = pytest.importorskip("yaml", reason="PyYAML not installed: cannot read the compose file")
    spec = yaml.safe_load(COMPOSE.read_text())
    services = spec["services"]
    assert set(services) == {"kafkette", "producer", "consumer"}
    assert "kafkette serve" in services["kafkette"]["command"]
    assert "advertised.listeners=PLAINTEXT://kafkette:9092" in services["kafkette"]["command"]
    for name in ("producer", "consumer"):
        service = services[name]
        assert service["environment"]["BOOTSTRAP"] == "kafkette:9092"
        assert service["depends_on"]["kafkette"]["condition"] == "service_healthy"
        script = re.search(r"python (\S+\.py)", service["command"]).group(1)
        assert (ROOT / script).is_file(), script


def test_example_producer_and_consumer_run_against_kafkette(kafka_broker) -> None:
    """The compose file's example programs, run as they are against a real kafkette."""
    env = {**os.environ, "BOOTSTRAP": kafka_broker, "TOPIC": "example-events",
           "GROUP": "example-group", "COUNT": "5", "PYTHONUNBUFFERED": "1"}
    produced = subprocess.run([sys.executable, "examples/producer.py"], capture_output=True,
                              text=True, timeout=60, cwd=ROOT, env=env)
    assert produced.returncode == 0, produced.stderr
    assert [line.split()[1] for line in produced.stdout.splitlines()] == [f"n={i}" for i in range(5)]
    consumed = subprocess.run([sys.executable, "examples/consumer.py"], capture_output=True,
                              text=True, timeout=60, cwd=ROOT, env=env)
    assert consumed.returncode == 0, consumed.stderr
    assert sorted(line.split()[1] for line in consumed.stdout.splitlines()) == \
        sorted(f"n={i}" for i in range(5))
