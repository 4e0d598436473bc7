"""Consumer groups (KIP-848) of one shard: the consumer half of Kafka's GroupMetadataManager.

Wires the pure operations of ``coordinator.group.consumer`` into the runtime: ConsumerGroupHeartbeat
as a write op whose records are replayed like any loaded record, the member timers (session,
rebalance) and the throttled regex refresh as timer write ops, ConsumerGroupDescribe and the
consumer rows of ListGroups/DescribeGroups as reads, DeleteGroups/OffsetCommit validation.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from kafkette.protocol import consumer_group_records as cgr

from ...runtime.coordinator_log import RawRecord
from ...runtime.coordinator_runtime import ShardContext
from ...runtime.error_codes import (
    GROUP_ID_NOT_FOUND,
    INVALID_GROUP_ID,
    MEMBER_ID_REQUIRED,
    NONE,
    REBALANCE_IN_PROGRESS,
    UNSUPPORTED_VERSION,
    CoordinatorError,
)
from ...runtime.result import Result
from ..classic.classic_group import ClassicGroup, GroupState
from ..classic.group_manager import GroupMetadataManager
from ..group_config import CoordinatorConfig
from ..overview import GroupOverview
from ..record_builders import group_tombstone
from ..requests import JoinRequest, JoinResult, SyncRequest, SyncResult
from . import describe
from .classic_members import (
    ClassicJoin,
    classic_heartbeat,
    classic_join,
    classic_leave,
    classic_sync,
)
from .consumer_group_state import ConsumerGroup, replay_record
from .consumer_record_builders import Record, encode_records
from .heartbeat import (
    HeartbeatRequest,
    HeartbeatResult,
    HeartbeatSettings,
    fence_member,
    heartbeat,
    rebalance_timeout_expired,
    refresh_regexes,
    session_timeout_expired,
    validate_request,
)
from .member import MemberState
from .migration import (
    ClassicMemberView,
    downgrade_records,
    members_from_classic,
    upgrade_records,
    upgrade_refusal,
)
from .regex import TopicFilter

log = logging.getLogger("kafkette.coordinator")

# Kafka resolves a group's regexes at most once per this interval (and one run at a time).
REGEX_REFRESH_INTERVAL_MS = 10_000


def _session_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("consumer-session-timeout", group_id, member_id)


def _rebalance_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("consumer-rebalance-timeout", group_id, member_id)


def _regex_key(group_id: str) -> tuple[str, str]:
    return ("consumer-regex-refresh", group_id)


def _sync_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("consumer-sync-timeout", group_id, member_id)


def _join_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("consumer-join-timeout", group_id, member_id)


class ConsumerGroupManager:
    def __init__(self, context: ShardContext, config: CoordinatorConfig,
                 classic: GroupMetadataManager) -> None:
        self.context = context
        self.config = config.consumer
        self.classic_max_size = config.max_group_size
        self.topics = config.topics
        self.classic = classic
        self.groups: dict[str, ConsumerGroup] = {}
        self.settings = self.config.heartbeat_settings()
        self.group_overrides = config.group_overrides
        # group id -> (its heartbeat interval, the settings carrying it)
        self._group_settings: dict[str, tuple[int, HeartbeatSettings]] = {}
        self._regex_refreshed_at: dict[str, int] = {}
        # group id -> the topic filter of the heartbeat that asked for the pending refresh
        # (Kafka: one refresh at a time, resolved in the context of the member that asked)
        self._regex_refresh_filters: dict[str, TopicFilter | None] = {}
        # group id -> (topics metadata version, group epoch) when its subscription metadata
        # was last computed: Kafka's metadata refresh deadline (soft state, never written)
        self._metadata_refreshed: dict[str, tuple[int, int]] = {}
        self._join_timers: set[tuple[str, str]] = set()  # classic members asked to rejoin

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
            self._metadata_refreshed.pop(key.group, None)

    def on_loaded(self) -> None:
        for group in self.groups.values():
            for member in group.members.values():
                self._arm_session(group.group_id, member.member_id,
                                  self._session_ms(group.group_id, member))
                if member.state == MemberState.UNREVOKED_PARTITIONS:
                    self._arm_rebalance(group.group_id, member.member_id, member.member_epoch,
                                        member.rebalance_timeout_ms)

    # Timers ----------------------------------------------------------------------------------
    def _session_ms(self, group_id: str, member: Any) -> int:
        meta = member.classic_member_metadata
        return self._group_session_ms(group_id) if meta is None else meta.session_timeout_ms

    def _group_session_ms(self, group_id: str) -> int:
        """consumer.session.timeout.ms of the group, else group.consumer.session.timeout.ms."""
        own = self.group_overrides.get(group_id) if self.group_overrides else None
        return self.config.session_timeout_ms if own is None else own[0]

    def _heartbeat_settings(self, group_id: str) -> HeartbeatSettings:
        """The settings with the group's consumer.heartbeat.interval.ms, if it sets one."""
        own = self.group_overrides.get(group_id)
        if own is None:
            return self.settings
        cached = self._group_settings.get(group_id)
        if cached is None or cached[0] != own[1]:
            cached = (own[1], replace(self.settings, heartbeat_interval_ms=own[1]))
            self._group_settings[group_id] = cached
        return cached[1]

    def _arm_session(self, group_id: str, member_id: str, timeout_ms: int | None = None) -> None:
        key = _session_key(group_id, member_id)
        if timeout_ms is not None:
            delay = timeout_ms
        else:  # (no call per heartbeat unless some group sets its own)
            delay = self._group_session_ms(group_id) if self.group_overrides \
                else self.config.session_timeout_ms
        if self.context.touch(key, delay):  # the pending timer's deadline moves (every beat)
            return
        self.context.schedule(
            key, delay,
            lambda shard: shard.consumer_manager().session_timeout_expired(group_id, member_id))

    def _arm_rebalance(self, group_id: str, member_id: str, member_epoch: int,
                       timeout_ms: int) -> None:
        self.context.schedule(
            _rebalance_key(group_id, member_id), max(timeout_ms, 0),
            lambda shard: shard.consumer_manager().rebalance_timeout_expired(
                group_id, member_id, member_epoch))

    def _cancel_timers(self, group_id: str, member_id: str) -> None:
        self.context.cancel(_session_key(group_id, member_id))
        self.context.cancel(_rebalance_key(group_id, member_id))
        self.context.cancel(_sync_key(group_id, member_id))
        self._cancel_join_timer(group_id, member_id)

    def _cancel_join_timer(self, group_id: str, member_id: str) -> None:
        self._join_timers.discard((group_id, member_id))
        self.context.cancel(_join_key(group_id, member_id))

    def member_timeout_expired(self, group_id: str, member_id: str, why: str) -> Result:
        """A classic member did not sync / rejoin in time: it is fenced."""
        self._join_timers.discard((group_id, member_id))
        group = self.groups.get(group_id)
        records = [] if group is None else fence_member(group, member_id, self.topics.lookup)
        return self._fenced(group_id, member_id, records, why)

    def _fenced(self, group_id: str, member_id: str, records: list[Record],
                why: str) -> Result:
        if records:
            log.info("consumer group %s: member %s fenced (%s)", group_id, member_id, why)
            self._cancel_timers(group_id, member_id)
            records = self._maybe_downgrade(group_id, member_id, records)
        return Result(encode_records(records), None)

    def _maybe_downgrade(self, group_id: str, leaving_id: str, records: list[Record],
                         joining: Any = None) -> list[Record]:
        """The last consumer-protocol member leaves a group of classic members: with the
        policy's consent the group becomes classic again (its tombstones, a GroupMetadata
        record, then a rebalance of the classic group); else ``records`` as they are."""
        group = self.groups.get(group_id)
        if group is None or not self.config.downgrade_enabled:
            return records
        leaving = group.members.get(leaving_id)
        if leaving is None or leaving.uses_classic_protocol:
            return records
        remaining = [m for mid, m in group.members.items() if mid != leaving_id]
        if joining is not None:
            remaining = [m for m in remaining if m.member_id != joining.member_id] + [joining]
        if not remaining or any(not m.uses_classic_protocol for m in remaining) \
                or len(remaining) > self.classic_max_size:
            return records
        log.info("consumer group %s: the last consumer-protocol member %s left; downgrading "
                 "to a classic group of %d members", group_id, leaving_id, len(remaining))
        for member in remaining:
            self._cancel_timers(group_id, member.member_id)
        self._cancel_regex_refresh(group_id)
        self.context.schedule(("consumer-downgrade", group_id), 0,
                              lambda shard: shard.group_manager.rebalance_after_downgrade(
                                  group_id))
        return downgrade_records(group, leaving_id, self.topics.name_of, self.context.now_ms(),
                                 joining)

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

    def _schedule_regex_refresh(self, group_id: str, topic_filter: TopicFilter | None) -> None:
        """Resolve the group's regexes once the throttle allows, with ``topic_filter``, or
        with the filter of the heartbeat whose refresh is pending already."""
        self._regex_refresh_filters.setdefault(group_id, topic_filter)
        last = self._regex_refreshed_at.get(group_id)
        now = self.context.now_ms()
        delay = 0 if last is None else max(0, last + REGEX_REFRESH_INTERVAL_MS - now)
        self.context.schedule(_regex_key(group_id), delay,
                              lambda shard: shard.consumer_manager().refresh_regexes(group_id))

    def _cancel_regex_refresh(self, group_id: str) -> None:
        self.context.cancel(_regex_key(group_id))
        self._regex_refresh_filters.pop(group_id, None)

    def refresh_regexes(self, group_id: str) -> Result:
        topic_filter = self._regex_refresh_filters.pop(group_id, None)
        group = self.groups.get(group_id)
        if group is None:
            return Result((), None)
        now = self.context.now_ms()
        self._regex_refreshed_at[group_id] = now
        records = refresh_regexes(group, self.topics.lookup, self.topics.names(),
                                  self.topics.metadata_version, now, topic_filter)
        return Result(encode_records(records), None)

    # ConsumerGroupHeartbeat (write) ----------------------------------------------------------
    def heartbeat(self, request: HeartbeatRequest) -> Result:
        """Response: the HeartbeatResult (CoordinatorError before anything is written)."""
        if not self.config.enabled:
            raise CoordinatorError(UNSUPPORTED_VERSION,
                                   "The consumer group protocol is not enabled.")
        group_id = request.group_id
        group = self.groups.get(group_id)
        prefix: list[RawRecord] = []
        upgraded: ClassicGroup | None = None
        if group is None:
            classic = self.classic.groups.get(group_id)
            if classic is not None and request.member_epoch != 0:
                validate_request(request, self.settings.assignor_names)
                raise CoordinatorError(GROUP_ID_NOT_FOUND,
                                       f"Group {group_id} is not a consumer group.")
            if classic is not None and request.member_epoch == 0:
                prefix.append(group_tombstone(group_id))  # replayed: the classic group goes
                if not classic.is_in(GroupState.EMPTY):
                    group, upgrade = self._upgrade(classic)
                    prefix += encode_records(upgrade)
                    upgraded = classic
        version = self.topics.metadata_version
        settings = self._heartbeat_settings(group_id) if self.group_overrides else self.settings
        result = heartbeat(group, request, settings, self.topics.lookup,
                           metadata_version=version,
                           metadata_changed=self._metadata_expired(group, version))
        if result.metadata_refreshed_epoch is not None:
            self._metadata_refreshed[group_id] = (version, result.metadata_refreshed_epoch)
        if upgraded is not None and group is not None:
            log.info("classic group %s upgraded to a consumer group at epoch %d", group_id,
                     upgraded.generation)
            for classic_member in list(upgraded.members.values()):
                upgraded.complete_join(classic_member, JoinResult(REBALANCE_IN_PROGRESS,
                                                                  classic_member.member_id))
                upgraded.complete_sync(classic_member, SyncResult(REBALANCE_IN_PROGRESS))
            for member_id, member in group.members.items():
                self._arm_session(group_id, member_id, self._session_ms(group_id, member))
        self._apply_timers(group_id, result)
        records = result.records
        if result.cancel_timers and group is not None:  # left (epoch -1)
            records = self._maybe_downgrade(group_id, result.member_id, records)
        on_durable: Callable[[], None] | None = None
        if result.regex_refresh_needed:
            topic_filter = request.topic_filter

            def on_durable() -> None:
                self._schedule_regex_refresh(group_id, topic_filter)
        if not records and not prefix:  # the regular heartbeat
            return Result((), result, on_durable=on_durable)
        return Result(prefix + encode_records(records), result, on_durable=on_durable)

    def _metadata_expired(self, group: ConsumerGroup | None, version: int) -> bool:
        """Kafka's ConsumerGroup.hasMetadataExpired. Kafka's refresh interval is unbounded
        (METADATA_REFRESH_INTERVAL_MS = Integer.MAX_VALUE): a group's subscription metadata is
        recomputed when a topic changes (onNewMetadataImage -> requestMetadataRefresh; here the
        TopicView's version, which the broker bumps on topic creation, deletion and growth),
        when it was never computed by this coordinator (loaded, new), or when the group epoch
        went back below the one it was computed at (a failed write's records undone)."""
        if group is None:
            return True
        seen = self._metadata_refreshed.get(group.group_id)
        return seen is None or seen[0] != version or group.group_epoch < seen[1]

    def _upgrade(self, classic: ClassicGroup) -> tuple[ConsumerGroup, list[Record]]:
        """A non-empty classic group becomes a consumer group (online upgrade): the group as
        its records will make it, and those records."""
        group_id = classic.group_id
        refusal = upgrade_refusal(policy_allows=self.config.upgrade_enabled,
                                  protocol_type=classic.protocol_type,
                                  size=len(classic.members), max_size=self.config.max_size)
        if refusal is not None:
            raise CoordinatorError(GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group "
                                   f"{group_id} to consumer group because {refusal}.")
        views = [ClassicMemberView(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                   m.rebalance_timeout_ms, m.session_timeout_ms, m.protocols,
                                   m.assignment) for m in classic.members.values()]
        protocol = classic.protocol_name or next(iter(views)).protocols[0][0]

        def topic_id_of(name: str) -> Any:
            found = self.topics.lookup(name)
            return None if found is None else found[0]
        members = members_from_classic(group_id, classic.generation, protocol, views,
                                       topic_id_of)
        upgrade = upgrade_records(group_id, classic.generation, members)
        group = ConsumerGroup(group_id)
        group.replay_all(upgrade)
        return group, upgrade

    # Classic members of a consumer group (mixed groups) --------------------------------------
    def classic_join(self, request: JoinRequest) -> Result:
        """JoinGroup to a non-empty consumer group; the response future completes once the
        records are durable."""
        answer = self.context.new_future()
        group_id = request.group_id
        try:
            joined = classic_join(self.groups[group_id], ClassicJoin(
                group_id, request.member_id, request.group_instance_id,
                request.session_timeout_ms, request.rebalance_timeout_ms, request.protocol_type,
                tuple(request.protocols), request.client_id, request.client_host,
                request.version), self.settings, self.topics.lookup,
                metadata_version=self.topics.metadata_version)
        except CoordinatorError as exc:
            member_id = (exc.message or "") if exc.code == MEMBER_ID_REQUIRED \
                else request.member_id
            answer.set_result(JoinResult(exc.code, member_id))
            return Result((), answer)
        member_id = joined.member_id
        records = joined.records
        downgrade = False
        if joined.replaced_member_id is not None:
            self._cancel_timers(group_id, joined.replaced_member_id)
            # a classic static member replaces the last consumer-protocol one: downgrade
            # (its replacement records first, then the whole group's tombstones, as Kafka)
            conversion = self._maybe_downgrade(group_id, joined.replaced_member_id, [],
                                               joining=joined.member)
            downgrade = bool(conversion)
            records = records + conversion

        def on_durable() -> None:
            self._cancel_join_timer(group_id, member_id)
            if downgrade:  # the classic group's own timers run now
                answer.set_result(JoinResult(NONE, member_id, joined.generation, "consumer",
                                             joined.protocol_name))
                return
            self._arm_session(group_id, member_id, request.session_timeout_ms)
            self.context.schedule(
                _sync_key(group_id, member_id), request.rebalance_timeout_ms,
                lambda shard: shard.consumer_manager().member_timeout_expired(
                    group_id, member_id, "no SyncGroup within the rebalance timeout"))
            answer.set_result(JoinResult(NONE, member_id, joined.generation, "consumer",
                                         joined.protocol_name))
        return Result(encode_records(records), answer, on_durable=on_durable)

    def classic_sync(self, request: SyncRequest) -> Result:
        answer = self.context.new_future()
        group_id = request.group_id
        try:
            member, assignment = classic_sync(
                self.groups[group_id], request.member_id, request.group_instance_id,
                request.generation, request.protocol_type, request.protocol_name,
                self.topics.name_of)
        except CoordinatorError as exc:
            answer.set_result(SyncResult(exc.code))
            return Result((), answer)

        def on_durable() -> None:
            self.context.cancel(_sync_key(group_id, member.member_id))
            self._arm_session(group_id, member.member_id, self._session_ms(group_id, member))
            answer.set_result(SyncResult(NONE, assignment, request.protocol_type,
                                         request.protocol_name))
        return Result((), answer, on_durable=on_durable)

    def classic_heartbeat(self, group_id: str, member_id: str, instance_id: str | None,
                          generation: int) -> Result:
        try:
            member, code = classic_heartbeat(self.groups[group_id], member_id, instance_id,
                                             generation)
        except CoordinatorError as exc:
            return Result((), exc.code)
        self._arm_session(group_id, member_id, self._session_ms(group_id, member))
        if code == REBALANCE_IN_PROGRESS and (group_id, member_id) not in self._join_timers:
            self._join_timers.add((group_id, member_id))
            self.context.schedule(
                _join_key(group_id, member_id), max(member.rebalance_timeout_ms, 0),
                lambda shard: shard.consumer_manager().member_timeout_expired(
                    group_id, member_id, "did not rejoin within the rebalance timeout"))
        return Result((), code)

    def classic_leave(self, group_id: str, members: list[tuple[str, str | None]]) -> Result:
        records, results, removed = classic_leave(self.groups[group_id], members,
                                                  self.topics.lookup)
        for member_id in removed:
            log.info("consumer group %s: member %s leaves", group_id, member_id)
            self._cancel_timers(group_id, member_id)
        return Result(encode_records(records), (NONE, results))

    def _apply_timers(self, group_id: str, result: HeartbeatResult) -> None:
        member_id = result.member_id
        if result.arm_session_timeout and result.replaced_member_id is None \
                and result.arm_rebalance_timeout_ms is None \
                and not (result.cancel_timers or result.cancel_rebalance_timeout):
            self._arm_session(group_id, member_id)  # the regular heartbeat
            return
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
            return INVALID_GROUP_ID, "Group id can't be empty.", None
        group = self.groups.get(group_id)
        if group is None:
            if group_id in self.classic.groups:
                return GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.", None
            return GROUP_ID_NOT_FOUND, f"Group {group_id} not found.", None
        return NONE, None, describe.describe_group(group, self.default_assignor,
                                                     self.topics.name_of)

    def overview(self, group_id: str) -> GroupOverview | None:
        group = self.groups.get(group_id)
        if group is None:
            return None
        return describe.group_overview(group, self.default_assignor, self.topics.name_of)

    def overviews(self) -> list[GroupOverview]:
        return [describe.group_overview(g, self.default_assignor, self.topics.name_of)
                for g in self.groups.values()]

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
        return NONE

    def downgrade_empty(self, group_id: str) -> list[RawRecord]:
        """A classic JoinGroup reaches an empty consumer group: the consumer group is deleted
        (in memory now, its tombstones go first in the join's batch, not replayed)."""
        group = self.groups.pop(group_id)
        self._regex_refreshed_at.pop(group_id, None)
        self._metadata_refreshed.pop(group_id, None)
        self._cancel_regex_refresh(group_id)
        return encode_records(group.tombstones())

