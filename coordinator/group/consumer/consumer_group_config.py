"""Consumer group protocol configs, Kafka 4.0 names and defaults (KIP-848 §8).

``DEFAULTS`` is meant to be merged into ``broker.config_def.DEFAULTS``; ``ConsumerGroupConfig.
from_config(get)`` reads and validates them from any ``name -> str`` getter (BrokerConfig's
``__getitem__``), raising ValueError with a message naming the config.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..config_reader import GroupConfigReader
from .defaults import DEFAULTS  # noqa: F401  (re-exported)

if TYPE_CHECKING:  # imported where used
    from kafkette.coordinator.group.assignor import PartitionAssignor

    from .heartbeat import HeartbeatSettings

PROTOCOLS = ("classic", "consumer", "share", "streams")
MIGRATION_POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")


@dataclass(frozen=True, slots=True)
class ConsumerGroupConfig:
    rebalance_protocols: frozenset[str]
    heartbeat_interval_ms: int
    session_timeout_ms: int
    max_size: int
    assignors: tuple[PartitionAssignor, ...]
    migration_policy: str
    # ConsumerGroupHeartbeat/Describe answer UNSUPPORTED_VERSION when False (a field, not a
    # property: every heartbeat reads it twice)
    enabled: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "enabled", "consumer" in self.rebalance_protocols)

    @property
    def upgrade_enabled(self) -> bool:
        return self.migration_policy in ("bidirectional", "upgrade")

    @property
    def downgrade_enabled(self) -> bool:
        return self.migration_policy in ("bidirectional", "downgrade")

    def heartbeat_settings(self) -> HeartbeatSettings:
        from .heartbeat import HeartbeatSettings

        return HeartbeatSettings(self.assignors, self.heartbeat_interval_ms, self.max_size)

    @classmethod
    def from_config(cls, get: Callable[[str], str]) -> ConsumerGroupConfig:
        from kafkette.coordinator.group.assignor import assignors_from_config

        config = GroupConfigReader(get, DEFAULTS, "consumer")
        value, integer = config.value, config.integer

        protocols = frozenset(p.strip().lower()
                              for p in value("group.coordinator.rebalance.protocols").split(",")
                              if p.strip())
        unknown = sorted(protocols - set(PROTOCOLS))
        if unknown or "classic" not in protocols:
            raise ValueError("group.coordinator.rebalance.protocols must contain classic and only "
                             f"{', '.join(PROTOCOLS)}; got {sorted(protocols)}")
        heartbeat_ms, session_ms = config.heartbeat_and_session()
        policy = value("group.consumer.migration.policy").strip().lower()
        if policy not in MIGRATION_POLICIES:
            raise ValueError(f"group.consumer.migration.policy must be one of "
                             f"{', '.join(MIGRATION_POLICIES)}, got {policy!r}")
        return cls(
            rebalance_protocols=protocols, heartbeat_interval_ms=heartbeat_ms,
            session_timeout_ms=session_ms, max_size=integer("group.consumer.max.size"),
            assignors=tuple(assignors_from_config(value("group.consumer.assignors"))),
            migration_policy=policy)
