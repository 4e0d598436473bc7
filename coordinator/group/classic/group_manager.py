"""Classic groups of one shard (the classic half of Kafka's GroupMetadataManager): SyncGroup,
Heartbeat, LeaveGroup, their timers, DescribeGroups/ListGroups views and the replay of group
metadata records. JoinGroup, the join phase and the member timers are its ``JoinPhase``
(classic_join.py), a collaborator it holds and calls.

Ops change the in-memory groups themselves and return the GroupMetadata records that persist
them with ``replay=False`` (as Kafka does for classic groups). A failed append makes the runtime
reload the shard from the log, so nothing here undoes anything. Parked JoinGroup/SyncGroup
futures and timers are soft state: never written, and every timer op re-validates.
"""

from __future__ import annotations

import logging

from kafkette.protocol.group_records import GroupMetadataValue

from ...runtime.coordinator_runtime import ShardContext
from ...runtime.error_codes import (
    COORDINATOR_NOT_AVAILABLE,
    FENCED_INSTANCE_ID,
    GROUP_ID_NOT_FOUND,
    ILLEGAL_GENERATION,
    INCONSISTENT_GROUP_PROTOCOL,
    NONE,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
    CoordinatorError,
)
from ...runtime.result import Result
from ..events import GroupEventLog
from ..group_config import CoordinatorConfig
from ..overview import GroupOverview, MemberOverview
from ..record_builders import group_metadata
from ..requests import DescribedGroup, JoinRequest, JoinResult, SyncRequest, SyncResult
from .classic_group import (
    STATE_DEAD,
    STATE_EMPTY,
    STATE_PREPARING_REBALANCE,
    ClassicGroup,
    GroupState,
    Member,
)
from .classic_join import JoinPhase, heartbeat_key
from .pending_writes import PendingWrites

log = logging.getLogger("kafkette.coordinator")

_HEARTBEAT_RESULTS = {code: Result((), code) for code in (
    NONE, UNKNOWN_MEMBER_ID, COORDINATOR_NOT_AVAILABLE, ILLEGAL_GENERATION,
    REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID)}
_HEARTBEAT_OK = _HEARTBEAT_RESULTS[NONE]
_HEARTBEAT_REBALANCING = _HEARTBEAT_RESULTS[REBALANCE_IN_PROGRESS]


CONSUMER_PROTOCOL_TYPE = "consumer"


class GroupMetadataManager:
    def __init__(self, context: ShardContext, config: CoordinatorConfig) -> None:
        self.context = context
        self.config = config
        self.groups: dict[str, ClassicGroup] = {}
        self.events = GroupEventLog(context)  # what people watching the console see
        self.writes = PendingWrites()  # what the running op has to write
        self.join = JoinPhase(context, config, self.groups, self.events, self.writes)

    def join_group(self, r: JoinRequest) -> Result:
        """Result whose response is the (maybe parked) future of the JoinResult."""
        return self.join.join_group(r)

    def rebalance_after_downgrade(self, group_id: str) -> Result:
        return self.join.rebalance_after_downgrade(group_id)

    # Lifecycle -------------------------------------------------------------------------------
    def on_loaded(self) -> None:
        for group in self.groups.values():
            for member in group.members.values():
                self.join.reschedule_heartbeat(group, member)
            if len(group.members) > self.config.max_group_size and group.is_in(GroupState.STABLE):
                self.join.prepare_rebalance(group)
        self.writes.clear()  # not written: the loaded state is the log's

    def on_unloaded(self, error: int) -> None:
        """The shard is dropped: parked requests get ``error``, groups become Dead."""
        now = self.context.now_ms()
        for group in self.groups.values():
            self._cancel_group_timers(group)
            for member in list(group.members.values()):
                if group.is_in(GroupState.PREPARING_REBALANCE):
                    group.complete_join(member, JoinResult(error, member.member_id))
                if group.is_in(GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
                    group.complete_sync(member, SyncResult(error))
            group.transition(GroupState.DEAD, now)
        self.groups.clear()

    # Replay ----------------------------------------------------------------------------------
    def replay_group(self, group_id: str, value: GroupMetadataValue | None) -> None:
        if value is None:
            group = self.groups.pop(group_id, None)
            if group is not None:
                self._cancel_group_timers(group)
                group.transition(GroupState.DEAD, self.context.now_ms())
            return
        self.groups[group_id] = self._group_from_record(group_id, value)

    def ensure_group(self, group_id: str) -> None:
        """An offset commit of an unknown group creates a simple (Empty) group."""
        if group_id not in self.groups:
            self.join.create_group(group_id)

    def _group_from_record(self, group_id: str, value: GroupMetadataValue) -> ClassicGroup:
        group = ClassicGroup(
            group_id, self.context.now_ms(),
            state=GroupState.STABLE if value.members else GroupState.EMPTY,
            generation=value.generation,
            protocol_type=value.protocol_type or None,
            protocol_name=value.protocol,
        )
        ts = value.current_state_timestamp
        group.state_timestamp = ts if ts != -1 else None
        for m in value.members:
            group.add(Member(
                m.member_id, m.group_instance_id, m.client_id, m.client_host,
                m.session_timeout if m.rebalance_timeout == -1 else m.rebalance_timeout,
                m.session_timeout, value.protocol_type,
                ((value.protocol or "", m.subscription),), m.assignment,
            ))
        group.protocol_type = value.protocol_type or None
        group.leader_id = value.leader
        group.subscribed_topics = group.compute_subscribed_topics()
        return group

    def _cancel_group_timers(self, group: ClassicGroup) -> None:
        gid = group.group_id
        self.context.cancel(("join", gid))
        self.context.cancel(("sync", gid))
        for member_id in list(group.members) + list(group.pending_join):
            self.context.cancel(heartbeat_key(gid, member_id))

    # SyncGroup -------------------------------------------------------------------------------
    def sync_group(self, r: SyncRequest) -> Result:
        """Result whose response is the (maybe parked) future of the SyncResult."""
        fut = self.context.new_future()
        group = self.groups.get(r.group_id)
        if group is None:
            fut.set_result(SyncResult(UNKNOWN_MEMBER_ID))
            return Result((), fut)
        error = self._validate_sync(group, r)
        state = group.state
        if error is not None:
            fut.set_result(SyncResult(error))
        elif state is GroupState.EMPTY:
            fut.set_result(SyncResult(UNKNOWN_MEMBER_ID))
        elif state is GroupState.PREPARING_REBALANCE:
            fut.set_result(SyncResult(REBALANCE_IN_PROGRESS))
        elif state is GroupState.COMPLETING_REBALANCE:
            group.members[r.member_id].sync_future = fut
            self._remove_pending_sync(group, r.member_id)
            if group.is_leader(r.member_id):
                self._store_assignment(group, r)
        elif state is GroupState.STABLE:
            self._remove_pending_sync(group, r.member_id)
            fut.set_result(SyncResult(NONE, group.members[r.member_id].assignment,
                                      group.protocol_type, group.protocol_name))
        return self.writes.result(fut)

    @staticmethod
    def _validate_sync(group: ClassicGroup, r: SyncRequest) -> int | None:
        if group.is_in(GroupState.DEAD):
            return COORDINATOR_NOT_AVAILABLE
        try:
            group.validate_member(r.member_id, r.group_instance_id)
        except CoordinatorError as exc:
            return exc.code
        if r.generation != group.generation:
            return ILLEGAL_GENERATION
        if _inconsistent(r.protocol_type, group.protocol_type) or _inconsistent(
                r.protocol_name, group.protocol_name):
            return INCONSISTENT_GROUP_PROTOCOL
        return None

    def _remove_pending_sync(self, group: ClassicGroup, member_id: str) -> None:
        pending = group.pending_sync
        pending.discard(member_id)
        if not pending or group.is_in(GroupState.DEAD, GroupState.EMPTY,
                                      GroupState.PREPARING_REBALANCE):
            self.context.cancel(("sync", group.group_id))

    def _store_assignment(self, group: ClassicGroup, r: SyncRequest) -> None:
        assignment = dict(r.assignments)
        for member_id in group.members:
            assignment.setdefault(member_id, b"")
        generation = r.generation

        def on_durable() -> None:
            if self.groups.get(group.group_id) is not group or group.generation != generation \
                    or not group.is_in(GroupState.COMPLETING_REBALANCE):
                return
            for member in group.members.values():
                member.assignment = assignment.get(member.member_id, b"")
            self.join.propagate_assignment(group, NONE)
            group.transition(GroupState.STABLE, self.context.now_ms())
            self.events.emit(group.group_id, "rebalance-completed", generation=generation,
                             members=len(group.members))
        self.writes.add(group_metadata(group, assignment), on_durable)

    # Heartbeat / LeaveGroup ------------------------------------------------------------------
    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None,
                  generation: int) -> Result:
        group = self.groups.get(group_id)
        if group is None:
            return _HEARTBEAT_RESULTS[UNKNOWN_MEMBER_ID]
        # The hottest group request: states and answers are module globals (an enum member
        # looked up on its class costs ~70 ns in 3.11, a global ~10).
        state = group.state
        if state is STATE_DEAD:
            return _HEARTBEAT_RESULTS[COORDINATOR_NOT_AVAILABLE]
        member = group.members.get(member_id) if instance_id is None else None
        if member is None:  # unknown, or static: group.validate_member says which error
            try:
                group.validate_member(member_id, instance_id)
            except CoordinatorError as exc:
                return _HEARTBEAT_RESULTS.get(exc.code) or Result((), exc.code)
            member = group.members[member_id]
        if generation != group.generation:
            return _HEARTBEAT_RESULTS[ILLEGAL_GENERATION]
        if state is STATE_EMPTY:
            return _HEARTBEAT_RESULTS[UNKNOWN_MEMBER_ID]
        # The session timeout's deadline moves; the timer set at join/sync stays (no new op).
        session_ms = member.session_timeout_ms
        if not self.context.touch(heartbeat_key(group_id, member_id), session_ms):
            self.join.reschedule_heartbeat_id(group_id, member_id, session_ms)
        return _HEARTBEAT_REBALANCING if state is STATE_PREPARING_REBALANCE else _HEARTBEAT_OK

    def touch_member(self, group: ClassicGroup, member_id: str) -> None:
        """An offset commit counts as a heartbeat of a live member."""
        if group.is_in(GroupState.STABLE, GroupState.PREPARING_REBALANCE):
            member = group.members.get(member_id)
            if member is not None:
                self.join.reschedule_heartbeat(group, member)

    def leave_group(self, group_id: str, members: list[tuple[str, str | None]]) -> Result:
        """Response: (error, [(member id, instance id, error)])."""
        group = self.groups.get(group_id)
        if group is None:
            return Result((), (NONE, [(m, i, UNKNOWN_MEMBER_ID) for m, i in members]))
        if group.is_in(GroupState.DEAD):
            return Result((), (COORDINATOR_NOT_AVAILABLE, []))
        results: list[tuple[str, str | None, int]] = []
        removed = False
        for member_id, instance_id in members:
            if member_id == "":
                static_id = group.static_members.get(instance_id) if instance_id is not None else None
                if static_id is not None:
                    self._remove_current_member(group, static_id)
                    results.append((member_id, instance_id, NONE))
                    removed = True
                else:
                    results.append((member_id, instance_id, UNKNOWN_MEMBER_ID))
            elif group.is_pending(member_id):
                group.remove(member_id)
                self.context.cancel(heartbeat_key(group_id, member_id))
                results.append((member_id, instance_id, NONE))
                removed = True
            else:
                try:
                    group.validate_member(member_id, instance_id)
                except CoordinatorError as exc:
                    results.append((member_id, instance_id, exc.code))
                    continue
                self._remove_current_member(group, member_id)
                results.append((member_id, instance_id, NONE))
                removed = True
        if removed:
            if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
                self.join.maybe_prepare_rebalance_or_complete_join(group)
            elif group.is_in(GroupState.PREPARING_REBALANCE):
                self.join.maybe_complete_join_phase(group)
        return self.writes.result((NONE, results))

    def _remove_current_member(self, group: ClassicGroup, member_id: str) -> None:
        member = group.members[member_id]
        self.context.cancel(heartbeat_key(group.group_id, member_id))
        log.info("member %s leaves group %s", member_id, group.group_id)
        self.events.emit(group.group_id, "member-left", member_id=member_id)
        group.complete_join(member, JoinResult(UNKNOWN_MEMBER_ID, ""))
        group.remove(member_id)

    # Describe / List (reads) -----------------------------------------------------------------
    def describe_group(self, group_id: str, version: int) -> DescribedGroup:
        group = self.groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            if version >= 6:
                return DescribedGroup(group_id, GROUP_ID_NOT_FOUND, "Dead", "", "", [],
                                      f"Group {group_id} not found.")
            return DescribedGroup(group_id, NONE, "Dead", "", "", [])
        if group.is_in(GroupState.STABLE):
            assert group.protocol_name is not None
            members = [(m, m.metadata(group.protocol_name)) for m in group.members.values()]
            data = group.protocol_name
        else:
            members = [(m, b"") for m in group.members.values()]
            data = ""
        return DescribedGroup(group_id, NONE, group.state.value, group.protocol_type or "",
                              data, members)

    def overview(self, group_id: str) -> GroupOverview | None:
        group = self.groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return None
        return _overview(group)

    def overviews(self) -> list[GroupOverview]:
        return [_overview(g) for g in self.groups.values() if not g.is_in(GroupState.DEAD)]

    def list_groups(self, states: set[str], types: set[str]) -> list[tuple[str, str, str, str]]:
        if types and "classic" not in types:
            return []
        return [(g.group_id, g.protocol_type or "", g.state.value, "classic")
                for g in self.groups.values()
                if not states or g.state.value.lower() in states]


def _overview(group: ClassicGroup) -> GroupOverview:
    """The console's view of a classic group; assignments decoded for the consumer protocol
    (its codecs imported here: a broker with simple groups only never loads them)."""
    from kafkette.protocol.consumer_protocol import assignment_partitions_or_empty

    consumer = group.protocol_type == CONSUMER_PROTOCOL_TYPE
    return GroupOverview(
        group.group_id, "classic", group.state.value, group.protocol_type or "",
        group.protocol_name, group.generation, group.leader_id,
        tuple(MemberOverview(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                             tuple(sorted(assignment_partitions_or_empty(m.assignment)))
                             if consumer else ())
              for m in group.members.values()))


def _inconsistent(requested: str | None, current: str | None) -> bool:
    return requested is not None and current is not None and requested != current
