"""The Broker: owns the config, the storage and coordinator components and the TCP server."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kafkette.coordinator.clock import SystemClock
from kafkette.storage.topics import LogManager

from . import handlers  # noqa: F401  (registers every API route)
from .admin import admin_address, start_admin, stop_admin
from .stats import BrokerStats
from .config import BrokerConfig
from .connection import KafkaConnection
from .services import ClusterInfo, GroupService, RecordService, Services, TopicService

if TYPE_CHECKING:
    from kafkette.coordinator.service import GroupCoordinator

log = logging.getLogger("kafkette.broker")


class Broker:
    """A single-node kafkette broker.

    Usable in-process::

        async with Broker({"listeners": "PLAINTEXT://127.0.0.1:0"}) as broker:
            print(broker.bootstrap)
    """

    def __init__(self, config: BrokerConfig | Mapping[str, Any] | None = None, *,
                 clock: Any | None = None) -> None:
        self.config = config if isinstance(config, BrokerConfig) else BrokerConfig(config)
        self.clock = clock if clock is not None else SystemClock()
        self.cluster_id = self.config.get_str("cluster.id")
        self.connections: set[KafkaConnection] = set()
        self.logs = LogManager(self.config)
        self._server: asyncio.Server | None = None
        self._bound: tuple[str, int] | None = None
        self.stats = BrokerStats(per_request=admin_address(self.config) is not None)
        self.services = Services(
            config=self.config,
            cluster=ClusterInfo(self.config.node_id, self.cluster_id, lambda: self.advertised),
            topics=TopicService(self.logs, self.config),
            records=RecordService(self.logs, self.stats),
            groups=GroupService(self.logs, self.config, self.clock, lambda: self.advertised),
        )
        self._coordinator_task: asyncio.Future | None = None
        self.admin: Any = None  # the admin HTTP server (admin.listener), when enabled

    @property
    def coordinator(self) -> GroupCoordinator | None:
        """The group coordinator, None until it has loaded ``__consumer_offsets``."""
        return self.services.groups.coordinator

    # Lifecycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        """Listen as soon as the logs are open; the group coordinator loads in the background.

        Until it has loaded, group requests are answered COORDINATOR_NOT_AVAILABLE or
        COORDINATOR_LOAD_IN_PROGRESS, which clients retry (Kafka behaves the same while it
        creates and loads ``__consumer_offsets``). ``wait_ready()`` waits for the load.
        """
        await self.logs.start()
        listener = self.config.listener
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: KafkaConnection(self), listener.host, listener.port,
            reuse_address=True, backlog=1024,
        )
        sock = self._server.sockets[0]
        host, port = sock.getsockname()[:2]
        self._bound = (host, port)
        log.info("kafkette listening on %s:%d (node.id=%d)", host, port, self.config.node_id)
        self._coordinator_task = asyncio.ensure_future(self.services.groups.start())
        self.admin = await start_admin(self)

    async def wait_ready(self) -> None:
        """Wait until the group coordinator has created and replayed ``__consumer_offsets``."""
        if self._coordinator_task is not None:
            await asyncio.shield(self._coordinator_task)

    async def stop(self) -> None:
        self.admin = await stop_admin(self.admin)
        if self._server is not None:
            self._server.close()
            for conn in list(self.connections):
                conn.close(None)
            await self._server.wait_closed()
            self._server = None
        if self._coordinator_task is not None:
            if not self._coordinator_task.done():
                self._coordinator_task.cancel()
            await asyncio.gather(self._coordinator_task, return_exceptions=True)
            self._coordinator_task = None
        await self.services.groups.stop()
        await self.logs.stop()

    async def __aenter__(self) -> Broker:
        await self.start()
        await self.wait_ready()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def serve_forever(self) -> None:
        assert self._server is not None
        await self._server.serve_forever()

    # Addresses ---------------------------------------------------------------------------
    @property
    def bound(self) -> tuple[str, int]:
        if self._bound is None:
            raise RuntimeError("broker not started")
        return self._bound

    @property
    def advertised(self) -> tuple[str, int]:
        """The address clients are told to use (advertised.listeners, else the bound one)."""
        adv = self.config.advertised_listener
        host, port = self.bound
        if adv is not None:
            return adv.host, adv.port or port
        if host in ("0.0.0.0", "::"):
            host = "127.0.0.1"
        return host, port

    @property
    def bootstrap(self) -> str:
        host, port = self.advertised
        return f"{host}:{port}"
