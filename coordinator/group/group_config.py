"""The group coordinator's configuration (the broker maps its properties onto this)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from .consumer.consumer_group_config import ConsumerGroupConfig
from .consumer.topic_view import TopicView
from .share.share_config import ShareGroupConfig


def _default_consumer_config() -> ConsumerGroupConfig:
    def missing(name: str) -> str:
        raise KeyError(name)
    return ConsumerGroupConfig.from_config(missing)


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    initial_rebalance_delay_ms: int = 3000
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    max_group_size: int = 2**31 - 1
    offset_metadata_max_bytes: int = 4096
    offsets_retention_ms: int = 604_800_000
    retention_check_interval_ms: int = 600_000
    append_linger_ms: int = 10
    # offsets.commit.timeout.ms: how long any write op waits for its records to be durable
    commit_timeout_ms: int = 5000
    # group.consumer.* and group.coordinator.rebalance.protocols (KIP-848)
    consumer: ConsumerGroupConfig = field(default_factory=_default_consumer_config)
    # the broker's topics (not a setting: a live view the consumer protocol reads)
    topics: TopicView = field(default_factory=TopicView)
    # group id -> (session timeout ms, heartbeat interval ms) of the consumer groups that set
    # their own (GROUP config resources): a live map the broker keeps, read at every heartbeat
    group_overrides: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    # group.share.* and the share.version feature (KIP-932)
    share: ShareGroupConfig = field(default_factory=ShareGroupConfig)
    # group id -> (session timeout ms, heartbeat interval ms) of the share groups that set their
    # own (share.session.timeout.ms / share.heartbeat.interval.ms GROUP configs), live
    share_overrides: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    # called with (group id, member id) once a share member's leave or fencing is durable
    # (GroupCoordinator.add_share_member_listener appends here; every shard reads it)
    share_member_listeners: list[Callable[[str, str], None]] = field(default_factory=list)
