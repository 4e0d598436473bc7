"""pytest-kafka-broker's fixture names and module, served by kafkette.

Registered by the kafkette plugin only when pytest-kafka-broker itself is not active, so a suite
written for it runs unchanged against kafkette; with both installed, its ``kafka_broker`` wins.
When pytest-kafka-broker is not installed at all, this module also answers its import name
(``from pytest_kafka_broker import KafkaBrokerContext``) for the duration of the pytest run.
"""

from __future__ import annotations

import socket
from collections.abc import Callable

import pytest

from .broker_handle import KafkaBroker

__all__ = ["KafkaBrokerContext", "find_unused_tcp_port", "kafka_broker"]

# What pytest-kafka-broker's ``kafka_broker`` yields; kafkette's handle offers the same API.
KafkaBrokerContext = KafkaBroker


@pytest.fixture
def kafka_broker(kafkette_broker: KafkaBroker) -> KafkaBroker:
    """A fresh in-process kafkette: the bootstrap string, with pytest-kafka-broker's methods."""
    return kafkette_broker


@pytest.fixture
def find_unused_tcp_port() -> Callable[[int], int]:
    """pytest-kafka-broker's port factory: ``default`` when free, else any free port."""
    used: set[int] = set()

    def factory(default: int = 0) -> int:
        while True:
            with socket.socket() as sock:
                try:
                    sock.bind(("127.0.0.1", default))
                except OSError:
                    sock.bind(("127.0.0.1", 0))
                port = sock.getsockname()[1]
            if port not in used:
                used.add(port)
                return port
            default = 0

    return factory
