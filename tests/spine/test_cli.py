"""``kafkette serve``: properties file + overrides, bound address line, clean shutdown."""

from __future__ import annotations

import re
import signal
import subprocess
import sys

import pytest

from kafkette.broker.config import BrokerConfig, read_properties
from kafkette.broker.config_def import ConfigError
from tests.wire import WireClient


def start(args: list[str], env: dict[str, str] | None = None) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "kafkette.broker", "serve", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()
    match = re.fullmatch(r"kafkette listening on (127\.0\.0\.1:\d+)\n", line)
    assert match, f"unexpected first line {line!r}; stderr: {proc.stderr.read() if proc.poll() is not None else ''}"
    return proc, match.group(1)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_port_zero_then_clean_shutdown(tmp_path, sig):
    props = tmp_path / "server.properties"
    props.write_text("# dev broker\nlisteners=PLAINTEXT://127.0.0.1:9\nnode.id = 7\n"
                     f"log.dirs={tmp_path / 'logs'}\n")
    proc, bootstrap = start(["--config", str(props),
                             "--override", "listeners=PLAINTEXT://127.0.0.1:0"])
    try:
        with WireClient(bootstrap) as client:
            md = client.request(3, 12, topics=None, allow_auto_topic_creation=False,
                                include_topic_authorized_operations=False)
        assert md.brokers[0].node_id == 7  # from the properties file
        assert md.controller_id == 7
        assert f"{md.brokers[0].host}:{md.brokers[0].port}" == bootstrap
    finally:
        proc.send_signal(sig)
        assert proc.wait(20) == 0
    assert "shutting down" in proc.stderr.read()


def test_advertised_listener_is_what_metadata_returns(tmp_path):
    proc, bootstrap = start(["--override", "listeners=PLAINTEXT://127.0.0.1:0",
                             "--override", "advertised.listeners=PLAINTEXT://localhost:19092",
                             "--override", f"log.dirs={tmp_path}"])
    try:
        with WireClient(bootstrap) as client:
            md = client.request(3, 1, topics=None)
        assert (md.brokers[0].host, md.brokers[0].port) == ("localhost", 19092)
    finally:
        proc.terminate()
        proc.wait(20)


def test_bad_override_is_rejected_with_exit_code_2():
    result = subprocess.run([sys.executable, "-m", "kafkette.broker", "serve", "--override", "novalue"],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert "key=value" in result.stderr


def test_properties_parsing(tmp_path):
    path = tmp_path / "p.properties"
    path.write_text("a=1\n! comment\nb : two\nlong=x\\\n  y\nempty=\n")
    assert read_properties(path) == {"a": "1", "b": "two", "long": "xy", "empty": ""}


def test_config_defaults_and_types():
    config = BrokerConfig({"num.partitions": 3})
    assert config.get_int("num.partitions") == 3
    assert config.get_int("offsets.topic.num.partitions") == 50
    assert config.get_int("socket.request.max.bytes") == 104857600
    assert config.get_bool("auto.create.topics.enable") is True
    assert config.listener.port == 9092
    with pytest.raises(ConfigError):
        BrokerConfig({"node.id": "x"}).get_int("node.id")


@pytest.mark.parametrize("argv", [
    ["serve"],
    ["serve", "--config", "a.properties", "--override", "a=b", "--override=c=d", "--debug"],
    ["serve", "--log-level", "debug", "--admin", ":8080", "--nodes", "3"],
    ["serve", "--log-l=warning", "--over", "x=1"],  # argparse's abbreviations
])
def test_a_serve_command_line_is_parsed_as_the_whole_parser_does(argv):
    from kafkette.broker.cli.main import build_parser, parse_args

    assert vars(parse_args(argv)) == vars(build_parser().parse_args(argv))


@pytest.mark.parametrize(("argv", "message"), [
    (["serve", "--nodes", "x"], "kafkette serve: error: argument --nodes: invalid int value: 'x'"),
    (["serve", "--log-level", "loud"], "kafkette serve: error: argument --log-level: invalid "
                                       "choice: 'LOUD'"),
    (["serve", "extra"], "kafkette: error: unrecognized arguments: extra"),
    (["serve", "--override"], "kafkette serve: error: argument --override: expected one argument"),
])
def test_a_bad_serve_command_line_is_worded_by_the_whole_parser(argv, message, capsys):
    from kafkette.broker.cli.main import parse_args

    with pytest.raises(SystemExit) as exit_:
        parse_args(argv)
    assert exit_.value.code == 2
    assert capsys.readouterr().err.startswith(message)


def test_serve_help_is_the_whole_parsers(capsys):
    from kafkette.broker.cli.main import parse_args

    with pytest.raises(SystemExit):
        parse_args(["serve", "--help"])
    assert capsys.readouterr().out.startswith("usage: kafkette serve [-h] [--config CONFIG]")
