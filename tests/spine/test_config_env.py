"""Broker config from the environment: ``KAFKETTE_CFG_GROUP_INITIAL_REBALANCE_DELAY_MS=0`` is
``group.initial.rebalance.delay.ms=0``; above ``--config``, below ``--override``, checked like
every other key."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from kafkette.broker.config_env import environment_config, key_variable, variable_key
from tests.spine.test_cli import start

SERVE = [sys.executable, "-m", "kafkette.broker", "serve"]


@pytest.mark.parametrize(("variable", "key"), [
    ("GROUP_INITIAL_REBALANCE_DELAY_MS", "group.initial.rebalance.delay.ms"),
    ("LOG_DIRS", "log.dirs"),
    ("LISTENER_NAME_SASL__SSL_SCRAM___SHA___256_SASL_JAAS_CONFIG",
     "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config"),
])
def test_the_naming_convention(variable, key):
    assert variable_key(variable) == key
    assert key_variable(key) == f"KAFKETTE_CFG_{variable}"


def test_only_prefixed_variables_count():
    assert environment_config({"KAFKETTE_CFG_NUM_PARTITIONS": " 3 ", "KAFKA_CFG_NODE_ID": "2",
                               "KAFKETTE_CFG_": "x", "PATH": "/bin"}) == {"num.partitions": "3"}


def test_serve_reads_the_environment_below_override_above_the_properties_file(tmp_path):
    props = tmp_path / "server.properties"
    props.write_text("num.partitions=2\noffsets.topic.num.partitions=7\n")
    env = {**os.environ, "KAFKETTE_CFG_NUM_PARTITIONS": "3",
           "KAFKETTE_CFG_OFFSETS_TOPIC_NUM_PARTITIONS": "5",
           "KAFKETTE_CFG_GROUP_INITIAL_REBALANCE_DELAY_MS": "0"}
    proc, _ = start(["--config", str(props), "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                     "--override", f"log.dirs={tmp_path / 'logs'}",
                     "--override", "offsets.topic.num.partitions=4"], env=env)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(20) == 0
    log = proc.stderr.read()
    assert "\tnum.partitions = 3\n" in log  # the environment over the file
    assert "\toffsets.topic.num.partitions = 4\n" in log  # --override over the environment
    assert "\tgroup.initial.rebalance.delay.ms = 0\n" in log


def test_a_bad_value_from_the_environment_is_one_line_naming_the_key(tmp_path):
    env = {**os.environ, "KAFKETTE_CFG_GROUP_INITIAL_REBALANCE_DELAY_MS": "fast"}
    result = subprocess.run([*SERVE, "--override", f"log.dirs={tmp_path}"], env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == ("kafkette: Invalid value fast for configuration "
                             "group.initial.rebalance.delay.ms: Not a number of type INT\n")


def test_an_unknown_key_from_the_environment_is_warned_about(tmp_path):
    env = {**os.environ, "KAFKETTE_CFG_NUM_PARTITONS": "3"}
    proc, _ = start(["--override", "listeners=PLAINTEXT://127.0.0.1:0",
                     "--override", f"log.dirs={tmp_path}"], env=env)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(20) == 0
    assert "The configuration 'num.partitons' was supplied but isn't a known config." in (
        proc.stderr.read())
