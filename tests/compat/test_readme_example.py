"""The README's example of testing an aiokafka app with the kafkette pytest plugin, verbatim."""

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer


async def test_consumer_reads_what_was_produced(kafka_broker):
    producer = AIOKafkaProducer(bootstrap_servers=kafka_broker)
    await producer.start()
    await producer.send_and_wait("orders", b"order-1")
    await producer.stop()
    consumer = AIOKafkaConsumer("orders", bootstrap_servers=kafka_broker, group_id="billing",
                                auto_offset_reset="earliest")
    await consumer.start()
    msg = await consumer.getone()
    await consumer.stop()
    assert msg.value == b"order-1"


def test_readme_shows_this_example_verbatim():
    import inspect
    from pathlib import Path

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    source = inspect.getsource(test_consumer_reads_what_was_produced)
    assert source in readme


# Every command README shows -------------------------------------------------------------------

import os  # noqa: E402
import re  # noqa: E402
import shlex  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

ROOT = Path(__file__).parents[2]

# Commands run by other tests (too slow or too big to run twice), with the test that runs them.
RUN_ELSEWHERE = {
    "pip install -e '.[test,pipeline]'": "tests/spine/test_collection.py",
    "pytest": "tests/spine/test_collection.py",
    "docker compose up": "tests/compat/test_compose.py",
    "docker compose --profile secure up kafkette-secure producer-secure consumer-secure":
        "tests/compat/test_compose_secure.py",
    "docker compose cp kafkette-secure:/certs/ca.pem ./ca.pem": "tests/compat/test_compose_secure.py",
    # its properties file is README's; the test runs the same broker and client
    "kafkette serve --dev --config regex-acl.properties":
        "tests/security/test_acl_regex_subscription.py",
    "python -m kafkette.pipeline.demo /tmp/kafkette-demo": "tests/pipeline/test_cli_env.py",
    "kafkette pipeline lag --log-dirs /tmp/kafkette-demo --out /tmp/kafkette-lag":
        "tests/pipeline/test_cli_env.py",
    "python -m bench all --peer tansu --peer noida": "bench/ (run by hand: it installs peer brokers)",
    # The admin server's HTTP endpoints, fetched over HTTP by the admin tests.
    "curl -s localhost:9644/metrics | grep kafka_consumergroup_lag": "tests/admin/test_metrics.py",
    "curl -s localhost:9644/v1/groups/billing | python -m json.tool": "tests/admin/test_server.py",
    "curl -s localhost:9644/v1/groups/workers | python -m json.tool":
        "tests/admin/test_share_groups.py",
    "curl -s http://127.0.0.1:9644/v1/clients | python -m json.tool":
        "tests/telemetry/test_client_telemetry.py",
    "curl -s http://127.0.0.1:9644/metrics | grep kafkette_client_metric":
        "tests/telemetry/test_client_telemetry.py",
}

# README's commands of the other tools: the test that runs each tool, and its parser, which must
# accept the command line README shows.
TOOL_TESTS = {
    "topics": "tests/clitools/test_client_tools.py",
    "console-producer": "tests/clitools/test_client_tools.py",
    "console-consumer": "tests/clitools/test_client_tools.py",
    "share-groups": "tests/share_state/test_cli.py",
    "acls": "tests/security/test_acls_command.py",
    "configs": "tests/clitools/test_entity_configs.py",
    "client-metrics": "tests/telemetry/test_client_telemetry.py",
    "reassign-partitions": "tests/cluster/test_reassign_command.py",
    "--version": "tests/clitools/test_client_tools.py",
}


def _tool_parser(tool: str, argv: list[str]) -> Any:
    from kafkette.broker.cli import (
        acls_command,
        client_metrics_command,
        console_consumer,
        console_producer,
        reassign_command,
        share_groups_command,
        topics_command,
    )

    if tool == "configs":
        from kafkette.broker.cli.main import configs_tool

        module: Any = configs_tool(argv)
    else:
        module = {"topics": topics_command, "console-producer": console_producer,
                  "console-consumer": console_consumer, "share-groups": share_groups_command,
                  "acls": acls_command, "client-metrics": client_metrics_command,
                  "reassign-partitions": reassign_command}[tool]
    return module.build_parser()


def _tool_of(command: str) -> str | None:
    """The kafkette tool a README command runs (after a pipe too), if one of TOOL_TESTS."""
    return _tool_words(command)[0]


def _tool_words(command: str) -> tuple[str | None, list[str]]:
    for segment in command.split("|"):
        words = shlex.split(segment)
        if words[:1] == ["kafkette"] and len(words) > 1 and words[1] in TOOL_TESTS:
            return words[1], words[2:]
    return None, []


def readme_commands() -> list[str]:
    """Shell commands of README's ```sh blocks and ``$ `` lines, and its indented commands."""
    commands: list[str] = []
    in_block, lang = False, ""
    # A line ending in a backslash continues on the next one, as in a shell.
    text = re.sub(r"\\\n\s*", " ", (ROOT / "README.md").read_text())
    for line in text.splitlines():
        if line.startswith("```"):
            in_block, lang = not in_block, line[3:].strip()
            continue
        if in_block and lang == "sh":
            command = "" if line.lstrip().startswith("#") else \
                re.split(r"\s+#\s", line.strip())[0].strip()
        elif in_block and lang == "" and line.startswith("$ "):
            command = line[2:].strip()
        elif not in_block and line.startswith(("    python -m ", "    kafkette ")):
            command = line.strip()
        else:
            continue
        if command:
            commands.append(command)
    return commands


def test_readme_lists_the_commands_this_file_runs():
    commands = readme_commands()
    assert "kafkette groups --bootstrap-server 127.0.0.1:9092 --describe --group billing" in commands
    assert "kafkette groups --bootstrap-server localhost:19092 --list" in commands
    for command in commands:
        words = shlex.split(command)
        if command in RUN_ELSEWHERE:
            where = RUN_ELSEWHERE[command].split(" ")[0]
            assert (ROOT / where).exists(), where
        elif (tool := _tool_of(command)) is not None:
            test_file = TOOL_TESTS[tool]
            assert tool.lstrip("-") in (ROOT / test_file).read_text(), (command, test_file)
            if tool != "--version":
                argv = _tool_words(command)[1]
                _tool_parser(tool, argv).parse_args(argv)  # a flag it lacks raises
        elif not _admin_api_command(command):
            assert words[:2] in (["kafkette", "serve"], ["kafkette", "groups"]), command


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _kafkette() -> str:
    return str(Path(sys.executable).parent / "kafkette")


def test_every_readme_serve_command_starts_and_stops_cleanly(tmp_path):
    (tmp_path / "server.properties").write_text("node.id=1\n")
    serves = [c for c in readme_commands() if c.startswith("kafkette serve")
              and c not in RUN_ELSEWHERE]
    assert len(serves) >= 4
    for command in serves:
        args = shlex.split(command)[1:]
        if "--admin" in args:  # never the fixed port README shows: it may be taken
            args[args.index("--admin") + 1] = "127.0.0.1:0"
        if not any(a.startswith("listeners=") for a in args):
            # Several nodes take consecutive ports from a fixed one: port 0 gives each a free one.
            port = 0 if "--nodes" in args else _free_port()
            args += ["--override", f"listeners=PLAINTEXT://127.0.0.1:{port}"]
        if not any(a.startswith("log.dirs=") for a in args):
            args += ["--override", f"log.dirs={tmp_path / 'logs'}"]
        proc = subprocess.Popen([_kafkette(), *args], cwd=tmp_path, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        line = proc.stdout.readline()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, (command, proc.stderr.read())
        assert line.startswith("kafkette listening on 127.0.0.1:"), command
        assert proc.stderr.read().rstrip().endswith("shutdown complete"), command


def test_every_readme_groups_command_runs(kafka_broker_factory):
    from kafkette.broker.cli.admin_client import AdminClient
    from tests.compat.kafka_python import produce

    broker = kafka_broker_factory()
    broker.run(broker.broker.logs.create_topic("orders", 2))
    produce(broker.bootstrap, "orders", 24, partitions=2)
    with AdminClient(broker.bootstrap) as admin:  # the group "billing", with offsets, no members
        admin.commit("billing", {("orders", 0): 10, ("orders", 1): 5})
    groups = [c for c in readme_commands() if c.startswith("kafkette groups")]
    assert len(groups) >= 10
    for command in groups:
        command = command.replace("127.0.0.1:9092", broker.bootstrap)
        command = command.replace("localhost:19092", broker.bootstrap)
        result = subprocess.run([_kafkette(), *shlex.split(command)[1:]], capture_output=True,
                                text=True, timeout=60, env={**os.environ})
        assert result.returncode == 0, (command, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr
    with AdminClient(broker.bootstrap) as admin:  # README's last command deleted the group
        assert "billing" not in [g for g, _t, _s in admin.list_groups()]


# The admin API (faults, nodes, moves): README's curl and `kafkette cluster` lines ----------------

ADMIN = "localhost:9644"


def _admin_api_command(command: str) -> bool:
    """curl against the admin server, or `kafkette cluster` (over the same HTTP API); the curl
    lines of the metrics section are fetched by tests/admin (RUN_ELSEWHERE)."""
    return (command.startswith("curl ") and ADMIN in command) or \
        command.startswith("kafkette cluster ")


def test_every_readme_admin_api_command_runs(tmp_path):
    """Each curl and `kafkette cluster` line of README, in order, against `kafkette serve --nodes 3
    --admin`, the way a user pastes them (the README's address swapped for the real one)."""
    commands = [c for c in readme_commands()
                if _admin_api_command(c) and c not in RUN_ELSEWHERE]
    assert any("/v1/faults" in c for c in commands) and any("/v1/nodes/" in c for c in commands)
    assert any(c.startswith("kafkette cluster faults add") for c in commands)
    proc = subprocess.Popen(
        [_kafkette(), "serve", "--nodes", "3", "--admin", "127.0.0.1:0", "--override",
         "listeners=PLAINTEXT://127.0.0.1:0", "--override", f"log.dirs={tmp_path / 'logs'}",
         "--override", "group.initial.rebalance.delay.ms=0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        admin = None
        for _ in range(10):
            line = proc.stdout.readline()
            match = re.search(r"kafkette admin on http://([\w.:-]+)", line)
            if match:
                admin = match.group(1)
                break
        assert admin is not None, "no admin URL printed"
        env = {**os.environ, "PATH": f"{Path(_kafkette()).parent}{os.pathsep}{os.environ['PATH']}"}
        subprocess.run([_kafkette(), "groups", "--bootstrap-server", _bootstrap_of(admin),
                        "--list"], capture_output=True, timeout=60, env=env)
        for command in commands:
            command = command.replace(ADMIN, admin)
            if command.startswith("curl "):  # an HTTP error status must fail the command too
                command = "curl --fail-with-body " + command[len("curl "):]
            result = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True,
                                    text=True, timeout=60, env=env)
            assert result.returncode == 0, (command, result.stdout, result.stderr)
            assert "Traceback" not in result.stderr, (command, result.stderr)
            if command.startswith("curl "):
                import json

                json.loads(result.stdout)  # every answer of the admin API is JSON
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)


def _bootstrap_of(admin: str) -> str:
    import json
    import urllib.request

    with urllib.request.urlopen(f"http://{admin}/v1/cluster", timeout=10) as response:
        node = json.load(response)["nodes"][0]
    return f"{node['host']}:{node['port']}"


# README's Python examples, run as a user pastes them ----------------------------------------------

def readme_python_block(containing: str) -> str:
    """The ```python block of README that contains ``containing``."""
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    found = [block for block in blocks if containing in block]
    assert len(found) == 1, f"{len(found)} python blocks contain {containing!r}"
    return found[0]


def test_first_steps_send_and_read_a_record(kafka_broker):
    code = readme_python_block('KafkaProducer(bootstrap_servers="127.0.0.1:9092")')
    code = code.replace("127.0.0.1:9092", str(kafka_broker))
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "b'order-1'\n"


def test_in_process_example_runs_as_a_script(tmp_path):
    code = readme_python_block("asyncio.run(main())")
    assert '"log.dirs": "/tmp/k"' in code
    code = code.replace('"/tmp/k"', repr(str(tmp_path)))
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert re.fullmatch(r"127\.0\.0\.1:\d+\n", ran.stdout), ran.stdout


def test_readme_names_its_three_most_common_errors():
    readme = (ROOT / "README.md").read_text()
    troubleshooting = " ".join(readme.split("## Troubleshooting", 1)[1].split("\n## ", 1)[0].split())
    for words in ("Address already in use", "Failed to acquire lock on file .lock",
                  "wrong listener"):
        assert words in troubleshooting
    assert readme.index("## Troubleshooting") < 130 * 80  # in a newcomer's first pages
    first_steps = readme.split("## First steps", 1)[1].split("\n## ", 1)[0]
    for topic in ("kafkette serve", "KafkaProducer", "kafka_broker", "--admin", "inject",
                  "--nodes 3"):
        assert topic in first_steps, topic
