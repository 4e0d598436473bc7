"""Consumer groups (KIP-848) of one shard: the consumer half of Kafka's GroupMetadataManager.

Wires the pure operations of ``coordinator.consumer`` into the runtime: ConsumerGroupHeartbeat
as a write op whose records are replayed like any loaded record, the member timers (session,
rebalance) and the throttled regex refresh as timer write ops, ConsumerGroupDescribe and the
consumer rows of ListGroups/DescribeGroups as reads, DeleteGroups/OffsetCommit validation.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kafkette.protocol import consumer_group_records as cgr

from . import errors as E
from . import records as R
from .config import CoordinatorConfig
from .consumer import describe
from .consumer.group import ConsumerGroup, replay_record
from .consumer.heartbeat import (
    HeartbeatRequest,
    HeartbeatResult,
    heartbeat,
    rebalance_timeout_expired,
    refresh_regexes,
    session_timeout_expired,
)
from .consumer.member import MemberState
from .consumer.records import Record, encode_records
from .errors import CoordinatorError
from .group import GroupState
from .group_manager import GroupMetadataManager
from .log import RawRecord
from .result import Result
from .runtime import ShardContext

log = logging.getLogger("kafkette.coordinator")

# Kafka resolves a group's regexes at most once per this interval (and one run at a time).
REGEX_REFRESH_INTERVAL_MS = 10_000


def _session_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("consumer-session-timeout", group_id, member_id)


def _rebalance_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("consumer-rebalance-timeout", group_id, member_id)


def _regex_key(group_id: str) -> tuple[str, str]:
    return ("consumer-regex-refresh", group_id)


class CommitTarget:
    """A consumer group as OffsetMetadataManager.commit validates a group (duck-typed like
    ClassicGroup.validate_offset_commit): member epoch instead of generation."""

    def __init__(self, group: ConsumerGroup, api_version: int) -> None:
        self.group = group
        self.api_version = api_version

    def validate_offset_commit(self, member_id: str, _instance_id: str | None,
                               member_epoch: int) -> None:
        self.group.validate_offset_commit(member_id, member_epoch, api_version=self.api_version)


class ConsumerGroupManager:
    def __init__(self, context: ShardContext, config: CoordinatorConfig,
                 classic: GroupMetadataManager) -> None:
        self.context = context
        self.config = config.consumer
        self.topics = config.topics
        self.classic = classic
        self.groups: dict[str, ConsumerGroup] = {}
        self.settings = self.config.heartbeat_settings()
        self._regex_refreshed_at: dict[str, int] = {}

    @property
    def default_assignor(self) -> str:
        return self.settings.assignors[0].name

    # Replay / lifecycle ----------------------------------------------------------------------
    def replay(self, key: cgr.ConsumerGroupKey, value: cgr.ConsumerGroupValue | None) -> None:
        if value is not None and isinstance(key, cgr.ConsumerGroupMetadataKey) \
                and key.group not in self.groups:
            classic = self.classic.groups.get(key.group)
            if classic is not None and classic.is_in(GroupState.EMPTY):
                # a simple group (offsets only) with the same id becomes this consumer group
                del self.classic.groups[key.group]
        replay_record(self.groups, key, value)
        if value is None and key.group not in self.groups:
            self._regex_refreshed_at.pop(key.group, None)

    def on_loaded(self) -> None:
        for group in self.groups.values():
            for member in group.members.values():
                self._arm_session(group.group_id, member.member_id)
                if member.state == MemberState.UNREVOKED_PARTITIONS:
                    self._arm_rebalance(group.group_id, member.member_id, member.member_epoch,
                                        member.rebalance_timeout_ms)

    # Timers ----------------------------------------------------------------------------------
    def _arm_session(self, group_id: str, member_id: str) -> None:
        self.context.schedule(
            _session_key(group_id, member_id), self.config.session_timeout_ms,
            lambda shard: shard.consumer.session_timeout_expired(group_id, member_id))

    def _arm_rebalance(self, group_id: str, member_id: str, member_epoch: int,
                       timeout_ms: int) -> None:
        self.context.schedule(
            _rebalance_key(group_id, member_id), max(timeout_ms, 0),
            lambda shard: shard.consumer.rebalance_timeout_expired(group_id, member_id,
                                                                   member_epoch))

    def _cancel_timers(self, group_id: str, member_id: str) -> None:
        self.context.cancel(_session_key(group_id, member_id))
        self.context.cancel(_rebalance_key(group_id, member_id))

    def _fenced(self, group_id: str, member_id: str, records: list[Record],
                why: str) -> Result:
        if records:
            log.info("consumer group %s: member %s fenced (%s)", group_id, member_id, why)
            self._cancel_timers(group_id, member_id)
        return Result(encode_records(records), None)

    def session_timeout_expired(self, group_id: str, member_id: str) -> Result:
        records = session_timeout_expired(self.groups.get(group_id), member_id,
                                          self.topics.lookup)
        return self._fenced(group_id, member_id, records, "session timeout expired")

    def rebalance_timeout_expired(self, group_id: str, member_id: str,
                                  member_epoch: int) -> Result:
        records = rebalance_timeout_expired(self.groups.get(group_id), member_id, member_epoch,
                                            self.topics.lookup)
        return self._fenced(group_id, member_id, records,
                            "partitions not revoked within the rebalance timeout")

    def _schedule_regex_refresh(self, group_id: str) -> None:
        last = self._regex_refreshed_at.get(group_id)
        now = self.context.now_ms()
        delay = 0 if last is None else max(0, last + REGEX_REFRESH_INTERVAL_MS - now)
        self.context.schedule(_regex_key(group_id), delay,
                              lambda shard: shard.consumer.refresh_regexes(group_id))

    def refresh_regexes(self, group_id: str) -> Result:
        group = self.groups.get(group_id)
        if group is None:
            return Result((), None)
        now = self.context.now_ms()
        self._regex_refreshed_at[group_id] = now
        records = refresh_regexes(group, self.topics.lookup, self.topics.names(),
                                  self.topics.metadata_version, now)
        return Result(encode_records(records), None)

    # ConsumerGroupHeartbeat (write) ----------------------------------------------------------
    def heartbeat(self, request: HeartbeatRequest) -> Result:
        """Response: the HeartbeatResult (CoordinatorError before anything is written)."""
        if not self.config.enabled:
            raise CoordinatorError(E.UNSUPPORTED_VERSION,
                                   "The consumer group protocol is not enabled.")
        group_id = request.group_id
        group = self.groups.get(group_id)
        prefix: list[RawRecord] = []
        if group is None:
            classic = self.classic.groups.get(group_id)
            if classic is not None and request.member_epoch == 0:
                if not classic.is_in(GroupState.EMPTY):
                    raise CoordinatorError(E.GROUP_ID_NOT_FOUND, (
                        f"Cannot upgrade classic group {group_id} to consumer group: online "
                        "upgrade of a non-empty classic group is not supported by kafkette."))
                prefix.append(R.group_tombstone(group_id))  # replayed: the classic group goes
        result = heartbeat(group, request, self.settings, self.topics.lookup,
                           metadata_version=self.topics.metadata_version)
        self._apply_timers(group_id, result)
        on_durable: Callable[[], None] | None = None
        if result.regex_refresh_needed:
            def on_durable() -> None:
                self._schedule_regex_refresh(group_id)
        return Result(prefix + encode_records(result.records), result, on_durable=on_durable)

    def _apply_timers(self, group_id: str, result: HeartbeatResult) -> None:
        member_id = result.member_id
        if result.replaced_member_id is not None:
            self._cancel_timers(group_id, result.replaced_member_id)
        if result.cancel_timers:
            self._cancel_timers(group_id, member_id)
        if result.arm_session_timeout:
            self._arm_session(group_id, member_id)
        elif not result.cancel_timers:
            # static member away (-2): its session timer keeps running
            pass
        if result.arm_rebalance_timeout_ms is not None:
            self._arm_rebalance(group_id, member_id, result.member_epoch,
                                result.arm_rebalance_timeout_ms)
        elif result.cancel_rebalance_timeout:
            self.context.cancel(_rebalance_key(group_id, member_id))

    # Other group APIs ------------------------------------------------------------------------
    def describe(self, group_id: str) -> tuple[int, str | None, describe.DescribedGroup | None]:
        """ConsumerGroupDescribe of one group: (error, message, group)."""
        if not group_id:
            return E.INVALID_GROUP_ID, "Group id can't be empty.", None
        group = self.groups.get(group_id)
        if group is None:
            if group_id in self.classic.groups:
                return E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.", None
            return E.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.", None
        return E.NONE, None, describe.describe_group(group, self.default_assignor,
                                                     self.topics.name_of)

    def list_groups(self, states: set[str], types: set[str]) -> list[tuple[str, str, str, str]]:
        if types and "consumer" not in types:
            return []
        return [(g.group_id, "consumer", g.state.value, "consumer")
                for g in self.groups.values()
                if not states or g.state.value.lower() in states]

    def delete(self, group: ConsumerGroup, records: list[RawRecord]) -> int:
        """DeleteGroups of one consumer group: its tombstones (offsets are the caller's)."""
        try:
            group.validate_delete()
        except CoordinatorError as exc:
            return exc.code
        records.extend(encode_records(group.tombstones()))
        return E.NONE

    def downgrade_empty(self, group_id: str) -> list[RawRecord]:
        """A classic JoinGroup reaches an empty consumer group: the consumer group is deleted
        (in memory now, its tombstones go first in the join's batch, not replayed)."""
        group = self.groups.pop(group_id)
        self._regex_refreshed_at.pop(group_id, None)
        self.context.cancel(_regex_key(group_id))
        return encode_records(group.tombstones())


def commit_target(group: ConsumerGroup, api_version: int) -> Any:
    return CommitTarget(group, api_version)
