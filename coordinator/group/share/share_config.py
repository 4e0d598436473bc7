"""Share group coordinator configs (``group.share.*`` and the ``share.version`` feature),
read and validated from any ``name -> str`` getter, raising ValueError naming the config."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..config_reader import GroupConfigReader
from .defaults import DEFAULTS

MAX_SHARE_VERSION = 1
ASSIGNORS = ("simple", "org.apache.kafka.coordinator.group.assignor.SimpleAssignor")


@dataclass(frozen=True, slots=True)
class ShareGroupConfig:
    share_version: int = 1  # finalized level of the share.version feature
    heartbeat_interval_ms: int = 5000
    session_timeout_ms: int = 45000
    max_size: int = 200

    @property
    def enabled(self) -> bool:
        return self.share_version >= 1

    @classmethod
    def from_config(cls, get: Callable[[str], str | None]) -> ShareGroupConfig:
        config = GroupConfigReader(get, DEFAULTS, "share")
        value, integer = config.value, config.integer
        version = integer("share.version", 0)
        if version > MAX_SHARE_VERSION:
            raise ValueError(f"share.version must be between 0 and {MAX_SHARE_VERSION}, "
                             f"got {version}")
        heartbeat_ms, session_ms = config.heartbeat_and_session()
        assignors = [a.strip() for a in value("group.share.assignors").split(",") if a.strip()]
        if len(assignors) != 1 or assignors[0] not in ASSIGNORS:
            raise ValueError("group.share.assignors must name exactly one assignor, simple; "
                             f"got {value('group.share.assignors')!r}")
        return cls(share_version=version, heartbeat_interval_ms=heartbeat_ms,
                   session_timeout_ms=session_ms, max_size=integer("group.share.max.size"))
