"""The handle kafkette's pytest fixtures give a test: the bootstrap string itself, with
pytest-kafka-broker's methods and aiokafka client factories, and everything of the
:class:`ThreadedBroker` running it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .runners import ThreadedBroker


class BrokerSettings(dict[str, str]):
    """The test broker's config (``kafka_broker.config["log.dirs"]``); called, the librdkafka
    client config for the broker, as pytest-kafka-broker's ``kafka_broker.config(extra)``."""

    def __init__(self, settings: Mapping[str, str], bootstrap: str,
                 client_config: Callable[[Mapping[str, Any] | None], dict[str, Any]] | None = None
                 ) -> None:
        super().__init__(settings)
        self.bootstrap = bootstrap
        # a secured broker's client settings (TLS files, SASL login), else PLAINTEXT's
        self.client_config = client_config

    def __call__(self, config: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """librdkafka client config for this broker, on top of ``config``."""
        if self.client_config is not None:
            return self.client_config(config)
        return {**(config or {}), "bootstrap.servers": self.bootstrap,
                "security.protocol": "PLAINTEXT"}


class KafkaBroker(str):
    """A running test broker: the bootstrap string itself, with pytest-kafka-broker's methods
    (this is its ``KafkaBrokerContext``) and aiokafka client factories. Any other attribute is
    the :class:`ThreadedBroker`'s (``.broker``, ``.run()``, ``.loop``, ...)."""

    runner: ThreadedBroker

    def __new__(cls, runner: ThreadedBroker) -> KafkaBroker:
        handle = super().__new__(cls, runner.bootstrap)
        handle.runner = runner
        return handle

    def __getattr__(self, name: str) -> Any:
        # Only reached for names this class does not define: the runner's.
        if name == "runner":  # not yet set (unpickling, copy): no recursion
            raise AttributeError(name)
        return getattr(self.runner, name)

    # pytest-kafka-broker's KafkaBrokerContext ---------------------------------------------------
    @property
    def bootstrap_server(self) -> str:
        return str(self)

    @property
    def config(self) -> BrokerSettings:
        """The broker's config; ``.config(extra)`` is the librdkafka client config."""
        return BrokerSettings(self.runner.config, str(self))

    def admin(self, config: Mapping[str, Any] | None = None) -> Any:
        from confluent_kafka.admin import AdminClient

        return AdminClient(self.config(config))

    def producer(self, config: Mapping[str, Any] | None = None) -> Any:
        from confluent_kafka import Producer

        return Producer(self.config(config))

    def consumer(self, config: Mapping[str, Any] | None = None) -> Any:
        from confluent_kafka import Consumer

        return Consumer(self.config(config))

    def aio_producer(self, config: Mapping[str, Any] | None = None) -> Any:
        from confluent_kafka.aio import AIOProducer

        return AIOProducer(self.config(config))

    def aio_consumer(self, config: Mapping[str, Any] | None = None) -> Any:
        from confluent_kafka.aio import AIOConsumer

        return AIOConsumer(self.config(config))

    # aiokafka (not started: ``await client.start()``) ------------------------------------------
    def aiokafka_producer(self, **kwargs: Any) -> Any:
        from aiokafka import AIOKafkaProducer

        return AIOKafkaProducer(bootstrap_servers=str(self), **kwargs)

    def aiokafka_consumer(self, *topics: str, **kwargs: Any) -> Any:
        from aiokafka import AIOKafkaConsumer

        return AIOKafkaConsumer(*topics, bootstrap_servers=str(self), **kwargs)

    def aiokafka_admin(self, **kwargs: Any) -> Any:
        from aiokafka.admin import AIOKafkaAdminClient

        return AIOKafkaAdminClient(bootstrap_servers=str(self), **kwargs)

    # The broker --------------------------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        return str(self)

    @property
    def address(self) -> tuple[str, int]:
        return self.runner.address

    @property
    def log_dirs(self) -> str:
        return self.runner.config["log.dirs"]

    def stop(self) -> None:
        self.runner.stop()

    def start(self) -> None:
        """Start again after ``stop()``: same address, same log.dirs."""
        self.runner.start()

    def restart(self, **overrides: Any) -> None:
        self.runner.restart(**overrides)

    # Fault injection (see ThreadedBroker.inject) -------------------------------------------------
    def inject(self, api: str | int, error: str | int | None = None, count: int = 1,
               **options: Any) -> dict[str, Any]:
        """Fault the next ``count`` requests of ``api``, e.g.
        ``kafka_broker.inject("OffsetCommit", "REBALANCE_IN_PROGRESS")``; options ``delay_ms``,
        ``drop``, ``throttle_ms``, ``node``."""
        return self.runner.inject(api, error, count, **options)

    def faults(self) -> list[dict[str, Any]]:
        return self.runner.faults()

    def clear_faults(self) -> int:
        return self.runner.clear_faults()


class KafkaCluster:
    """A running test cluster (``Broker(nodes=N)`` in one process): an emulation for testing
    clients — one copy of the data; replicas and ISR as Kafka shows them."""

    def __init__(self, runner: ThreadedBroker) -> None:
        self.runner = runner

    @property
    def bootstrap(self) -> str:
        """Every running node's address, comma-separated (``bootstrap.servers``)."""
        return ",".join(f"{n['host']}:{n['port']}" for n in self.nodes if n["state"] == "running")

    def __str__(self) -> str:
        return self.bootstrap

    @property
    def nodes(self) -> list[dict[str, Any]]:
        """[{"id", "host", "port", "state"}] of every node."""
        return self.runner.cluster()["nodes"]

    @property
    def controller(self) -> int:
        return self.runner.cluster()["controller"]

    def stop_node(self, node_id: int) -> None:
        """Close the node's listener and connections; its leaders and coordinators move."""
        self.runner.stop_node(node_id)

    def start_node(self, node_id: int) -> None:
        """Start it again on the same port; preferred leaders and coordinators move back."""
        self.runner.start_node(node_id)

    def move_coordinator(self, group_id: str, node_id: int) -> None:
        self.runner.move_coordinator(group_id, node_id)

    def move_leader(self, topic: str, partition: int, node_id: int) -> None:
        self.runner.move_leader(topic, partition, node_id)

    def coordinator_of(self, group_id: str) -> int:
        """The node hosting the group's coordinator now."""
        def find() -> int:
            coord = self.runner.broker.coordinator  # type: ignore[union-attr]  # runner.run runs find only while the broker is up
            assert coord is not None, "the broker's group coordinator has not started"
            return coord.owners[coord.partition_for(group_id)]
        return self.runner.run(find)

    def leader_of(self, topic: str, partition: int) -> int:
        return self.runner.run(lambda: self.runner.broker.cluster_nodes.leader(topic, partition))  # type: ignore[union-attr]  # runner.run runs it only while the broker is up; leader_of is for --nodes brokers, which have cluster_nodes

    def inject(self, api: str | int, error: str | int | None = None, count: int = 1,
               **options: Any) -> dict[str, Any]:
        """As ``KafkaBroker.inject``; ``node=`` limits the fault to one node."""
        return self.runner.inject(api, error, count, **options)

    def faults(self) -> list[dict[str, Any]]:
        return self.runner.faults()

    def clear_faults(self) -> int:
        return self.runner.clear_faults()
