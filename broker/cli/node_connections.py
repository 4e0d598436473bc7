"""The connections of an admin tool to a cluster: the bootstrap broker's, and one to each broker
a call must reach (a coordinator, a partition leader), opened on first use. Each logs in with
the tool's ``--command-config`` settings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Self

from .admin_client import AdminClient, AdminError


class NodeConnections:
    client_class: type[AdminClient] = AdminClient  # a tool's API versions: a subclass's

    def __init__(self, bootstrap: str, timeout: float, client_id: str,
                 security: Mapping[str, str] | None = None) -> None:
        self._timeout = timeout
        self._client_id = client_id
        self._security = security
        self.bootstrap = self.client_class(bootstrap, timeout, client_id, security)
        self._nodes: dict[int, AdminClient] = {}
        self._addresses: dict[int, tuple[str, int]] | None = None

    def close(self) -> None:
        for client in self._nodes.values():
            client.close()
        self.bootstrap.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def addresses(self) -> dict[int, tuple[str, int]]:
        """Every broker's (host, port), by node id, as Metadata lists them."""
        if self._addresses is None:
            self._addresses = self.bootstrap.brokers()
        return self._addresses

    def connect(self, node: int, host: str, port: int) -> AdminClient:
        """The connection to broker ``node`` at ``host:port`` (a coordinator's address)."""
        client = self._nodes.get(node)
        if client is None:
            client = self.client_class(f"{host}:{port}", self._timeout, self._client_id,
                                       self._security)
            self._nodes[node] = client
        return client

    def node(self, node: int) -> AdminClient:
        """The connection to broker ``node``; ``unavailable(node)`` is raised when Metadata
        does not list it."""
        if node not in self._nodes:
            address = self.addresses().get(node)
            if address is None:
                raise self.unavailable(node)
            self.connect(node, *address)
        return self._nodes[node]

    def unavailable(self, node: int) -> Exception:
        return AdminError(f"broker {node} is not available")
