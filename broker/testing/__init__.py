"""The kafkette pytest plugin (entry point ``pytest11`` named ``kafkette``).

Fixtures:

- ``kafka_broker``: a fresh in-process broker for one test. The value *is* its bootstrap string
  (``bootstrap_servers=kafka_broker`` works) and also offers pytest-kafka-broker's API
  (``.bootstrap_server``, ``.config()``, ``.producer()``, ``.consumer()``, ``.admin()``,
  ``.aio_producer()``, ``.aio_consumer()``; confluent-kafka) plus aiokafka clients
  (``.aiokafka_producer()``, ``.aiokafka_consumer()``, ``.aiokafka_admin()``) and
  ``.stop()`` / ``.start()`` / ``.restart()`` on the same address, and fault injection
  ``.inject(api, error, count=1, delay_ms=0, drop=False, throttle_ms=0)``, ``.faults()``,
  ``.clear_faults()`` (broker/cluster/faults.py).
- ``kafka_broker_session``: one broker shared by the whole session (same handle).
- ``kafka_broker_factory``: brokers with extra config, ``kafka_broker_factory(**{"num.partitions": 3})``,
  each the same handle as ``kafka_broker``.
- ``kafkette_broker``: ``kafka_broker`` under a name no other plugin uses.
- ``kafka_cluster`` / ``kafka_cluster_factory(nodes=3, **config)``: several nodes in one process
  (``KafkaCluster``: node lifecycle, coordinator and leader moves, fault injection).
- ``kafka_secure_broker_factory(protocol="SASL_SSL", mechanisms=("SCRAM-SHA-512",),
  users={"alice": "alice-secret"}, client_auth="none", **config)``: a TLS and/or SASL broker
  with generated certificates (needs ``cryptography``) and ready client settings
  (``SecureKafkaBroker``: ``.confluent_config()``, ``.aiokafka_settings()``,
  ``.kafka_python_settings()``, ``.client_certificate()``; broker/testing/secure.py).

Broker config for all of them: the ini option ``kafkette_broker_config`` (and pytest-kafka-broker's
``kafka_broker_extra_config``), one ``key=value`` a line, then ``--kafkette-config key=value``.
With pytest-kafka-broker also installed, its ``kafka_broker`` stays in charge and kafkette's
brokers are ``kafkette_broker`` / ``kafka_broker_session``; ``-p no:kafkette`` disables this plugin.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import nullcontext, suppress
from typing import Any

import pytest

from ..config import BrokerConfig
from ..config_def import ConfigError
from .broker_handle import KafkaBroker, KafkaCluster
from .runners import TEST_DEFAULTS, BrokerProcess, ThreadedBroker, dotted_keys, test_config

__all__ = ["TEST_DEFAULTS", "BrokerProcess", "KafkaBroker", "KafkaCluster", "ThreadedBroker",
           "test_config"]

INI_CONFIG = "kafkette_broker_config"
PKB_INI_CONFIG = "kafka_broker_extra_config"  # pytest-kafka-broker's ini option
PKB_PLUGIN = "kafka_broker"  # pytest-kafka-broker's plugin (entry point) name
PKB_MODULE = "pytest_kafka_broker"  # and its import name


# Options ----------------------------------------------------------------------------------------

def _pkb_active(pluginmanager: pytest.PytestPluginManager) -> bool:
    """pytest-kafka-broker is installed and not disabled (``-p no:kafka_broker``)."""
    if pluginmanager.is_blocked(PKB_PLUGIN):
        return False
    return any(ep.name == PKB_PLUGIN for ep in importlib.metadata.entry_points(group="pytest11"))


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    group = parser.getgroup("kafkette", "kafkette test broker")
    group.addoption("--kafkette-config", action="append", default=[], metavar="KEY=VALUE",
                    help="broker config for kafkette's fixtures (repeatable); wins over the ini")
    parser.addini(INI_CONFIG, type="linelist", default=[],
                  help="broker config for kafkette's fixtures, one key=value a line")
    if not _pkb_active(pluginmanager):
        # Let a suite written for pytest-kafka-broker run unchanged (its ini and flag).
        parser.addini(PKB_INI_CONFIG, type="linelist", default=[],
                      help="pytest-kafka-broker's extra broker config (also read by kafkette)")
        group.addoption("--kafka", action="store_true",
                        help="accepted for pytest-kafka-broker suites; kafkette always runs")
    group.addoption("--kafkette-admin", action="store_true",
                    help="give every kafkette fixture broker its admin server (web console, "
                         "/metrics) on a free port and print its URL")


def configured_overrides(config: pytest.Config) -> dict[str, str]:
    """Broker config from the ini options, then the command line; checked like ``kafkette serve``."""
    lines: list[str] = []
    if not config.pluginmanager.has_plugin(PKB_PLUGIN):
        # Not declared when pytest-kafka-broker is installed but not loaded.
        with suppress(ValueError):
            lines += config.getini(PKB_INI_CONFIG) or []
    lines += config.getini(INI_CONFIG) or []
    lines += config.getoption("kafkette_config") or []
    out: dict[str, str] = {}
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if "=" not in line:
            raise pytest.UsageError(f"kafkette: broker config expects key=value, got {line!r}")
        key, value = line.split("=", 1)
        out[key.strip()] = value.strip()
    return out


def pytest_configure(config: pytest.Config) -> None:
    overrides = configured_overrides(config)
    try:
        BrokerConfig({**TEST_DEFAULTS, **overrides}).validate()
    except ConfigError as exc:
        raise pytest.UsageError(f"kafkette: {exc}") from None
    config.stash[_OVERRIDES] = overrides
    if not config.pluginmanager.has_plugin(PKB_PLUGIN):
        from . import pytest_kafka_broker

        config.pluginmanager.register(pytest_kafka_broker, "kafkette-kafka-broker")
        if importlib.util.find_spec(PKB_MODULE) is None:  # not installed: answer its import
            sys.modules[PKB_MODULE] = pytest_kafka_broker


_OVERRIDES = pytest.StashKey[dict[str, str]]()


# Fixtures ---------------------------------------------------------------------------------------

def _announce_admin(config: pytest.Config, broker: ThreadedBroker) -> None:
    """With ``--kafkette-admin``: print the broker's console URL past pytest's capture."""
    admin = broker.broker.admin if broker.broker is not None else None
    if admin is None:
        return
    capture = config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else nullcontext():
        print(f"\nkafkette console for {broker.bootstrap}: {admin.url}", flush=True)


class _Brokers:
    """Brokers started by one fixture, each on its own temporary log.dirs."""

    def __init__(self, pytestconfig: pytest.Config) -> None:
        self.pytestconfig = pytestconfig
        given: dict[str, str] = pytestconfig.stash.get(_OVERRIDES, {})
        self.overrides = dict(given)
        self.with_admin = bool(pytestconfig.getoption("kafkette_admin"))
        self.started: list[ThreadedBroker] = []
        self.dirs: list[tempfile.TemporaryDirectory] = []

    def start(self, config: Mapping[str, Any] | None = None, *, clock: Any | None = None,
              nodes: int = 1, **overrides: Any) -> ThreadedBroker:
        tmp = tempfile.TemporaryDirectory(prefix="kafkette-")
        self.dirs.append(tmp)
        merged = test_config(tmp.name)
        merged.update(self.overrides)
        merged.update(dotted_keys(overrides))
        merged.update({k: str(v) for k, v in (config or {}).items()})
        if self.with_admin:
            merged.setdefault("admin.listener", "127.0.0.1:0")
        broker = ThreadedBroker(merged, clock=clock, nodes=nodes)
        self.started.append(broker)
        if self.with_admin:
            _announce_admin(self.pytestconfig, broker)
        return broker

    def close(self) -> None:
        for broker in self.started:
            broker.close()
        for tmp in self.dirs:
            tmp.cleanup()


@pytest.fixture
def kafka_broker_factory(pytestconfig: pytest.Config) -> Iterator[Callable[..., KafkaBroker]]:
    """Start brokers with extra config: ``kafka_broker_factory(**{"num.partitions": 3})``; each
    is a handle like ``kafka_broker``'s."""
    brokers = _Brokers(pytestconfig)
    yield lambda config=None, **overrides: KafkaBroker(brokers.start(config, **overrides))
    brokers.close()


@pytest.fixture
def kafkette_broker(kafka_broker_factory: Callable[..., KafkaBroker]) -> KafkaBroker:
    """A fresh in-process kafkette for one test (see the module docstring for the handle)."""
    return kafka_broker_factory()


@pytest.fixture(scope="session")
def kafka_broker_session(pytestconfig: pytest.Config) -> Iterator[KafkaBroker]:
    """One kafkette shared by every test of the session."""
    brokers = _Brokers(pytestconfig)
    yield KafkaBroker(brokers.start())
    brokers.close()


@pytest.fixture
def kafka_secure_broker_factory(pytestconfig: pytest.Config) -> Iterator[Callable[..., Any]]:
    """Start secured brokers (see ``kafkette.broker.testing.secure``)."""
    from pathlib import Path

    from .secure import SecureKafkaBroker, secure_config

    brokers = _Brokers(pytestconfig)

    def start(protocol: str = "SASL_SSL", mechanisms: tuple[str, ...] = ("SCRAM-SHA-512",),
              users: Mapping[str, str] | None = None, client_auth: str = "none",
              config: Mapping[str, Any] | None = None, **overrides: Any) -> SecureKafkaBroker:
        users = dict(users if users is not None else {"alice": "alice-secret"})
        certs = tempfile.TemporaryDirectory(prefix="kafkette-certs-")
        brokers.dirs.append(certs)
        secured, ca = secure_config(Path(certs.name), protocol, tuple(mechanisms), users,
                                    client_auth)
        runner = brokers.start({**secured, **(config or {})}, **overrides)
        return SecureKafkaBroker(runner, protocol, tuple(mechanisms), users, ca)

    yield start
    brokers.close()


@pytest.fixture
def kafka_cluster_factory(pytestconfig: pytest.Config) -> Iterator[Callable[..., KafkaCluster]]:
    """Start clusters: ``kafka_cluster_factory(nodes=3, **{"num.partitions": 6})``."""
    brokers = _Brokers(pytestconfig)
    yield lambda nodes=3, config=None, **overrides: KafkaCluster(
        brokers.start(config, nodes=nodes, **overrides))
    brokers.close()


@pytest.fixture
def kafka_cluster(kafka_cluster_factory: Callable[..., KafkaCluster]) -> KafkaCluster:
    """Three nodes in one process: ``.bootstrap``, ``.nodes``, ``.stop_node(id)``,
    ``.start_node(id)``, ``.move_coordinator(group, id)``, ``.move_leader(topic, p, id)``,
    ``.inject(...)``, ``.clear_faults()``."""
    return kafka_cluster_factory(3)
