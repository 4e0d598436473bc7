"""The admin calls behind ``kafkette configs`` for topics, brokers, broker loggers, groups and
client metrics (broker/cli/entity_configs.py), each sent where Kafka's Admin client sends it: a
broker's (or its loggers') configs to that broker, everything else to the first bootstrap server
that answers. ``--command-config`` properties give TLS and SASL (broker/cli/client_security.py).

On the project's wire client rather than confluent-kafka: librdkafka refuses the cluster-wide
default broker resource (the empty name) and the BROKER_LOGGER and CLIENT_METRICS types, and its
Python binding keys a config's synonyms by name, so a broker config's levels (its dynamic value,
the cluster default, the static value, Kafka's default: one name each time) collapse into one,
while kafka-configs.sh prints every level.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import request_type

from .admin_client import AdminError, parse_bootstrap
from .client_security import AuthError
from .wire_client import WireClient, WireError

METADATA, LIST_GROUPS, API_VERSIONS = 3, 16, 18
DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS, LIST_CONFIG_RESOURCES = 32, 44, 74
# Version ranges this client knows the shape of; the highest one the broker also accepts is used.
OURS: dict[int, tuple[int, int]] = {
    METADATA: (4, 12), LIST_GROUPS: (0, 5), DESCRIBE_CONFIGS: (1, 4),
    INCREMENTAL_ALTER_CONFIGS: (0, 1), LIST_CONFIG_RESOURCES: (1, 1)}
SET, DELETE = 0, 1  # IncrementalAlterConfigs operations
# Config resource types (DescribeConfigs / IncrementalAlterConfigs codes).
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32


class ConfigAdminError(Exception):
    """The connection or an exchange failed (not a broker's error code: see BrokerRefusal)."""


class BrokerRefusal(Exception):
    """A resource's error code and the broker's message (None: it sent none)."""

    def __init__(self, code: int, message: str | None) -> None:
        super().__init__(message or ErrorCode(code).name)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Synonym:
    name: str
    value: str | None
    source: int


@dataclass(frozen=True)
class Entry:
    name: str
    value: str | None
    source: int
    sensitive: bool
    synonyms: tuple[Synonym, ...]


class _Node:
    """One connection and the API versions agreed with that broker."""

    def __init__(self, address: str, security: Mapping[str, str] | None, timeout: float) -> None:
        self.client = WireClient(address, "kafkette-configs", timeout, security)
        answer = self.client.request(API_VERSIONS, 0)
        if answer.error_code != ErrorCode.none:
            self.client.close()
            raise ConfigAdminError(f"ApiVersions failed: {ErrorCode(answer.error_code).name}")
        theirs = {int(k.api_key): (int(k.min_version), int(k.max_version))
                  for k in answer.api_keys}
        self.versions: dict[int, int] = {}
        for key, (low, high) in OURS.items():
            if key in theirs and min(high, theirs[key][1]) >= max(low, theirs[key][0]):
                self.versions[key] = min(high, theirs[key][1])

    def call(self, api_key: int, **fields: Any) -> tuple[int, Any]:
        version = self.versions.get(api_key)
        if version is None:
            raise BrokerRefusal(int(ErrorCode.unsupported_version),
                                f"The broker does not support API key {api_key}")
        try:
            return version, self.client.request(api_key, version, **fields)
        except (ConnectionError, WireError, OSError) as exc:
            raise ConfigAdminError(str(exc)) from exc


class ConfigAdmin:
    def __init__(self, bootstrap: str, security: Mapping[str, str] | None = None,
                 timeout: float = 30) -> None:
        self._security = security
        self._timeout = timeout
        self._nodes: dict[int, _Node] = {}
        errors = []
        try:
            servers = parse_bootstrap(bootstrap)
        except AdminError as exc:
            raise ConfigAdminError(str(exc)) from None
        for server in servers:  # the first that answers, as Kafka's clients
            try:
                self._bootstrap = _Node(server, security, timeout)
                break
            except (OSError, AuthError) as exc:
                errors.append(f"{server}: {getattr(exc, 'strerror', None) or exc}")
        else:
            raise ConfigAdminError(f"cannot connect to {bootstrap} ({'; '.join(errors)})")
        self._metadata: Any = None

    def close(self) -> None:
        for node in self._nodes.values():
            node.client.close()
        self._bootstrap.client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Cluster ------------------------------------------------------------------------------
    def _cluster(self) -> Any:
        if self._metadata is None:
            _, self._metadata = self._bootstrap.call(
                METADATA, topics=None, allow_auto_topic_creation=False,
                include_cluster_authorized_operations=False,
                include_topic_authorized_operations=False)
        return self._metadata

    def node_ids(self) -> list[int]:
        """The live brokers' ids, as Metadata lists them."""
        return [int(b.node_id) for b in self._cluster().brokers]

    def topics(self) -> list[str]:
        """Every topic, internal ones too, sorted."""
        return sorted(t.name for t in self._cluster().topics if t.error_code == ErrorCode.none)

    def _node(self, node_id: int) -> _Node:
        if node_id not in self._nodes:
            brokers = {int(b.node_id): (b.host, int(b.port)) for b in self._cluster().brokers}
            if node_id not in brokers:
                raise BrokerRefusal(int(ErrorCode.request_timed_out),  # as Kafka's Admin
                                    "Timed out waiting for a node assignment.")
            host, port = brokers[node_id]
            try:
                self._nodes[node_id] = _Node(f"{host}:{port}", self._security, self._timeout)
            except (OSError, AuthError) as exc:
                raise ConfigAdminError(f"{host}:{port}: {exc}") from exc
        return self._nodes[node_id]

    def _route(self, resource_type: int, name: str) -> _Node:
        """A named broker's (and its loggers') resource goes to that broker, as in Kafka."""
        if resource_type in (BROKER, BROKER_LOGGER) and name.isdigit():
            return self._node(int(name))
        return self._bootstrap

    def groups(self) -> list[str]:
        """Every group's id (ListGroups to every broker), sorted."""
        out: set[str] = set()
        for node_id in self.node_ids():
            _, answer = self._node(node_id).call(LIST_GROUPS, states_filter=(), types_filter=())
            if answer.error_code != ErrorCode.none:
                raise BrokerRefusal(int(answer.error_code), None)
            out.update(g.group_id for g in answer.groups)
        return sorted(out)

    def config_resources(self, resource_type: int) -> list[str] | None:
        """The names of the resources of a type that have configs (ListConfigResources); None
        when the broker does not serve that API or refuses it (as Kafka's tool falls back)."""
        try:
            _, answer = self._bootstrap.call(LIST_CONFIG_RESOURCES,
                                             resource_types=(resource_type,))
        except BrokerRefusal:
            return None
        if answer.error_code in (ErrorCode.unsupported_version,
                                 ErrorCode.cluster_authorization_failed):
            return None
        if answer.error_code != ErrorCode.none:
            raise BrokerRefusal(int(answer.error_code), answer.error_message)
        return sorted(r.resource_name for r in answer.config_resources)

    # Configs ------------------------------------------------------------------------------
    def describe(self, resource_type: int, name: str, synonyms: bool) -> list[Entry]:
        """The resource's config entries, sorted by name (Kafka's getResourceConfig)."""
        node = self._route(resource_type, name)
        version = node.versions.get(DESCRIBE_CONFIGS, OURS[DESCRIBE_CONFIGS][1])
        cls = request_type(DESCRIBE_CONFIGS, version)
        resource = make(item_type(cls, "resources"), resource_type=resource_type,
                        resource_name=name, configuration_keys=None)
        _, answer = node.call(DESCRIBE_CONFIGS, resources=(resource,), include_synonyms=synonyms,
                              include_documentation=False)
        (result,) = answer.results
        if result.error_code != ErrorCode.none:
            raise BrokerRefusal(int(result.error_code), result.error_message)
        return sorted((Entry(c.name, c.value, int(c.config_source), bool(c.is_sensitive),
                             tuple(Synonym(s.name, s.value, int(s.source))
                                   for s in c.synonyms or ()))
                       for c in result.configs), key=lambda e: e.name)

    def alter(self, resource_type: int, name: str,
              operations: Sequence[tuple[str, int, str | None]]) -> None:
        """IncrementalAlterConfigs of one resource: (config name, SET or DELETE, value)."""
        node = self._route(resource_type, name)
        version = node.versions.get(INCREMENTAL_ALTER_CONFIGS,
                                    OURS[INCREMENTAL_ALTER_CONFIGS][1])
        resource_cls = item_type(request_type(INCREMENTAL_ALTER_CONFIGS, version), "resources")
        config_cls = item_type(resource_cls, "configs")
        resource = make(resource_cls, resource_type=resource_type, resource_name=name,
                        configs=tuple(make(config_cls, name=key, config_operation=op, value=value)
                                      for key, op, value in operations))
        _, answer = node.call(INCREMENTAL_ALTER_CONFIGS, resources=(resource,),
                              validate_only=False)
        (result,) = answer.responses
        if result.error_code != ErrorCode.none:
            raise BrokerRefusal(int(result.error_code), result.error_message)

