"""Shared test setup. The broker fixtures come from the kafkette pytest plugin (broker.testing)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

KAFKA_DEFAULT_PORT = 9092


@pytest.fixture(scope="session", autouse=True)
def kafka_default_port_taken() -> Iterator[None]:
    """Keep 127.0.0.1:9092 busy for the whole run, as a developer's own Kafka or Redpanda does:
    a test that relies on Kafka's default port being free fails here, not on their laptop.
    (When something else holds the port already, it is just as busy.)"""
    holder = socket.socket()
    try:
        holder.bind(("127.0.0.1", KAFKA_DEFAULT_PORT))
        holder.listen()
    except OSError:
        holder.close()
        yield
        return
    try:
        yield
    finally:
        holder.close()
