"""Dynamic broker configs (Kafka's KIP-226): AlterConfigs / IncrementalAlterConfigs on a BROKER
resource named by a node id (that broker's own) or "" (the cluster-wide default).

Only the configs Kafka reconfigures at run time (``DynamicBrokerConfig.AllDynamicConfigs``) that
kafkette knows may change; the others are refused with Kafka's INVALID_REQUEST "Cannot update
these configs dynamically". A name Kafka does not know at all is accepted and kept, as Kafka
keeps it. Values are checked against the config's type and bounds (``broker/config.py``).

The layers are stored durably in ``log.dirs`` beside the topic catalog and put back over the
static config at start. What they change takes effect at once where kafkette reads the config on
use, and on every partition log (the topic configs' broker-level synonyms).

Several nodes in one process (``--nodes N``) share one config and one set of logs: each node
keeps and describes its own per-broker layer, and the shared behaviour follows the first node's
(``node.id``) effective config.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path

from kio.schema.errors import ErrorCode

from kafkette.storage.topic_config import TOPIC_CONFIGS
from kafkette.storage.topics import LogManager

from ..config import BrokerConfig
from ..config_def import DEFAULTS, NO_EFFECT_KEYS, ConfigError, config_key, parse_value
from .config_file import read_config_file, write_config_file
from .errors import ServiceError

log = logging.getLogger("kafkette.config")

DYNAMIC_CONFIG_FILE = "kafkette-broker-configs.json"

# Kafka's reconfigurable broker configs that kafkette knows: every broker-level synonym of a
# topic config (DynamicLogConfig), the log cleaner's (LogCleaner.ReconfigurableConfigs), the
# thread pools' (DynamicThreadPool) and the producer-state ones. Listener and SSL/SASL configs,
# dynamic in Kafka, cannot change here (kafkette does not re-bind or serve TLS).
_THREAD_POOLS = ("num.io.threads", "num.network.threads", "num.replica.fetchers",
                 "num.recovery.threads.per.data.dir", "background.threads")
_LOG_CLEANER = ("log.cleaner.threads", "log.cleaner.dedupe.buffer.size",
                "log.cleaner.io.buffer.size", "log.cleaner.io.buffer.load.factor",
                "log.cleaner.io.max.bytes.per.second", "log.cleaner.backoff.ms",
                "message.max.bytes")
_PRODUCER_STATE = ("producer.id.expiration.ms", "transaction.partition.verification.enable")
DYNAMIC_BROKER_CONFIGS = frozenset(
    {d.synonym for d in TOPIC_CONFIGS.values() if d.synonym}
    | {"log.retention.minutes", "log.retention.hours", "log.roll.hours", "log.roll.jitter.hours"}
    | set(_THREAD_POOLS) | set(_LOG_CLEANER) | set(_PRODUCER_STATE))


def is_dynamic(name: str) -> bool:
    return name in DYNAMIC_BROKER_CONFIGS


def _known(name: str) -> bool:
    return name in DEFAULTS or name in NO_EFFECT_KEYS or config_key(name) is not None


class BrokerConfigService:
    """The cluster-default and per-broker dynamic layers, durable in ``log.dirs``."""

    def __init__(self, config: BrokerConfig, logs: LogManager) -> None:
        self._config = config
        self._logs = logs
        self._applied_node = config.node_id  # whose per-broker layer the shared config takes
        self._path = Path(config.log_dirs) / DYNAMIC_CONFIG_FILE
        self.cluster_default: dict[str, str] = {}
        self.per_broker: dict[int, dict[str, str]] = {}

    # Start ---------------------------------------------------------------------------------------
    def load(self) -> None:
        """Put the stored layers over the static config and the open logs."""
        data = read_config_file(self._path)
        if data is None:
            return
        self.cluster_default = {str(k): str(v) for k, v in data.get("default", {}).items()}
        self.per_broker = {int(node): {str(k): str(v) for k, v in values.items()}
                           for node, values in data.get("brokers", {}).items()}
        self._apply()
        self._logs.reapply_broker_config()

    def _apply(self) -> None:
        self._config.apply_dynamic(self.cluster_default,
                                   self.per_broker.get(self._applied_node, {}))

    # Describe ------------------------------------------------------------------------------------
    def layer(self, resource_name: str, node_id: int) -> dict[str, str] | None:
        """The per-broker layer of ``resource_name`` (None for the cluster default, "")."""
        if resource_name == "":
            return None
        return self.per_broker.get(node_id, {})

    def check_resource(self, resource_name: str, node_id: int) -> None:
        """Kafka's ConfigAdminManager.validateResourceNameIsCurrentNodeId."""
        if resource_name == "":
            return
        try:
            asked = int(resource_name)
        except ValueError:
            raise ServiceError(ErrorCode.invalid_request,
                               f"Node id must be an integer, but it is: {resource_name}") from None
        if asked != node_id:
            raise ServiceError(ErrorCode.invalid_request,
                               f"Unexpected broker id, expected {node_id}, but received "
                               f"{resource_name}")

    # Alter ---------------------------------------------------------------------------------------
    async def alter(self, resource_name: str, node_id: int,
                    change: Callable[[dict[str, str]], Mapping[str, str | None]],
                    *, validate_only: bool) -> None:
        """Replace the layer of ``resource_name`` with ``change(current layer)``, validated."""
        self.check_resource(resource_name, node_id)
        current = dict(self.cluster_default if resource_name == "" else
                       self.per_broker.get(node_id, {}))
        proposed = dict(change(current))
        _validate(proposed)
        if validate_only:
            return
        values = {k: v.strip() for k, v in proposed.items() if v is not None}
        if resource_name == "":
            self.cluster_default = values
        elif values:
            self.per_broker[node_id] = values
        else:
            self.per_broker.pop(node_id, None)
        await self._save()
        if resource_name == "" or node_id == self._applied_node:
            self._apply()
            self._logs.reapply_broker_config()
        log.info("dynamic broker config %s: %s", resource_name or "<default>", values)

    async def _save(self) -> None:
        data = {"version": 1, "default": self.cluster_default,
                "brokers": {str(n): v for n, v in sorted(self.per_broker.items())}}
        await write_config_file(self._path, data)


def _validate(proposed: Mapping[str, str | None]) -> None:
    """Kafka's DynamicBrokerConfig.validate, answered INVALID_REQUEST (ConfigAdminManager)."""
    fixed = sorted(name for name in proposed if _known(name) and not is_dynamic(name))
    if fixed:
        raise ServiceError(ErrorCode.invalid_request,
                           f"Cannot update these configs dynamically: Set({', '.join(fixed)})")
    for name, value in proposed.items():
        if value is None:
            raise ServiceError(ErrorCode.invalid_request, f"Null value not supported for : {name}")
        try:
            parse_value(name, value)
        except ConfigError as exc:
            raise ServiceError(ErrorCode.invalid_request, str(exc)) from None

