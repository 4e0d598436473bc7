"""The join phase of a classic group's rebalance (Kafka's GroupMetadataManager: classicGroupJoin,
prepareRebalance, completeClassicGroupJoin): JoinGroup of new, known and static members, the
initial rebalance delay, the join timeout and the completion that answers every parked JoinGroup;
and the member timers every phase re-arms (session expiry, the sync deadline) with the
assignment propagation that ends a rebalance.

``GroupMetadataManager`` (group_manager.py) holds one ``JoinPhase`` and calls it; the join phase
never calls the manager back: it is handed the shard context, the config, the groups, the event
log and the running op's ``PendingWrites``, which the manager shares.
"""

from __future__ import annotations

import asyncio
import logging

from ...runtime.coordinator_runtime import ShardContext
from ...runtime.error_codes import (
    COORDINATOR_NOT_AVAILABLE,
    FENCED_INSTANCE_ID,
    GROUP_MAX_SIZE_REACHED,
    INCONSISTENT_GROUP_PROTOCOL,
    MEMBER_ID_REQUIRED,
    NONE,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
    UNKNOWN_SERVER_ERROR,
    CoordinatorError,
)
from ...runtime.result import Result
from ..events import GroupEventLog
from ..group_config import CoordinatorConfig
from ..record_builders import empty_group_metadata, group_metadata
from ..requests import JoinRequest, JoinResult, SyncResult
from .classic_group import ClassicGroup, GroupState, Member, new_member_id
from .pending_writes import PendingWrites

log = logging.getLogger("kafkette.coordinator")

NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000


def heartbeat_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("heartbeat", group_id, member_id)


class JoinPhase:
    """JoinGroup, the join phase and the member timers of one shard's classic groups."""

    def __init__(self, context: ShardContext, config: CoordinatorConfig,
                 groups: dict[str, ClassicGroup], events: GroupEventLog,
                 writes: PendingWrites) -> None:
        self.context = context
        self.config = config
        self.groups = groups  # the manager's dict, shared
        self.events = events
        self.writes = writes

    # JoinGroup -------------------------------------------------------------------------------
    def join_group(self, r: JoinRequest) -> Result:
        """Result whose response is the (maybe parked) future of the JoinResult."""
        fut = self.context.new_future()
        group = self.groups.get(r.group_id)
        is_unknown = r.member_id == ""
        new_group = group is None
        if group is None:
            if not is_unknown:
                fut.set_result(JoinResult(UNKNOWN_MEMBER_ID, r.member_id))
                return Result((), fut)
            group = self.create_group(r.group_id)
        if not self._accept_joining_member(group, r.member_id):
            group.remove(r.member_id)
            fut.set_result(JoinResult(GROUP_MAX_SIZE_REACHED, ""))
        elif is_unknown:
            self._join_new_member(group, r, fut)
        else:
            self._join_existing_member(group, r, fut)
        if new_group:
            self.writes.add(empty_group_metadata(group))
        return self.writes.result(fut)

    def _accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        max_size = self.config.max_group_size
        state = group.state
        if state is GroupState.EMPTY or state is GroupState.DEAD:
            return True
        if state is GroupState.PREPARING_REBALANCE:
            member = group.members.get(member_id)
            return (member is not None and member.awaiting_join) or group.awaiting_join_count < max_size
        return member_id in group.members or len(group.members) < max_size

    def _join_new_member(self, group: ClassicGroup, r: JoinRequest, fut: asyncio.Future) -> None:
        if group.is_in(GroupState.DEAD):
            fut.set_result(JoinResult(COORDINATOR_NOT_AVAILABLE, ""))
            return
        if not group.supports_protocols(r.protocol_type, r.protocols):
            fut.set_result(JoinResult(INCONSISTENT_GROUP_PROTOCOL, ""))
            return
        if r.group_instance_id is not None:
            new_id = new_member_id(r.group_instance_id)
            existing = group.static_members.get(r.group_instance_id)
            if existing is not None:
                log.info("static member %s of group %s rejoins; replacing member %s",
                         r.group_instance_id, group.group_id, existing)
                self._update_static_member(group, r, existing, new_id, fut)
            else:
                self._add_member(group, r, new_id, fut)
        elif r.version >= 4:
            new_id = new_member_id(r.client_id)
            group.pending_join.add(new_id)
            self.reschedule_heartbeat_id(group.group_id, new_id, r.session_timeout_ms)
            fut.set_result(JoinResult(MEMBER_ID_REQUIRED, new_id))
        else:
            self._add_member(group, r, new_member_id(r.client_id), fut)

    def _join_existing_member(self, group: ClassicGroup, r: JoinRequest,
                              fut: asyncio.Future) -> None:
        mid = r.member_id
        if group.state is GroupState.DEAD:
            fut.set_result(JoinResult(COORDINATOR_NOT_AVAILABLE, mid))
            return
        if not group.supports_protocols(r.protocol_type, r.protocols):
            fut.set_result(JoinResult(INCONSISTENT_GROUP_PROTOCOL, mid))
            return
        if group.is_pending(mid):
            if r.group_instance_id is not None:
                fut.set_result(JoinResult(UNKNOWN_SERVER_ERROR, mid))
                return
            self._add_member(group, r, mid, fut)
            return
        try:
            group.validate_member(mid, r.group_instance_id)
        except CoordinatorError as exc:
            fut.set_result(JoinResult(exc.code, mid))
            return
        member = group.members[mid]
        state = group.state
        if state is GroupState.PREPARING_REBALANCE:
            group.update_member(member, r.protocols, r.rebalance_timeout_ms,
                                r.session_timeout_ms, fut)
            # _maybe_prepare_rebalance_or_complete_join, knowing the group cannot rebalance
            if group.has_all_members_joined() and group.previous_state is not GroupState.EMPTY:
                self._complete_join(group)
        elif state is GroupState.COMPLETING_REBALANCE:
            if member.protocols == r.protocols:
                fut.set_result(self._current_join_result(
                    group, mid, group.leader_members() if group.is_leader(mid) else []))
            else:
                self._update_member_then_rebalance(group, member, r, fut)
        elif state is GroupState.STABLE:
            if group.is_leader(mid) or member.protocols != r.protocols:
                self._update_member_then_rebalance(group, member, r, fut)
            else:
                fut.set_result(self._current_join_result(group, mid, []))
        else:
            fut.set_result(JoinResult(UNKNOWN_MEMBER_ID, mid))

    @staticmethod
    def _current_join_result(group: ClassicGroup, member_id: str, members: list) -> JoinResult:
        return JoinResult(NONE, member_id, group.generation, group.protocol_type,
                          group.protocol_name, group.leader_id or "", members)

    def _add_member(self, group: ClassicGroup, r: JoinRequest, member_id: str,
                    fut: asyncio.Future) -> None:
        member = Member(member_id, r.group_instance_id, r.client_id, r.client_host,
                        r.rebalance_timeout_ms, r.session_timeout_ms, r.protocol_type,
                        r.protocols, is_new=True)
        if group.is_in(GroupState.PREPARING_REBALANCE) and group.previous_state is GroupState.EMPTY:
            group.new_member_added = True
        group.add(member, fut)
        self.events.emit(group.group_id, "member-joined", member_id=member_id,
                         client_id=r.client_id, client_host=r.client_host,
                         instance_id=r.group_instance_id)
        self.reschedule_heartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self.maybe_prepare_rebalance_or_complete_join(group)

    def _update_member_then_rebalance(self, group: ClassicGroup, member: Member,
                                      r: JoinRequest, fut: asyncio.Future) -> None:
        group.update_member(member, r.protocols, r.rebalance_timeout_ms, r.session_timeout_ms, fut)
        self.maybe_prepare_rebalance_or_complete_join(group)

    def _update_static_member(self, group: ClassicGroup, r: JoinRequest, old_id: str,
                              new_id: str, fut: asyncio.Future) -> None:
        instance_id = r.group_instance_id
        assert instance_id is not None
        current_leader = group.leader_id
        new = group.replace_static_member(
            instance_id, old_id, new_id,
            join_fence=JoinResult(FENCED_INSTANCE_ID, old_id),
            sync_fence=SyncResult(FENCED_INSTANCE_ID),
        )
        self.context.cancel(heartbeat_key(group.group_id, old_id))
        self.events.emit(group.group_id, "static-member-replaced", member_id=new_id,
                         previous_member_id=old_id, instance_id=instance_id)
        self.reschedule_heartbeat(group, new)
        group.update_member(new, r.protocols, r.rebalance_timeout_ms, r.session_timeout_ms, fut)
        if group.is_in(GroupState.STABLE):
            if (group.protocol_name or "") != group.select_protocol():
                self.maybe_prepare_rebalance_or_complete_join(group)
                return
            assignment = {m.member_id: m.assignment for m in group.members.values()}
            version = r.version

            def on_durable() -> None:
                if version >= 9:
                    is_leader = group.is_leader(new_id)
                    group.complete_join(new, JoinResult(
                        NONE, new_id, group.generation, group.protocol_type,
                        group.protocol_name, group.leader_id or "",
                        group.leader_members() if is_leader else [], skip_assignment=is_leader))
                else:
                    group.complete_join(new, JoinResult(
                        NONE, new_id, group.generation, group.protocol_type,
                        group.protocol_name, current_leader or ""))
            self.writes.add(group_metadata(group, assignment), on_durable)
        elif group.is_in(GroupState.COMPLETING_REBALANCE):
            self.prepare_rebalance(group)
        elif group.is_in(GroupState.PREPARING_REBALANCE):
            self.maybe_complete_join_phase(group)

    def rebalance_after_downgrade(self, group_id: str) -> Result:
        """A consumer group just became this classic group (KIP-848 online downgrade): its
        members get heartbeat timers and a rebalance starts (Kafka's convertToClassicGroup)."""
        group = self.groups.get(group_id)
        if group is not None and group.is_in(GroupState.STABLE):
            for member in group.members.values():
                self.reschedule_heartbeat(group, member)
            self.prepare_rebalance(group)
        return self.writes.result(None)

    # Rebalance machinery ---------------------------------------------------------------------
    def maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup) -> None:
        if group.can_rebalance():
            self.prepare_rebalance(group)
        else:
            self.maybe_complete_join_phase(group)

    def prepare_rebalance(self, group: ClassicGroup) -> None:
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_with_error(group, REBALANCE_IN_PROGRESS)
        gid = group.group_id
        self.context.cancel(("sync", gid))
        initial = group.is_in(GroupState.EMPTY)
        if initial:
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self._schedule_initial_join(gid, delay, remaining)
        group.transition(GroupState.PREPARING_REBALANCE, self.context.now_ms())
        self.events.emit(gid, "rebalance-started", generation=group.generation,
                         members=len(group.members))
        log.debug("preparing to rebalance group %s (generation %d)", gid, group.generation)
        if not initial:
            self._maybe_complete_join_else_schedule(group)

    def _schedule_initial_join(self, group_id: str, delay: int, remaining: int) -> None:
        self.context.schedule(("join", group_id), delay,
                              lambda _s: self._try_complete_initial(group_id, delay, remaining))

    def _try_complete_initial(self, group_id: str, delay: int, remaining: int) -> Result:
        group = self.groups.get(group_id)
        if group is None:
            return self.writes.result(None)
        if group.new_member_added and remaining != 0:
            group.new_member_added = False
            new_delay = min(self.config.initial_rebalance_delay_ms, remaining)
            self._schedule_initial_join(group_id, new_delay, max(remaining - delay, 0))
        else:
            self._complete_join(group)
        return self.writes.result(None)

    def _maybe_complete_join_else_schedule(self, group: ClassicGroup) -> None:
        if group.has_all_members_joined():
            self._complete_join(group)
        else:
            self._schedule_join_timeout(group)

    def _schedule_join_timeout(self, group: ClassicGroup) -> None:
        gid = group.group_id
        self.context.schedule(("join", gid), group.rebalance_timeout_ms(),
                              lambda _s: self._complete_join_by_id(gid))

    def _complete_join_by_id(self, group_id: str) -> Result:
        group = self.groups.get(group_id)
        if group is not None:
            self._complete_join(group)
        return self.writes.result(None)

    def maybe_complete_join_phase(self, group: ClassicGroup) -> None:
        if (group.is_in(GroupState.PREPARING_REBALANCE) and group.has_all_members_joined()
                and group.previous_state is not GroupState.EMPTY):
            self._complete_join(group)

    def _complete_join(self, group: ClassicGroup) -> None:
        gid = group.group_id
        self.context.cancel(("join", gid))
        if not group.is_in(GroupState.PREPARING_REBALANCE):
            return
        for member in [m for m in group.not_yet_rejoined() if not m.is_static]:
            group.remove(member.member_id)
            self.context.cancel(heartbeat_key(gid, member.member_id))
        if not group.maybe_elect_new_joined_leader() and group.members:
            log.warning("group %s could not complete rebalance because no members rejoined", gid)
            self._schedule_join_timeout(group)
            return
        group.init_next_generation(self.context.now_ms())
        self.events.emit(gid, "generation", generation=group.generation,
                         members=len(group.members), protocol=group.protocol_name,
                         leader=group.leader_id)
        if group.is_in(GroupState.EMPTY):
            log.info("group %s with generation %d is now empty", gid, group.generation)
            self.writes.add(group_metadata(group, {}))
            return
        log.info("stabilized group %s generation %d (%d members, protocol %s)", gid,
                 group.generation, len(group.members), group.protocol_name)
        leader_members = group.leader_members()
        for member in list(group.members.values()):
            group.complete_join(member, self._current_join_result(
                group, member.member_id,
                leader_members if group.is_leader(member.member_id) else []))
            self.reschedule_heartbeat(group, member)
            member.is_new = False
            group.pending_sync.add(member.member_id)
        generation = group.generation
        self.context.schedule(("sync", gid), group.rebalance_timeout_ms(),
                              lambda _s: self._expire_pending_sync(gid, generation))

    # Member timers and assignment propagation ---------------------------------------------
    def create_group(self, group_id: str) -> ClassicGroup:
        group = ClassicGroup(group_id, self.context.now_ms())
        self.groups[group_id] = group
        return group

    def _expire_pending_sync(self, group_id: str, generation: int) -> Result:
        group = self.groups.get(group_id)
        if group is not None and group.generation == generation and group.pending_sync and \
                group.is_in(GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            for member_id in list(group.pending_sync):
                group.remove(member_id)
                self.context.cancel(heartbeat_key(group_id, member_id))
            log.info("removed members of group %s that did not sync in time", group_id)
            self.events.emit(group_id, "sync-expired", generation=generation)
            self.prepare_rebalance(group)
        return self.writes.result(None)

    def reschedule_heartbeat(self, group: ClassicGroup, member: Member,
                             delay_ms: int | None = None) -> None:
        self.reschedule_heartbeat_id(group.group_id, member.member_id,
                                     member.session_timeout_ms if delay_ms is None else delay_ms)

    def reschedule_heartbeat_id(self, group_id: str, member_id: str, delay_ms: int) -> None:
        key = heartbeat_key(group_id, member_id)
        # The member's pending timer (same key, same op) only moves: a completed join or sync
        # re-arms every member's, twice per rebalance.
        if not self.context.touch(key, delay_ms):
            self.context.schedule(key, delay_ms,
                                  lambda _s: self._expire_heartbeat(group_id, member_id))

    def _expire_heartbeat(self, group_id: str, member_id: str) -> Result:
        group = self.groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return self.writes.result(None)
        if group.is_pending(member_id):
            log.info("pending member %s of group %s expired", member_id, group_id)
            group.remove(member_id)
            if group.is_in(GroupState.PREPARING_REBALANCE) and group.has_all_members_joined():
                self._complete_join(group)
            return self.writes.result(None)
        member = group.members.get(member_id)
        if member is not None and not member.has_satisfied_heartbeat():
            log.info("member %s of group %s failed its session timeout; removing it",
                     member_id, group_id)
            self.events.emit(group_id, "session-expired", member_id=member_id)
            self._remove_member_and_update(group, member)
        return self.writes.result(None)

    def _remove_member_and_update(self, group: ClassicGroup, member: Member) -> None:
        group.complete_join(member, JoinResult(UNKNOWN_MEMBER_ID, ""))
        group.remove(member.member_id)
        if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self.maybe_prepare_rebalance_or_complete_join(group)
        elif group.is_in(GroupState.PREPARING_REBALANCE) and group.has_all_members_joined():
            self._complete_join(group)

    def _reset_and_propagate_assignment_with_error(self, group: ClassicGroup, error: int) -> None:
        for member in group.members.values():
            member.assignment = b""
        self.propagate_assignment(group, error)

    def propagate_assignment(self, group: ClassicGroup, error: int) -> None:
        # Kafka names the protocol only in successful answers.
        ptype, pname = (group.protocol_type, group.protocol_name) if error == NONE else (None, None)
        for member in group.members.values():
            if group.complete_sync(member, SyncResult(error, member.assignment, ptype, pname)):
                self.reschedule_heartbeat(group, member)
