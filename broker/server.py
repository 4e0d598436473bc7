"""The Broker: owns the config, the storage and coordinator components and the TCP server."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kafkette.coordinator.runtime.clock import SystemClock
from kafkette.storage.topics import LogManager

from .admin import admin_address, start_admin, stop_admin
from .boot import EarlyListener, StartupError, bind
from .cluster.faults import FaultRegistry
from .cluster.node_control import NodeControl
from .cluster.nodes import ClusterNodes
from .config import BrokerConfig
from .config_def import Listener
from .connection import KafkaConnection
from .connection_limits import ConnectionLimits
from .security.acl_store import AclStore, authorizer_configured
from .security.config_keys import ADD_SCRAM, parse_add_scram
from .security.listener import ListenerSecurity, SecurityConfigError, listener_securities
from .services import (
    ClusterInfo,
    GroupService,
    RecordService,
    Services,
    ShareService,
    TopicService,
)
from .services.broker_configs import BrokerConfigService
from .services.client_metrics import ClientMetricsConfigs
from .services.client_quota_store import ClientQuotaStore
from .services.client_quotas import ClientQuotas
from .services.client_telemetry import ClientTelemetry
from .services.group_configs import GroupConfigService
from .services.scram_credentials import ScramCredentialService
from .services.share_state import ShareStateService
from .stats import BrokerStats

if TYPE_CHECKING:
    from kafkette.coordinator.group.group_service import GroupCoordinator

log = logging.getLogger("kafkette.broker")


__all__ = ["Broker", "ListenerView", "StartupError"]


class ListenerView:
    """The broker as seen by connections that arrived on one listener: everything is the
    broker's, except the advertised address, which is that listener's (Kafka's listener names)."""

    def __init__(self, broker: Broker, listener: Listener, bound: tuple[str, int],
                 node_id: int | None = None) -> None:
        self._broker = broker
        self.listener = listener
        self.bound = bound
        self.server: asyncio.Server | None = None
        self.node_id = broker.config.node_id if node_id is None else node_id
        # how this listener's connections authenticate (None: PLAINTEXT, nothing to do)
        self.security = broker.listener_security.get(listener.name)
        nodes = broker.cluster_nodes
        # Metadata and FindCoordinator answer with the address of the listener asked; with
        # several nodes, each sees only the partitions it leads.
        self.services = dataclasses.replace(
            broker.services,
            cluster=ClusterInfo(self.node_id, broker.cluster_id, lambda: self.advertised,
                                nodes, listener.name),
            records=(broker.services.records if nodes is None
                     else broker.services.records.for_node(nodes.leads(self.node_id), nodes.isr)))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._broker, name)

    @property
    def advertised(self) -> tuple[str, int]:
        if self.node_id != self._broker.config.node_id:  # advertised.listeners is node 1's
            host = _advertised(self._broker.config, self.listener.name, self.bound)[0]
            return host, self.bound[1]
        return _advertised(self._broker.config, self.listener.name, self.bound)

    @property
    def bootstrap(self) -> str:
        host, port = self.advertised
        return f"{host}:{port}"


def _advertised(config: BrokerConfig, name: str, bound: tuple[str, int]) -> tuple[str, int]:
    adv = config.advertised_for(name)
    host, port = bound
    if adv is not None:
        return adv.host, adv.port or port
    if host in ("0.0.0.0", "::"):
        host = "127.0.0.1"
    return host, port


class Broker:
    """A single-node kafkette broker.

    Usable in-process::

        async with Broker({"listeners": "PLAINTEXT://127.0.0.1:0"}) as broker:
            print(broker.bootstrap)
    """

    def __init__(self, config: BrokerConfig | Mapping[str, Any] | None = None, *,
                 clock: Any | None = None, faults: FaultRegistry | None = None,
                 nodes: int = 1, node_ports: Mapping[tuple[int, str], int] | None = None,
                 early: Mapping[str, EarlyListener] | None = None) -> None:
        """``nodes`` > 1: that many nodes (ids node.id, node.id+1, ...) in this process, each on
        its own listener(s), sharing the logs and the group coordinator (broker/cluster/nodes.py);
        ``node_ports`` ((node id, listener name) -> port) puts them back where they were.
        ``early``: listeners of the first node already bound (broker/boot.py, by listener name),
        which ``start()`` adopts instead of binding them."""
        self.config = config if isinstance(config, BrokerConfig) else BrokerConfig(config)
        # Injected faults (broker/cluster/faults.py); a caller's registry outlives a restart.
        self.faults = faults if faults is not None else FaultRegistry()
        self.clock = clock if clock is not None else SystemClock()
        self.cluster_id = self.config.get_str("cluster.id")
        self.connections: set[KafkaConnection] = set()
        self.connection_limits = ConnectionLimits(self.config, self.connections)
        if nodes < 1:
            raise ValueError(f"nodes must be at least 1, got {nodes}")
        first = self.config.node_id
        self.node_ids = list(range(first, first + nodes))
        self.cluster_nodes = ClusterNodes(self.node_ids) if nodes > 1 else None
        self._node_ports = dict(node_ports or {})
        self._early = dict(early or {})
        self.logs = LogManager(self.config)
        # each listener's authentication, by listener name (built by start())
        self.listener_security: dict[str, ListenerSecurity] = {}
        self._server: asyncio.Server | None = None
        self._servers: list[asyncio.Server] = []
        self.views: list[ListenerView] = []
        self._bound: tuple[str, int] | None = None
        self.stats = BrokerStats(per_request=admin_address(self.config) is not None)
        group_configs = GroupConfigService(self.config)
        topics = TopicService(self.logs, self.config, self.cluster_nodes)
        share_state = ShareStateService(self.logs, self.config, self.clock)
        self.services = Services(
            config=self.config,
            cluster=ClusterInfo(self.config.node_id, self.cluster_id, lambda: self.advertised),
            topics=topics,
            records=RecordService(self.logs, self.stats,
                                  fetch_max_bytes=self.config.get_int("fetch.max.bytes")),
            groups=GroupService(self.logs, self.config, self.clock,
                                group_configs.consumer_overrides,
                                group_configs.share_overrides),
            broker_configs=BrokerConfigService(self.config, self.logs),
            group_configs=group_configs,
            quotas=ClientQuotas(ClientQuotaStore(self.config.log_dirs),
                                self.config.get_int("quota.window.num"),
                                self.config.get_int("quota.window.size.seconds"),
                                self.config.get_int("controller.quota.window.num"),
                                self.config.get_int("controller.quota.window.size.seconds")),
            telemetry=ClientTelemetry(ClientMetricsConfigs(self.config.log_dirs),
                                      self.config.get_int("telemetry.max.bytes")),
            share_state=share_state,
            # Share groups' records, durable through the share-state coordinator (Persister).
            shares=ShareService(self.config, topics, self.clock,
                                lambda group: group_configs.overrides.get(group, {}),
                                persister=share_state),
            acls=AclStore(self.config) if authorizer_configured(self.config) else None,
            scram_credentials=ScramCredentialService(self.config),
        )
        # share members that leave or are fenced: their records held outside a session go
        self.services.groups.add_share_member_listener(self.services.shares.member_left)
        self._coordinator_task: asyncio.Future | None = None
        self.admin: Any = None  # the admin HTTP server (admin.listener), when enabled
        self.control = NodeControl(self)  # node lifecycle (several nodes)

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
        self.config.warn_unknown()  # raises ConfigError on the first invalid value
        self.config.log_values()
        self.listener_security = self._listener_security()
        await self.logs.start()
        try:
            self.services.broker_configs.load()  # dynamic broker configs over the static ones
            self.services.topics.load_replicas()  # several nodes: the topics' replicas
            self.services.group_configs.load()  # groups' own configs, before the coordinator
            if self.services.acls is not None:
                self.services.acls.load()  # the ACLs, before any request is authorized
            self.services.quotas.store.load()  # client quotas
            self.services.telemetry.configs.load()  # client metrics subscriptions
            self._load_scram_credentials()
            for node_id in self.node_ids:
                for listener in self.config.broker_listeners:
                    await self._listen(listener, node_id, announce=False)
            self.admin = await start_admin(self)
        except BaseException:
            await self.stop()
            raise
        for view in self.views:  # only once every listener, the admin's too, is bound
            self._announce(view)
        self._server = self._servers[0]
        self._bound = self.views[0].bound
        self._coordinator_task = asyncio.ensure_future(self._start_groups())

    def _listener_security(self) -> dict[str, ListenerSecurity]:
        """The TLS context and SASL settings of every listener that has any."""
        try:
            credentials = self.services.scram_credentials
            found = listener_securities(self.config, self.config.security_protocols,
                                        [item.name for item in self.config.broker_listeners],
                                        credentials.lookup if credentials else None)
        except SecurityConfigError as exc:
            raise StartupError(str(exc)) from None
        return {name: sec for name, sec in found.items() if sec.protocol != "PLAINTEXT"}

    def _load_scram_credentials(self) -> None:
        """The stored SCRAM users, then those of ``kafkette.scram.users`` (seeded like
        ``kafka-storage.sh format --add-scram``: SCRAM-SHA-256=[name=alice,password=...];...)."""
        credentials = self.services.scram_credentials
        if credentials is None:
            return
        credentials.load()
        for mechanism, user, password, iterations in parse_add_scram(
                self.config.get_str(ADD_SCRAM)):
            credentials.add_password_now(user, mechanism, password, iterations)

    async def _start_groups(self) -> None:
        await self.services.groups.start()
        await self.services.share_state.start_if_exists()  # share-partitions' durable state
        if self.cluster_nodes is not None and self.coordinator is not None:
            # Spread the loaded __consumer_offsets partitions (the group coordinators).
            for p in self.coordinator.owners:
                self.coordinator.owners[p] = self.cluster_nodes.coordinator_node(p)

    def _port_for(self, listener: Listener, node_id: int) -> int:
        """Node 1 listens where configured; node k on port 0 (a free one) or port + k - 1."""
        known = self._node_ports.get((node_id, listener.name))
        if known is not None:
            return known
        offset = node_id - self.node_ids[0]
        return listener.port + offset if listener.port and offset else listener.port

    async def _listen(self, listener: Listener, node_id: int | None = None,
                      port: int | None = None, *, announce: bool = True) -> ListenerView:
        node_id = self.config.node_id if node_id is None else node_id
        port = self._port_for(listener, node_id) if port is None else port
        view = ListenerView(self, listener, (listener.host, port), node_id)
        early = self._early.pop(listener.name, None) if node_id == self.node_ids[0] else None
        if early is not None:  # bound before the broker was ready: hand its connections over
            server = early.open(lambda: KafkaConnection(view))
        else:
            context = view.security.ssl_context if view.security is not None else None
            server = await bind(listener, port, lambda: KafkaConnection(view), context)
        host, port = server.sockets[0].getsockname()[:2]
        view.bound = (host, port)
        view.server = server
        self._servers.append(server)
        self.views.append(view)
        if self.cluster_nodes is not None:
            self.cluster_nodes.nodes[node_id].addresses[listener.name] = lambda: view.advertised
        if announce:
            self._announce(view)
        return view

    @staticmethod
    def _announce(view: ListenerView) -> None:
        host, port = view.bound
        log.info("kafkette listening on %s:%d (listener %s, advertised %s, node.id=%d)", host, port,
                 view.listener.name, view.bootstrap, view.node_id)

    async def wait_ready(self) -> None:
        """Wait until the group coordinator has created and replayed ``__consumer_offsets``."""
        if self._coordinator_task is not None:
            await asyncio.shield(self._coordinator_task)

    async def stop(self) -> None:
        await stop_admin(self.admin)
        self.admin = None
        for early in self._early.values():  # bound early but never adopted (start failed)
            early.close()
        self._early.clear()
        if self._servers:
            for server in self._servers:
                server.close()
            for conn in list(self.connections):
                conn.close(None)
            for server in self._servers:
                await server.wait_closed()
            self._servers, self.views, self._server = [], [], None
        if self._coordinator_task is not None:
            if not self._coordinator_task.done():
                self._coordinator_task.cancel()
            await asyncio.gather(self._coordinator_task, return_exceptions=True)
            self._coordinator_task = None
        await self.services.shares.stop()  # its last state writes, before the persister stops
        await self.services.share_state.stop()
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
        return _advertised(self.config, self.config.listener.name, self.bound)

    @property
    def bootstrap(self) -> str:
        host, port = self.advertised
        return f"{host}:{port}"
