"""docker-compose.yml and the Dockerfile: checked statically (Docker is not needed), and every
service's command line run here the way its container runs it."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kafkette.broker.config import BrokerConfig
from tests.tools import ROOT
from tests.wire import WireClient

COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
yaml = pytest.importorskip("yaml", reason="PyYAML not installed: cannot read the compose file")


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


def services() -> dict:
    return yaml.safe_load(COMPOSE.read_text())["services"]


def dockerfile_stages() -> dict[str, list[tuple[str, str]]]:
    """Instructions of each stage: {stage: [(INSTRUCTION, arguments), ...]}."""
    stages: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] = []
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        instruction, _, rest = line.partition(" ")
        if instruction.upper() == "FROM":
            current = []
            stages[rest.split(" AS ")[-1].strip()] = current
        current.append((instruction.upper(), rest.strip()))
    return stages


def overrides(command: list[str]) -> dict[str, str]:
    pairs = [command[i + 1] for i, arg in enumerate(command) if arg == "--override"]
    return dict(pair.split("=", 1) for pair in pairs)


def test_compose_config_is_valid() -> None:
    command, reason = _compose_command()
    if command is None:
        pytest.skip(reason)
    proc = subprocess.run([*command, "-f", str(COMPOSE), "config"], capture_output=True,
                          text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "kafkette" in proc.stdout and "producer" in proc.stdout


def test_every_service_statically() -> None:
    spec = services()
    stages = dockerfile_stages()
    # `docker compose up`: the services of no profile (the SASL_SSL example's are in
    # test_compose_secure.py)
    assert {name for name, service in spec.items() if not service.get("profiles")} == {
        "kafkette", "producer", "consumer"}
    for name, service in spec.items():
        # Built from this repository's Dockerfile; nothing installed at run time.
        assert service["build"]["context"] == "." and service["build"]["target"] in stages, name
        assert isinstance(service["command"], list), f"{name}: exec form, no shell as PID 1"
        assert "sh" not in service["command"][:1] and "pip" not in " ".join(service["command"])
        assert service["init"] is True, name  # signals reach the process, zombies reaped
        for volume in service.get("volumes", []):
            assert not volume.startswith("."), f"{name} mounts the source: {volume}"
    broker = spec["kafkette"]
    config = BrokerConfig(overrides(broker["command"]))
    assert config.validate() == []  # every key known, every value valid
    assert [(item.name, item.port) for item in config.listeners] == [("INTERNAL", 9092),
                                                                      ("EXTERNAL", 19092)]
    assert [(item.name, item.host, item.port) for item in config.advertised_listeners] == [
        ("INTERNAL", "kafkette", 9092), ("EXTERNAL", "localhost", 19092)]
    assert broker["ports"] == ["19092:19092"]  # the host reaches the EXTERNAL listener
    assert config["log.dirs"] == "/var/lib/kafkette"
    assert "--dev" in broker["command"]  # the development preset, as the pytest plugin's
    assert any(v.endswith(":/var/lib/kafkette") for v in broker["volumes"])
    health = broker["healthcheck"]["test"]
    assert health[:4] == ["CMD", "python", "-m", "kafkette.broker.cli.healthcheck"]
    for name in ("producer", "consumer"):
        service = spec[name]
        assert service["environment"]["BOOTSTRAP"] == "kafkette:9092"
        assert service["depends_on"]["kafkette"]["condition"] == "service_healthy"


def test_dockerfile_copies_what_the_package_needs(tmp_path) -> None:
    stages = dockerfile_stages()
    assert set(stages) == {"kafkette", "examples"}
    for stage in stages.values():
        for instruction, args in stage:
            if instruction == "COPY":
                for source in args.split()[:-1]:
                    assert (ROOT / source).exists(), source
                    target = tmp_path / "context" / source
                    target.parent.mkdir(parents=True, exist_ok=True)
                    copy = shutil.copytree if (ROOT / source).is_dir() else shutil.copy
                    copy(ROOT / source, target)
            if instruction in ("ENTRYPOINT", "CMD") and not args.startswith("NONE"):
                json.loads(args)  # exec form
    entrypoint = dict(stages["kafkette"])["ENTRYPOINT"]
    assert json.loads(entrypoint) == ["kafkette"]
    # The image's `pip install .` works from exactly the copied files (setuptools' build step).
    built = tmp_path / "built"
    proc = subprocess.run([sys.executable, "-c", "from setuptools import setup; setup()", "-q",
                           "build_py", "-d", str(built)], cwd=tmp_path / "context",
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for module in ("broker/cli/main.py", "broker/cli/healthcheck.py", "storage/topics.py",
                   "coordinator/group/group_service.py", "protocol/codec.py"):
        assert (built / "kafkette" / module).is_file(), module


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _entrypoint() -> str:
    script = Path(sys.executable).parent / "kafkette"  # the console script, as in the image
    return str(script) if script.exists() else shutil.which("kafkette") or "kafkette"


def _start_broker(command: list[str], ports: dict[int, int], log_dir: Path,
                  advertise: dict[str, str] | None = None) -> subprocess.Popen:
    """The kafkette service's command line, with its ports and volume mapped to this machine."""
    args = []
    for arg in command:
        if arg.startswith("listeners="):
            for container, local in ports.items():
                arg = arg.replace(f"0.0.0.0:{container}", f"127.0.0.1:{local}")
        elif arg.startswith("log.dirs="):
            arg = f"log.dirs={log_dir}"
        elif arg.startswith("advertised.listeners=") and advertise:
            arg = "advertised.listeners=" + ",".join(f"{k}://{v}" for k, v in advertise.items())
        args.append(arg)
    proc = subprocess.Popen([_entrypoint(), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    line = proc.stdout.readline()
    assert line.startswith("kafkette listening on "), (line, proc.stderr.read() if proc.poll() else "")
    return proc


def _stop(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGTERM)  # what `docker stop` sends to the exec-form process
    assert proc.wait(30) == 0
    return proc.stderr.read()


def _healthcheck(test: list[str], port: int) -> subprocess.CompletedProcess:
    argv = [sys.executable if arg == "python" else arg.replace(":9092", f":{port}") for arg in test[1:]]
    return subprocess.run(argv, capture_output=True, text=True, timeout=30)


def test_broker_service_runs_with_two_listeners_and_a_real_healthcheck(tmp_path) -> None:
    spec = services()["kafkette"]
    internal, external = _free_port(), _free_port()
    proc = _start_broker(spec["command"], {9092: internal, 19092: external}, tmp_path)
    try:
        assert _healthcheck(spec["healthcheck"]["test"], internal).returncode == 0
        # Each listener advertises its own address (Kafka's listener names).
        for port, expected in ((internal, ("kafkette", 9092)), (external, ("localhost", 19092))):
            with WireClient(f"127.0.0.1:{port}") as client:
                md = client.request(3, 12, topics=None, allow_auto_topic_creation=False,
                                    include_topic_authorized_operations=False)
            assert (md.brokers[0].host, md.brokers[0].port) == expected
    finally:
        stderr = _stop(proc)
    assert stderr.rstrip().endswith("shutdown complete")
    assert "isn't a known config" not in stderr
    down = _healthcheck(spec["healthcheck"]["test"], internal)
    assert down.returncode == 1 and down.stderr.startswith("unhealthy: ")


def test_example_services_run_against_the_broker_service(tmp_path) -> None:
    spec = services()
    internal, external = _free_port(), _free_port()
    proc = _start_broker(spec["kafkette"]["command"], {9092: internal, 19092: external}, tmp_path,
                         advertise={"INTERNAL": f"127.0.0.1:{internal}",
                                    "EXTERNAL": f"127.0.0.1:{external}"})
    try:
        outputs = {}
        for name in ("producer", "consumer"):
            service = spec[name]
            env = {**os.environ, **{k: str(v) for k, v in service["environment"].items()},
                   "COUNT": "5", "PYTHONUNBUFFERED": "1"}
            env["BOOTSTRAP"] = env["BOOTSTRAP"].replace("kafkette:9092", f"127.0.0.1:{internal}")
            argv = [sys.executable if a == "python" else a for a in service["command"]]
            ran = subprocess.run(argv, cwd=ROOT / "examples", env=env, capture_output=True,
                                 text=True, timeout=90)  # WORKDIR /examples in the image
            assert ran.returncode == 0, ran.stderr
            outputs[name] = sorted(line.split()[1] for line in ran.stdout.splitlines())
        assert outputs["producer"] == outputs["consumer"] == sorted(f"n={i}" for i in range(5))
        # From the host, through the published EXTERNAL listener, as README shows.
        listed = subprocess.run([_entrypoint(), "groups", "--bootstrap-server",
                                 f"localhost:{external}", "--list"], capture_output=True,
                                text=True, timeout=60)
        assert listed.returncode == 0 and listed.stdout.split() == ["example-group"], listed.stderr
    finally:
        _stop(proc)


def test_readme_points_at_the_host_listener() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "localhost:19092" in readme and "kafkette:9092" in readme
    assert "kafkette groups --bootstrap-server localhost:19092 --list" in readme
    assert shlex.split("docker compose up")[0] == "docker" and "docker compose up" in readme
