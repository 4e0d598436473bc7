"""Consumer group protocol configs, Kafka 4.0 names and defaults (KIP-848 §8).

``DEFAULTS`` is meant to be merged into ``broker.config_def.DEFAULTS``; ``ConsumerGroupConfig.
from_config(get)`` reads and validates them from any ``name -> str`` getter (BrokerConfig's
``__getitem__``), raising ValueError with a message naming the config.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

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

        def value(name: str) -> str:
            try:
                return get(name)
            except KeyError:
                return DEFAULTS[name]

        def integer(name: str, minimum: int = 1) -> int:
            try:
                number = int(value(name))
            except ValueError:
                raise ValueError(f"{name} must be an integer, got {value(name)!r}") from None
            if number < minimum:
                raise ValueError(f"{name} must be at least {minimum}, got {number}")
            return number

        def bounded(prefix: str) -> int:
            low = integer(f"group.consumer.min.{prefix}")
            high = integer(f"group.consumer.max.{prefix}")
            default = integer(f"group.consumer.{prefix}")
            if not low <= default <= high:
                raise ValueError(f"group.consumer.{prefix} ({default}) must lie between "
                                 f"group.consumer.min.{prefix} ({low}) and "
                                 f"group.consumer.max.{prefix} ({high})")
            return default

        protocols = frozenset(p.strip().lower()
                              for p in value("group.coordinator.rebalance.protocols").split(",")
                              if p.strip())
        unknown = sorted(protocols - set(PROTOCOLS))
        if unknown or "classic" not in protocols:
            raise ValueError("group.coordinator.rebalance.protocols must contain classic and only "
                             f"{', '.join(PROTOCOLS)}; got {sorted(protocols)}")
        heartbeat_ms = bounded("heartbeat.interval.ms")
        session_ms = bounded("session.timeout.ms")
        if heartbeat_ms >= session_ms:
            raise ValueError(f"group.consumer.heartbeat.interval.ms ({heartbeat_ms}) must be "
                             f"lower than group.consumer.session.timeout.ms ({session_ms})")
        policy = value("group.consumer.migration.policy").strip().lower()
        if policy not in MIGRATION_POLICIES:
            raise ValueError(f"group.consumer.migration.policy must be one of "
                             f"{', '.join(MIGRATION_POLICIES)}, got {policy!r}")
        return cls(
            rebalance_protocols=protocols, heartbeat_interval_ms=heartbeat_ms,
            session_timeout_ms=session_ms, max_size=integer("group.consumer.max.size"),
            assignors=tuple(assignors_from_config(value("group.consumer.assignors"))),
            migration_policy=policy)
