"""Share groups (KIP-932) of one shard: the share half of Kafka's GroupMetadataManager.

Wires the pure operations of ``share_heartbeat`` into the runtime: ShareGroupHeartbeat as a
write op whose records are replayed like any loaded record, the member session timers as
timer write ops (fencing), ShareGroupDescribe and the share rows of ListGroups as reads,
DeleteGroups. Members that leave or are fenced are announced, once their tombstones are
durable, to the listeners in ``CoordinatorConfig.share_member_listeners``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace

from kafkette.protocol import share_group_records as sgr

from ...runtime.coordinator_log import RawRecord
from ...runtime.coordinator_runtime import ShardContext
from ...runtime.error_codes import (
    GROUP_ID_NOT_FOUND,
    INVALID_GROUP_ID,
    NON_EMPTY_GROUP,
    NONE,
)
from ...runtime.result import Result
from ..assignor.spec import Assignment
from ..described import DescribedTopicPartitions, described_partitions
from ..group_config import CoordinatorConfig
from ..overview import GroupOverview, MemberOverview
from . import simple_assignor
from .share_group import ShareGroup, encode_records, replay_record
from .share_heartbeat import (
    ShareHeartbeatRequest,
    ShareHeartbeatSettings,
    fence_member,
    heartbeat,
)

log = logging.getLogger("kafkette.coordinator")


def _session_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("share-session-timeout", group_id, member_id)


@dataclass(frozen=True, slots=True)
class DescribedShareMember:
    """A member as ShareGroupDescribe v1 names its fields."""
    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    assignment: tuple[DescribedTopicPartitions, ...]


@dataclass(frozen=True, slots=True)
class DescribedShareGroup:
    """A share group as ShareGroupDescribe v1 names its fields; also the admin side's view
    (``GroupCoordinator.share_group``): type "share", state, epochs, members."""
    group_id: str
    group_state: str  # Empty / Stable
    group_epoch: int
    assignment_epoch: int
    assignor_name: str
    members: tuple[DescribedShareMember, ...]
    # share-partitions whose state exists (topic id -> partitions), for the offsets admin APIs
    initialized: dict[uuid.UUID, tuple[int, ...]]


class ShareGroupManager:
    def __init__(self, context: ShardContext, config: CoordinatorConfig,
                 other_group: Callable[[str], bool]) -> None:
        self.context = context
        self.config = config.share
        self.topics = config.topics
        self.overrides = config.share_overrides
        self.listeners = config.share_member_listeners
        # group id -> True when a classic or consumer group has that id
        self._other_group = other_group
        self.groups: dict[str, ShareGroup] = {}
        self.settings = ShareHeartbeatSettings(self.config.heartbeat_interval_ms,
                                               self.config.max_size)
        # group id -> (topics metadata version) at its last full heartbeat (soft state)
        self._metadata_seen: dict[str, int] = {}

    # Replay / lifecycle ----------------------------------------------------------------------
    def replay(self, key: sgr.ShareGroupKey, value: sgr.ShareGroupValue | None) -> None:
        replay_record(self.groups, key, value)
        if value is None and key.group not in self.groups:
            self._metadata_seen.pop(key.group, None)

    def on_loaded(self) -> None:
        for group in self.groups.values():
            for member_id in group.members:
                self._arm_session(group.group_id, member_id)

    # Timers ----------------------------------------------------------------------------------
    def _group_settings(self, group_id: str) -> tuple[int, ShareHeartbeatSettings]:
        """(session timeout ms, heartbeat settings) of the group: its own share.* configs,
        else group.share.session.timeout.ms / group.share.heartbeat.interval.ms."""
        own = self.overrides.get(group_id) if self.overrides else None
        if own is None:
            return self.config.session_timeout_ms, self.settings
        return own[0], replace(self.settings, heartbeat_interval_ms=own[1])

    def _arm_session(self, group_id: str, member_id: str) -> None:
        key = _session_key(group_id, member_id)
        delay = self._group_settings(group_id)[0]
        if self.context.touch(key, delay):
            return
        self.context.schedule(
            key, delay,
            lambda shard: shard.share_manager().session_timeout_expired(group_id, member_id))

    def session_timeout_expired(self, group_id: str, member_id: str) -> Result:
        group = self.groups.get(group_id)
        records = [] if group is None else fence_member(group, member_id, self.topics.lookup)
        if not records:
            return Result((), None)
        log.info("share group %s: member %s fenced (session timeout expired)", group_id,
                 member_id)
        return Result(encode_records(records), None,
                      on_durable=lambda: self._announce(group_id, member_id))

    def _announce(self, group_id: str, member_id: str) -> None:
        for listener in list(self.listeners):
            try:
                listener(group_id, member_id)
            except Exception:  # noqa: BLE001 - one listener's bug must not stop the others
                log.exception("share member listener failed for %s/%s", group_id, member_id)

    # ShareGroupHeartbeat (write) -------------------------------------------------------------
    def heartbeat(self, request: ShareHeartbeatRequest) -> Result:
        """Response: the ShareHeartbeatResult (CoordinatorError before anything is written)."""
        group_id = request.group_id
        group = self.groups.get(group_id)
        if group is None and group_id and self._other_group(group_id):
            from .share_heartbeat import not_a_share_group, validate_request

            validate_request(request)
            raise not_a_share_group(group_id)
        session_ms, settings = self._group_settings(group_id)
        version = self.topics.metadata_version
        changed = group is None or self._metadata_seen.get(group_id) != version
        result = heartbeat(group, request, settings, self.topics.lookup,
                           metadata_changed=changed)
        if result.records or changed:
            self._metadata_seen[group_id] = version
        member_id = result.member_id
        if result.left:
            self.context.cancel(_session_key(group_id, member_id))
            log.info("share group %s: member %s leaves", group_id, member_id)
            return Result(encode_records(result.records), result,
                          on_durable=lambda: self._announce(group_id, member_id))
        self._arm_session(group_id, member_id)
        if not result.records:
            return Result((), result)
        return Result(encode_records(result.records), result)

    # Other group APIs ------------------------------------------------------------------------
    def describe(self, group_id: str) -> tuple[int, str | None, DescribedShareGroup | None]:
        """ShareGroupDescribe of one group: (error, message, group)."""
        if not group_id:
            return INVALID_GROUP_ID, "Group id can't be empty.", None
        group = self.groups.get(group_id)
        if group is None:
            if self._other_group(group_id):
                return GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.", None
            return GROUP_ID_NOT_FOUND, f"Group {group_id} not found.", None
        return NONE, None, self.view(group)

    def view(self, group: ShareGroup) -> DescribedShareGroup:
        name_of = self.topics.name_of
        members = tuple(
            DescribedShareMember(m.member_id, m.rack_id, m.member_epoch, m.client_id,
                                 m.client_host, m.subscribed_topic_names,
                                 described_partitions(m.assigned, name_of))
            for _mid, m in sorted(group.members.items()))
        return DescribedShareGroup(
            group.group_id, group.state, group.group_epoch, group.assignment_epoch,
            simple_assignor.NAME, members,
            {t: tuple(sorted(ps)) for t, (_n, ps) in group.initialized.items()})

    def overview(self, group_id: str) -> GroupOverview | None:
        """The console's view of a share group (coordinator/group/overview.py)."""
        group = self.groups.get(group_id)
        return None if group is None else self._overview(group)

    def overviews(self) -> list[GroupOverview]:
        return [self._overview(g) for g in self.groups.values()]

    def _overview(self, group: ShareGroup) -> GroupOverview:
        name_of = self.topics.name_of

        def assignment(member_assignment: Assignment) -> tuple[tuple[str, int], ...]:
            return tuple(sorted((name, p) for topic_id, partitions in member_assignment.items()
                                if (name := name_of(topic_id)) is not None
                                for p in partitions))
        members = tuple(MemberOverview(m.member_id, None, m.client_id, m.client_host,
                                       assignment(m.assigned))
                        for _mid, m in sorted(group.members.items()))
        return GroupOverview(group.group_id, "share", group.state, "share", simple_assignor.NAME,
                             group.group_epoch, None, members)

    def list_groups(self, states: set[str], types: set[str]) -> list[tuple[str, str, str, str]]:
        """ListGroups rows (group id, protocol type, state, group type)."""
        if types and "share" not in types:
            return []
        return [(g.group_id, "share", g.state, "share") for g in self.groups.values()
                if not states or g.state.lower() in states]

    def delete(self, group: ShareGroup, records: list[RawRecord]) -> int:
        """DeleteGroups of one share group: NON_EMPTY_GROUP while it has members, else its
        tombstones go to ``records``."""
        if not group.is_empty():
            return NON_EMPTY_GROUP
        records.extend(encode_records(group.tombstones()))
        return NONE

