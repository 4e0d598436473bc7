"""The first start-up: a locked log dir, bad config, a busy port -- one line on stderr each,
a non-zero exit and no traceback; unknown keys warned once; config values and shutdown logged."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys

import pytest

from kafkette.broker.config import BrokerConfig
from kafkette.broker.config_def import ConfigError, parse_value
from kafkette.broker.testing import BrokerProcess
from tests.spine.test_cli import start

SERVE = [sys.executable, "-m", "kafkette.broker", "serve"]


def serve_fails(*args: str) -> subprocess.CompletedProcess:
    """Run ``kafkette serve`` expecting a start-up failure: the error is the last stderr line."""
    result = subprocess.run([*SERVE, *args], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stdout == ""  # never claimed to be listening
    return result


def last_line(result: subprocess.CompletedProcess) -> str:
    errors = [line for line in result.stderr.splitlines() if line.startswith("kafkette:")]
    assert len(errors) == 1, result.stderr
    return errors[0]


def test_second_broker_on_a_locked_log_dir_refuses_to_start(tmp_path):
    with BrokerProcess({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path),
                        "group.initial.rebalance.delay.ms": "0"}) as first:
        result = serve_fails("--override", "listeners=PLAINTEXT://127.0.0.1:0",
                             "--override", f"log.dirs={tmp_path}")
        assert last_line(result) == (
            f"kafkette: Failed to acquire lock on file .lock in {tmp_path}. A Kafka instance in "
            "another process or thread is using this directory.")
        assert result.returncode == 1
        assert first.proc.poll() is None  # the first broker keeps running
        first.terminate()
    # Released on a clean stop: the next broker starts on the same directory.
    proc, _ = start(["--override", "listeners=PLAINTEXT://127.0.0.1:0",
                     "--override", f"log.dirs={tmp_path}"])
    proc.terminate()
    assert proc.wait(20) == 0


def test_a_killed_broker_leaves_no_stale_lock(tmp_path):
    config = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path),
              "group.initial.rebalance.delay.ms": "0"}
    with BrokerProcess(config) as broker:
        broker.kill()
        broker.start()  # same dir, same port: the kernel dropped the dead process's lock


@pytest.mark.parametrize(("override", "message"), [
    ("group.initial.rebalance.delay.ms=fast",
     "Invalid value fast for configuration group.initial.rebalance.delay.ms: Not a number of type INT"),
    ("num.partitions=abc", "Invalid value abc for configuration num.partitions: Not a number of type INT"),
    ("num.partitions=0", "Invalid value 0 for configuration num.partitions: Value must be at least 1"),
    ("node.id=abc", "Invalid value abc for configuration node.id: Not a number of type INT"),
    ("auto.create.topics.enable=yes", "Invalid value yes for configuration auto.create.topics.enable: "
                                      "Expected value to be either true or false"),
    ("log.cleanup.policy=compact,keep", "Invalid value compact,keep for configuration "
                                        "log.cleanup.policy: String must be one of: compact, delete"),
    ("socket.request.max.bytes=99999999999", "Invalid value 99999999999 for configuration "
                                             "socket.request.max.bytes: Not a number of type INT"),
    ("listeners=localhost:9092", "Invalid value localhost:9092 for configuration listeners: "
                                 "listener 'localhost:9092' must look like PLAINTEXT://host:port"),
    ("listeners=SSL://127.0.0.1:0", "ssl.keystore.location is not set: listener SSL (SSL) needs "
                                    "the broker's certificate and key"),
    ("listeners=SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms: kafkette does not serve "
                                               "GSSAPI (Kerberos); listener SASL_PLAINTEXT "
                                               "(SASL_PLAINTEXT) may enable PLAIN, SCRAM-SHA-256, "
                                               "SCRAM-SHA-512, OAUTHBEARER"),
])
def test_bad_override_is_one_line_naming_the_key(tmp_path, override, message):
    result = serve_fails("--override", f"log.dirs={tmp_path}", "--override", override)
    assert last_line(result) == f"kafkette: {message}"
    assert result.returncode == 2


def test_busy_port_is_one_line_naming_the_port(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = serve_fails("--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                             "--override", f"log.dirs={tmp_path}")
    assert last_line(result) == (f"kafkette: listeners: cannot listen on 127.0.0.1:{port} "
                                 "(listener PLAINTEXT): Address already in use")
    # The lock was released on the way out: a broker starts on the same directory.
    proc, _ = start(["--override", "listeners=PLAINTEXT://127.0.0.1:0",
                     "--override", f"log.dirs={tmp_path}"])
    proc.terminate()
    proc.wait(20)


@pytest.mark.parametrize(("listeners", "message"), [
    ("PLAINTEXT://127.0.0.1:70000", "Invalid value PLAINTEXT://127.0.0.1:70000 for configuration "
     "listeners: listener 'PLAINTEXT://127.0.0.1:70000': the port 70000 is out of range "
     "(0-65535; 0 picks a free one)"),
    ("PLAINTEXT://127.0.0.1:x", "Invalid value PLAINTEXT://127.0.0.1:x for configuration "
     "listeners: listener 'PLAINTEXT://127.0.0.1:x': the port 'x' is not a number"),
    ("PLAINTEXT://127.0.0.1", "Invalid value PLAINTEXT://127.0.0.1 for configuration listeners: "
     "listener 'PLAINTEXT://127.0.0.1' has no port: it must look like PLAINTEXT://host:port"),
    ("PLAINTEXT://no-such-host.invalid:0", "listeners: cannot listen on no-such-host.invalid:0 "
     "(listener PLAINTEXT): the host name does not resolve"),
])
def test_a_bad_listener_says_what_is_wrong_with_it(tmp_path, listeners, message):
    result = serve_fails("--override", f"log.dirs={tmp_path}", "--override",
                         f"listeners={listeners}")
    assert last_line(result).startswith(f"kafkette: {message}")


def test_a_listener_name_that_is_no_url_scheme_still_has_its_port():
    from kafkette.broker.config_def import Listener, parse_listeners

    assert parse_listeners("SASL_PLAINTEXT://127.0.0.1:9094,INTERNAL_2://:0") == [
        Listener("SASL_PLAINTEXT", "127.0.0.1", 9094), Listener("INTERNAL_2", "0.0.0.0", 0)]


def test_busy_admin_port_is_one_line_and_nothing_claims_to_listen(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = serve_fails("--admin", f"127.0.0.1:{port}", "--override",
                             "listeners=PLAINTEXT://127.0.0.1:0", "--override", f"log.dirs={tmp_path}")
    assert last_line(result) == (f"kafkette: admin.listener: cannot listen on 127.0.0.1:{port}: "
                                 "Address already in use")
    assert result.returncode == 1
    assert "listening" not in result.stderr  # not even in the log


def test_log_dirs_that_cannot_be_used(tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    free_port = "listeners=PLAINTEXT://127.0.0.1:0"  # never Kafka's 9092: it may be taken
    result = serve_fails("--override", free_port, "--override", f"log.dirs={a_file}")
    assert last_line(result) == f"kafkette: log.dirs {a_file} is not a directory"
    under_file = a_file / "logs"
    result = serve_fails("--override", free_port, "--override", f"log.dirs={under_file}")
    assert last_line(result).startswith(f"kafkette: log.dirs {under_file} cannot be created: ")


def test_corrupt_topic_catalog_is_named(tmp_path):
    catalog = tmp_path / "kafkette-topics.json"
    catalog.write_text("{not json")
    result = serve_fails("--override", "listeners=PLAINTEXT://127.0.0.1:0",
                         "--override", f"log.dirs={tmp_path}")
    assert last_line(result).startswith(f"kafkette: {catalog} is corrupt: ")


def test_missing_properties_file_and_bad_log_level(tmp_path):
    result = serve_fails("--config", str(tmp_path / "nope.properties"))
    assert last_line(result) == f"kafkette: --config {tmp_path / 'nope.properties'}: No such file or directory"
    result = serve_fails("--log-level", "bogus")
    assert result.stderr == ("kafkette serve: error: argument --log-level: invalid choice: 'BOGUS' "
                             "(choose from 'DEBUG', 'INFO', 'WARNING', 'ERROR', 'CRITICAL') "
                             "(see kafkette serve --help)\n")


def test_debug_flag_shows_the_traceback(tmp_path):
    result = subprocess.run([*SERVE, "--debug", "--override", "node.id=abc"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "Traceback" in result.stderr and "ConfigError" in result.stderr


def test_unknown_key_warned_once_config_logged_and_clean_shutdown(tmp_path):
    proc, _ = start(["--override", "listeners=PLAINTEXT://127.0.0.1:0",
                     "--override", f"log.dirs={tmp_path}", "--override", "num.partitons=3",
                     "--override", "num.network.threads=3"])  # a Kafka key with no effect here
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(20) == 0
    stderr = proc.stderr.read()
    warning = "The configuration 'num.partitons' was supplied but isn't a known config."
    assert stderr.count(warning) == 1, stderr
    assert "num.network.threads" not in stderr.split("config values:")[0]
    assert f"\tlog.dirs = {tmp_path}\n" in stderr and "\tnum.partitions = 1\n" in stderr
    assert stderr.rstrip().endswith("shutdown complete")


def test_validation_table_types_ranges_and_synonyms():
    assert parse_value("log.cleanup.policy", "compact, delete") == ["compact", "delete"]
    assert parse_value("offsets.topic.replication.factor", "1") == 1
    with pytest.raises(ConfigError, match="Not a number of type SHORT"):
        parse_value("offsets.topic.replication.factor", "40000")
    with pytest.raises(ConfigError, match="Value must be no more than 4"):
        parse_value("offsets.topic.compression.codec", "9")
    with pytest.raises(ConfigError, match="Not a number of type LONG"):
        parse_value("log.roll.jitter.ms", "x")  # a topic config's broker synonym
    assert BrokerConfig({"log.retention.hours": "2"})["log.retention.ms"] == str(2 * 3600_000)
    assert BrokerConfig({"log.retention.hours": "2", "log.retention.ms": "5"})["log.retention.ms"] == "5"
    with pytest.raises(ConfigError, match="advertised.listeners: listener EXTERNAL is not in listeners"):
        BrokerConfig({"advertised.listeners": "EXTERNAL://localhost:1"}).validate()
    assert BrokerConfig({"typo.key": "1", "node.id": "3"}).validate() == ["typo.key"]


def test_topic_synonyms_are_checked_though_loaded_only_when_supplied():
    # broker/config.py imports storage.topic_config only when a key outside CONFIG_KEYS and
    # DEFAULTS is looked up; a synonym with a default must therefore be listed in CONFIG_KEYS.
    from kafkette.broker.config_def import CONFIG_KEYS, DEFAULTS
    from kafkette.storage.topic_config import TOPIC_CONFIGS

    synonyms = {d.synonym for d in TOPIC_CONFIGS.values() if d.synonym}
    assert [key for key in DEFAULTS if key in synonyms and key not in CONFIG_KEYS] == []
    code = """
import sys
from kafkette.broker.config import BrokerConfig
from kafkette.broker.config_def import ConfigError
assert BrokerConfig({"node.id": "2"}).validate() == []
assert "kafkette.storage.topic_config" not in sys.modules
assert BrokerConfig({"log.roll.jitter.ms": "5", "typo.key": "1"}).validate() == ["typo.key"]
try:
    BrokerConfig({"log.preallocate": "maybe"}).validate()
except ConfigError as exc:
    print(exc)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == ("Invalid value maybe for configuration log.preallocate: "
                                  "Expected value to be either true or false"), out.stderr


def test_debug_logs_one_line_per_request(tmp_path):
    from tests.wire import WireClient

    proc, bootstrap = start(["--override", "listeners=PLAINTEXT://127.0.0.1:0",
                             "--override", f"log.dirs={tmp_path}", "--log-level", "debug"])
    try:
        with WireClient(bootstrap) as client:
            client.client_id = "probe-client"
            client.request(18, 3, client_software_name="probe", client_software_version="1")
            client.request(3, 12, topics=None, allow_auto_topic_creation=False,
                           include_topic_authorized_operations=False)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
    lines = [line for line in proc.stderr.read().splitlines() if "kafkette.requests" in line]
    api_versions = [line for line in lines if "client_id=probe-client" in line and "ApiVersions v3" in line]
    metadata = [line for line in lines if "client_id=probe-client" in line and "Metadata v12" in line]
    assert len(api_versions) == 1 and len(metadata) == 1, lines
    assert re.search(r"DEBUG kafkette\.requests: Metadata v12 correlation=\d+ "
                     r"client_id=probe-client from /127\.0\.0\.1: \d+\.\d{3} ms$", metadata[0])


def test_a_kafka_server_properties_starts_without_its_controller_listener(tmp_path):
    """Kafka's shipped KRaft server.properties: the CONTROLLER listener is Kafka's, not served."""
    props = tmp_path / "server.properties"
    props.write_text("process.roles=broker,controller\nnode.id=1\n"
                     "controller.quorum.bootstrap.servers=localhost:9093\n"
                     "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:1\n"
                     "advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093\n"
                     "controller.listener.names=CONTROLLER\ninter.broker.listener.name=PLAINTEXT\n"
                     "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT\n"
                     f"log.dirs={tmp_path / 'logs'}\nnum.network.threads=3\n")
    proc, _ = start(["--config", str(props)])
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(20) == 0
    stderr = proc.stderr.read()
    assert "isn't a known config" not in stderr  # Kafka's own keys are known
    assert "listener CONTROLLER" not in stderr and "listener PLAINTEXT" in stderr
