"""The pytest plugin as users meet it: a pytest-kafka-broker suite run unchanged, the handle that
is the bootstrap string, the session broker, config from ini and command line, stop/start on the
same address, and both plugins side by side. Suites run in a child ``pytest`` in a fresh folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from kafkette.broker.testing import KafkaBroker
from tests.tools import ROOT

SUITE = ROOT / "tests" / "compat" / "programs" / "pytest_kafka_broker_suite.py"


def run_pytest(folder: Path, *args: str,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                          cwd=folder, capture_output=True, text=True, timeout=300, env=env)


def write(folder: Path, name: str, text: str) -> None:
    (folder / name).write_text(textwrap.dedent(text))


def test_a_pytest_kafka_broker_suite_runs_unchanged(tmp_path):
    shutil.copy(SUITE, tmp_path / "test_ported.py")
    write(tmp_path, "pytest.ini", """\
        [pytest]
        kafka_broker_extra_config =
            num.partitions=3
        """)
    result = run_pytest(tmp_path, "--kafka")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "6 passed" in result.stdout


def test_session_broker_and_config_from_ini_and_command_line(tmp_path):
    write(tmp_path, "pytest.ini", """\
        [pytest]
        kafkette_broker_config =
            num.partitions=2
            offsets.topic.num.partitions=4
        """)
    write(tmp_path, "test_session.py", """\
        import pytest

        seen = []

        @pytest.fixture(scope="module")
        def shared(kafka_broker_session):  # a wider-scoped fixture built on it: no ScopeMismatch
            return kafka_broker_session

        def test_one(shared, kafka_broker_session):
            seen.append(str(kafka_broker_session))
            broker = kafka_broker_session.runner.broker
            assert broker.config.get_int("num.partitions") == 5          # command line wins
            assert broker.config.get_int("offsets.topic.num.partitions") == 4  # from the ini

        def test_two(kafka_broker_session, kafka_broker):
            assert seen == [str(kafka_broker_session)]  # the same broker for the session
            assert kafka_broker != kafka_broker_session  # a per-test broker is another one
            assert kafka_broker.runner.broker.config.get_int("num.partitions") == 5
        """)
    result = run_pytest(tmp_path, "--kafkette-config", "num.partitions=5")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout


def test_bad_config_is_a_usage_error(tmp_path):
    write(tmp_path, "test_nothing.py", "def test_nothing():\n    pass\n")
    result = run_pytest(tmp_path, "--kafkette-config", "num.partitions=abc")
    assert result.returncode == 4  # pytest's usage error
    assert ("kafkette: Invalid value abc for configuration num.partitions: Not a number of type INT"
            in result.stderr)
    assert "Traceback" not in result.stderr


def test_side_by_side_with_pytest_kafka_broker_and_disabled(tmp_path):
    # A stand-in registered under pytest-kafka-broker's plugin name ("kafka_broker"): with it
    # active, its kafka_broker fixture is used and kafkette's stays reachable as kafkette_broker.
    write(tmp_path, "kafka_broker.py", """\
        import pytest

        @pytest.fixture
        def kafka_broker():
            return "the-other-plugin"
        """)
    write(tmp_path, "test_both.py", """\
        from kafkette.broker.testing import KafkaBroker

        def test_both(kafka_broker, kafkette_broker):
            assert kafka_broker == "the-other-plugin"
            assert isinstance(kafkette_broker, KafkaBroker)
        """)
    result = run_pytest(tmp_path, "-p", "kafka_broker", "test_both.py")
    assert result.returncode == 0, result.stdout + result.stderr
    write(tmp_path, "test_only_other.py", """\
        def test_only_other(kafka_broker, request):
            assert kafka_broker == "the-other-plugin"
            assert "kafkette_broker" not in request.fixturenames
        """)
    result = run_pytest(tmp_path, "-p", "kafka_broker", "-p", "no:kafkette", "test_only_other.py")
    assert result.returncode == 0, result.stdout + result.stderr


def installed_pytest_kafka_broker(folder: Path) -> dict[str, str]:
    """A stand-in for pytest-kafka-broker installed as pip installs it (a distribution with a
    ``pytest11`` entry point named ``kafka_broker``); the environment that puts it on the path."""
    site = folder / "site"
    package = site / "pytest_kafka_broker"
    package.mkdir(parents=True)
    write(package, "__init__.py", """\
        from dataclasses import dataclass

        @dataclass
        class KafkaBrokerContext:
            bootstrap_server: str
        """)
    write(package, "plugin.py", """\
        import pytest

        from . import KafkaBrokerContext

        @pytest.fixture
        def kafka_broker():
            return KafkaBrokerContext("the-other-plugin:0")

        def pytest_addoption(parser):
            parser.addini("kafka_broker_extra_config", type="linelist", help="extra config")
        """)
    dist = site / "pytest_kafka_broker-1.0.0.dist-info"
    dist.mkdir()
    write(dist, "METADATA", "Metadata-Version: 2.1\nName: pytest-kafka-broker\nVersion: 1.0.0\n")
    write(dist, "entry_points.txt", "[pytest11]\nkafka_broker = pytest_kafka_broker.plugin\n")
    return {**os.environ, "PYTHONPATH": str(site)}


def test_with_pytest_kafka_broker_installed_either_plugin_can_be_disabled(tmp_path):
    env = installed_pytest_kafka_broker(tmp_path)
    write(tmp_path, "pytest.ini", """\
        [pytest]
        kafka_broker_extra_config =
            num.partitions=3
        """)
    write(tmp_path, "test_theirs.py", """\
        from pytest_kafka_broker import KafkaBrokerContext

        def test_theirs(kafka_broker, kafkette_broker):
            assert kafka_broker == KafkaBrokerContext("the-other-plugin:0")
            assert kafkette_broker.count(":") == 1
        """)
    result = run_pytest(tmp_path, "test_theirs.py", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    write(tmp_path, "test_ours.py", """\
        from kafkette.broker.testing import KafkaBroker

        def test_ours(kafka_broker):
            assert isinstance(kafka_broker, KafkaBroker)
            assert kafka_broker.broker.config.get_int("num.partitions") == 3  # their ini, read
        """)
    result = run_pytest(tmp_path, "-p", "no:kafka_broker", "test_ours.py", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    result = run_pytest(tmp_path, "-p", "no:kafkette", "test_theirs.py", "-k", "nothing", env=env)
    assert result.returncode == 5, result.stdout + result.stderr  # collected, nothing selected


def test_factory_brokers_are_handles_like_kafka_broker(kafka_broker_factory):
    broker = kafka_broker_factory(**{"num.partitions": 2})
    assert isinstance(broker, KafkaBroker) and broker == broker.bootstrap_server
    assert broker.config["num.partitions"] == "2"  # the broker's config
    assert broker.config({"client.id": "x"})["bootstrap.servers"] == broker  # a client's
    producer = broker.producer()
    producer.produce("factory", b"v")
    assert producer.flush(30) == 0
    assert "factory" in broker.admin().list_topics(timeout=30).topics
    assert broker.broker.config.get_int("num.partitions") == 2  # the running Broker
    assert broker.restart is not None and broker.aiokafka_consumer is not None


async def test_handle_is_the_bootstrap_string_and_keeps_its_address(kafka_broker):
    assert isinstance(kafka_broker, KafkaBroker) and isinstance(kafka_broker, str)
    assert kafka_broker == kafka_broker.bootstrap_server == kafka_broker.bootstrap
    assert kafka_broker == "{}:{}".format(*kafka_broker.address)
    producer = kafka_broker.aiokafka_producer()
    await producer.start()
    await producer.send_and_wait("kept", b"before-restart")
    await producer.stop()
    before = kafka_broker.address
    await _in_thread(kafka_broker.stop)
    await _in_thread(kafka_broker.start)
    assert kafka_broker.address == before
    consumer = kafka_broker.aiokafka_consumer("kept", group_id="g", auto_offset_reset="earliest")
    await consumer.start()
    try:
        msg = await consumer.getone()
    finally:
        await consumer.stop()
    assert msg.value == b"before-restart"
    admin = kafka_broker.aiokafka_admin()
    await admin.start()
    try:
        assert "kept" in await admin.list_topics()
    finally:
        await admin.close()


async def _in_thread(fn) -> None:
    import asyncio

    await asyncio.to_thread(fn)


def test_two_in_process_brokers_cannot_share_a_log_dir(kafka_broker_factory, tmp_path):
    import pytest

    from kafkette.storage.topics import LogDirError

    kafka_broker_factory(config={"log.dirs": str(tmp_path)})
    with pytest.raises(LogDirError, match="Failed to acquire lock on file .lock"):
        kafka_broker_factory(config={"log.dirs": str(tmp_path)})
