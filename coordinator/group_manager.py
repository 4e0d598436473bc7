"""Classic groups of one shard (the classic half of Kafka's GroupMetadataManager): JoinGroup,
SyncGroup, Heartbeat, LeaveGroup, their timers, DescribeGroups/ListGroups views and the replay
of group metadata records.

Ops change the in-memory groups themselves and return the GroupMetadata records that persist
them with ``replay=False`` (as Kafka does for classic groups). A failed append makes the runtime
reload the shard from the log, so nothing here undoes anything. Parked JoinGroup/SyncGroup
futures and timers are soft state: never written, and every timer op re-validates.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from kafkette.protocol.group_records import GroupMetadataValue

from . import errors as E
from . import records as R
from .config import CoordinatorConfig
from .errors import CoordinatorError
from .events import GroupEventLog
from .group import ClassicGroup, GroupState, Member, new_member_id
from .log import RawRecord
from .requests import DescribedGroup, JoinRequest, JoinResult, SyncRequest, SyncResult
from .result import Result
from .runtime import ShardContext

log = logging.getLogger("kafkette.coordinator")

NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000
S = GroupState


_HEARTBEAT_RESULTS = {code: Result((), code) for code in (
    E.NONE, E.UNKNOWN_MEMBER_ID, E.COORDINATOR_NOT_AVAILABLE, E.ILLEGAL_GENERATION,
    E.REBALANCE_IN_PROGRESS, E.FENCED_INSTANCE_ID)}


def _heartbeat_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("heartbeat", group_id, member_id)


class GroupMetadataManager:
    def __init__(self, context: ShardContext, config: CoordinatorConfig) -> None:
        self.context = context
        self.config = config
        self.groups: dict[str, ClassicGroup] = {}
        self.events = GroupEventLog(context)  # what people watching the console see
        # What the running op has to write, and its on-durable hooks (see ``_result``).
        self._records: list[RawRecord] = []
        self._hooks: list[Callable[[], None]] = []

    def _now(self) -> int:
        return self.context.now_ms()

    def _result(self, response: Any) -> Result:
        """The running op's records (GroupMetadata, not replayed) with ``response``."""
        records, hooks = self._records, self._hooks
        if not records and not hooks:
            return Result((), response)
        self._records, self._hooks = [], []
        if not hooks:
            on_durable = None
        elif len(hooks) == 1:
            on_durable = hooks[0]
        else:
            def on_durable() -> None:
                for hook in hooks:
                    hook()
        return Result(records, response, replay=False, on_durable=on_durable)

    def _write(self, record: RawRecord, on_durable: Callable[[], None] | None = None) -> None:
        self._records.append(record)
        if on_durable is not None:
            self._hooks.append(on_durable)

    # Lifecycle -------------------------------------------------------------------------------
    def on_loaded(self) -> None:
        for group in self.groups.values():
            for member in group.members.values():
                self._reschedule_heartbeat(group, member)
            if len(group.members) > self.config.max_group_size and group.is_in(S.STABLE):
                self._prepare_rebalance(group)
        self._records, self._hooks = [], []  # not written: the loaded state is the log's

    def on_unloaded(self, error: int) -> None:
        """The shard is dropped: parked requests get ``error``, groups become Dead."""
        now = self._now()
        for group in self.groups.values():
            self._cancel_group_timers(group)
            for member in list(group.members.values()):
                if group.is_in(S.PREPARING_REBALANCE):
                    group.complete_join(member, JoinResult(error, member.member_id))
                if group.is_in(S.COMPLETING_REBALANCE, S.STABLE):
                    group.complete_sync(member, SyncResult(error))
            group.transition(S.DEAD, now)
        self.groups.clear()

    # Replay ----------------------------------------------------------------------------------
    def replay_group(self, group_id: str, value: GroupMetadataValue | None) -> None:
        if value is None:
            group = self.groups.pop(group_id, None)
            if group is not None:
                self._cancel_group_timers(group)
                group.transition(S.DEAD, self._now())
            return
        self.groups[group_id] = self._group_from_record(group_id, value)

    def ensure_group(self, group_id: str) -> None:
        """An offset commit of an unknown group creates a simple (Empty) group."""
        if group_id not in self.groups:
            self._create_group(group_id)

    def _group_from_record(self, group_id: str, value: GroupMetadataValue) -> ClassicGroup:
        group = ClassicGroup(
            group_id, self._now(),
            state=S.STABLE if value.members else S.EMPTY,
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

    def _create_group(self, group_id: str) -> ClassicGroup:
        group = ClassicGroup(group_id, self._now())
        self.groups[group_id] = group
        return group

    def _cancel_group_timers(self, group: ClassicGroup) -> None:
        gid = group.group_id
        self.context.cancel(("join", gid))
        self.context.cancel(("sync", gid))
        for member_id in list(group.members) + list(group.pending_join):
            self.context.cancel(_heartbeat_key(gid, member_id))

    # JoinGroup -------------------------------------------------------------------------------
    def join_group(self, r: JoinRequest) -> Result:
        """Result whose response is the (maybe parked) future of the JoinResult."""
        fut = self.context.new_future()
        group = self.groups.get(r.group_id)
        is_unknown = r.member_id == ""
        new_group = group is None
        if group is None:
            if not is_unknown:
                fut.set_result(JoinResult(E.UNKNOWN_MEMBER_ID, r.member_id))
                return Result((), fut)
            group = self._create_group(r.group_id)
        if not self._accept_joining_member(group, r.member_id):
            group.remove(r.member_id)
            fut.set_result(JoinResult(E.GROUP_MAX_SIZE_REACHED, ""))
        elif is_unknown:
            self._join_new_member(group, r, fut)
        else:
            self._join_existing_member(group, r, fut)
        if new_group:
            self._write(R.empty_group_metadata(group))
        return self._result(fut)

    def _accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        max_size = self.config.max_group_size
        state = group.state
        if state is S.EMPTY or state is S.DEAD:
            return True
        if state is S.PREPARING_REBALANCE:
            member = group.members.get(member_id)
            return (member is not None and member.awaiting_join) or group.awaiting_join_count < max_size
        return member_id in group.members or len(group.members) < max_size

    def _join_new_member(self, group: ClassicGroup, r: JoinRequest, fut: asyncio.Future) -> None:
        if group.is_in(S.DEAD):
            fut.set_result(JoinResult(E.COORDINATOR_NOT_AVAILABLE, ""))
            return
        if not group.supports_protocols(r.protocol_type, r.protocols):
            fut.set_result(JoinResult(E.INCONSISTENT_GROUP_PROTOCOL, ""))
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
            self._reschedule_heartbeat_id(group.group_id, new_id, r.session_timeout_ms)
            fut.set_result(JoinResult(E.MEMBER_ID_REQUIRED, new_id))
        else:
            self._add_member(group, r, new_member_id(r.client_id), fut)

    def _join_existing_member(self, group: ClassicGroup, r: JoinRequest,
                              fut: asyncio.Future) -> None:
        mid = r.member_id
        if group.state is S.DEAD:
            fut.set_result(JoinResult(E.COORDINATOR_NOT_AVAILABLE, mid))
            return
        if not group.supports_protocols(r.protocol_type, r.protocols):
            fut.set_result(JoinResult(E.INCONSISTENT_GROUP_PROTOCOL, mid))
            return
        if group.is_pending(mid):
            if r.group_instance_id is not None:
                fut.set_result(JoinResult(E.UNKNOWN_SERVER_ERROR, mid))
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
        if state is S.PREPARING_REBALANCE:
            group.update_member(member, r.protocols, r.rebalance_timeout_ms,
                                r.session_timeout_ms, fut)
            # _maybe_prepare_rebalance_or_complete_join, knowing the group cannot rebalance
            if group.has_all_members_joined() and group.previous_state is not S.EMPTY:
                self._complete_join(group)
        elif state is S.COMPLETING_REBALANCE:
            if member.protocols == r.protocols:
                fut.set_result(self._current_join_result(
                    group, mid, group.leader_members() if group.is_leader(mid) else []))
            else:
                self._update_member_then_rebalance(group, member, r, fut)
        elif state is S.STABLE:
            if group.is_leader(mid) or member.protocols != r.protocols:
                self._update_member_then_rebalance(group, member, r, fut)
            else:
                fut.set_result(self._current_join_result(group, mid, []))
        else:
            fut.set_result(JoinResult(E.UNKNOWN_MEMBER_ID, mid))

    @staticmethod
    def _current_join_result(group: ClassicGroup, member_id: str, members: list) -> JoinResult:
        return JoinResult(E.NONE, member_id, group.generation, group.protocol_type,
                          group.protocol_name, group.leader_id or "", members)

    def _add_member(self, group: ClassicGroup, r: JoinRequest, member_id: str,
                    fut: asyncio.Future) -> None:
        member = Member(member_id, r.group_instance_id, r.client_id, r.client_host,
                        r.rebalance_timeout_ms, r.session_timeout_ms, r.protocol_type,
                        r.protocols, is_new=True)
        if group.is_in(S.PREPARING_REBALANCE) and group.previous_state is S.EMPTY:
            group.new_member_added = True
        group.add(member, fut)
        self.events.emit(group.group_id, "member-joined", member_id=member_id,
                         client_id=r.client_id, client_host=r.client_host,
                         instance_id=r.group_instance_id)
        self._reschedule_heartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance_or_complete_join(group)

    def _update_member_then_rebalance(self, group: ClassicGroup, member: Member,
                                      r: JoinRequest, fut: asyncio.Future) -> None:
        group.update_member(member, r.protocols, r.rebalance_timeout_ms, r.session_timeout_ms, fut)
        self._maybe_prepare_rebalance_or_complete_join(group)

    def _update_static_member(self, group: ClassicGroup, r: JoinRequest, old_id: str,
                              new_id: str, fut: asyncio.Future) -> None:
        instance_id = r.group_instance_id
        assert instance_id is not None
        current_leader = group.leader_id
        new = group.replace_static_member(
            instance_id, old_id, new_id,
            join_fence=JoinResult(E.FENCED_INSTANCE_ID, old_id),
            sync_fence=SyncResult(E.FENCED_INSTANCE_ID),
        )
        self.context.cancel(_heartbeat_key(group.group_id, old_id))
        self.events.emit(group.group_id, "static-member-replaced", member_id=new_id,
                         previous_member_id=old_id, instance_id=instance_id)
        self._reschedule_heartbeat(group, new)
        group.update_member(new, r.protocols, r.rebalance_timeout_ms, r.session_timeout_ms, fut)
        if group.is_in(S.STABLE):
            if (group.protocol_name or "") != group.select_protocol():
                self._maybe_prepare_rebalance_or_complete_join(group)
                return
            assignment = {m.member_id: m.assignment for m in group.members.values()}
            version = r.version

            def on_durable() -> None:
                if version >= 9:
                    is_leader = group.is_leader(new_id)
                    group.complete_join(new, JoinResult(
                        E.NONE, new_id, group.generation, group.protocol_type,
                        group.protocol_name, group.leader_id or "",
                        group.leader_members() if is_leader else [], skip_assignment=is_leader))
                else:
                    group.complete_join(new, JoinResult(
                        E.NONE, new_id, group.generation, group.protocol_type,
                        group.protocol_name, current_leader or ""))
            self._write(R.group_metadata(group, assignment), on_durable)
        elif group.is_in(S.COMPLETING_REBALANCE):
            self._prepare_rebalance(group)
        elif group.is_in(S.PREPARING_REBALANCE):
            self._maybe_complete_join_phase(group)

    def rebalance_after_downgrade(self, group_id: str) -> Result:
        """A consumer group just became this classic group (KIP-848 online downgrade): its
        members get heartbeat timers and a rebalance starts (Kafka's convertToClassicGroup)."""
        group = self.groups.get(group_id)
        if group is not None and group.is_in(S.STABLE):
            for member in group.members.values():
                self._reschedule_heartbeat(group, member)
            self._prepare_rebalance(group)
        return self._result(None)

    # Rebalance machinery ---------------------------------------------------------------------
    def _maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group)
        else:
            self._maybe_complete_join_phase(group)

    def _prepare_rebalance(self, group: ClassicGroup) -> None:
        if group.is_in(S.COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_with_error(group, E.REBALANCE_IN_PROGRESS)
        gid = group.group_id
        self.context.cancel(("sync", gid))
        initial = group.is_in(S.EMPTY)
        if initial:
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self._schedule_initial_join(gid, delay, remaining)
        group.transition(S.PREPARING_REBALANCE, self._now())
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
            return self._result(None)
        if group.new_member_added and remaining != 0:
            group.new_member_added = False
            new_delay = min(self.config.initial_rebalance_delay_ms, remaining)
            self._schedule_initial_join(group_id, new_delay, max(remaining - delay, 0))
        else:
            self._complete_join(group)
        return self._result(None)

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
        return self._result(None)

    def _maybe_complete_join_phase(self, group: ClassicGroup) -> None:
        if (group.is_in(S.PREPARING_REBALANCE) and group.has_all_members_joined()
                and group.previous_state is not S.EMPTY):
            self._complete_join(group)

    def _complete_join(self, group: ClassicGroup) -> None:
        gid = group.group_id
        self.context.cancel(("join", gid))
        if not group.is_in(S.PREPARING_REBALANCE):
            return
        for member in [m for m in group.not_yet_rejoined() if not m.is_static]:
            group.remove(member.member_id)
            self.context.cancel(_heartbeat_key(gid, member.member_id))
        if not group.maybe_elect_new_joined_leader() and group.members:
            log.warning("group %s could not complete rebalance because no members rejoined", gid)
            self._schedule_join_timeout(group)
            return
        group.init_next_generation(self._now())
        self.events.emit(gid, "generation", generation=group.generation,
                         members=len(group.members), protocol=group.protocol_name,
                         leader=group.leader_id)
        if group.is_in(S.EMPTY):
            log.info("group %s with generation %d is now empty", gid, group.generation)
            self._write(R.group_metadata(group, {}))
            return
        log.info("stabilized group %s generation %d (%d members, protocol %s)", gid,
                 group.generation, len(group.members), group.protocol_name)
        leader_members = group.leader_members()
        for member in list(group.members.values()):
            group.complete_join(member, self._current_join_result(
                group, member.member_id,
                leader_members if group.is_leader(member.member_id) else []))
            self._reschedule_heartbeat(group, member)
            member.is_new = False
            group.pending_sync.add(member.member_id)
        generation = group.generation
        self.context.schedule(("sync", gid), group.rebalance_timeout_ms(),
                              lambda _s: self._expire_pending_sync(gid, generation))

    def _expire_pending_sync(self, group_id: str, generation: int) -> Result:
        group = self.groups.get(group_id)
        if group is not None and group.generation == generation and \
                group.is_in(S.COMPLETING_REBALANCE, S.STABLE) and group.pending_sync:
            for member_id in list(group.pending_sync):
                group.remove(member_id)
                self.context.cancel(_heartbeat_key(group_id, member_id))
            log.info("removed members of group %s that did not sync in time", group_id)
            self.events.emit(group_id, "sync-expired", generation=generation)
            self._prepare_rebalance(group)
        return self._result(None)

    def _reschedule_heartbeat(self, group: ClassicGroup, member: Member,
                              delay_ms: int | None = None) -> None:
        self._reschedule_heartbeat_id(group.group_id, member.member_id,
                                      member.session_timeout_ms if delay_ms is None else delay_ms)

    def _reschedule_heartbeat_id(self, group_id: str, member_id: str, delay_ms: int) -> None:
        key = ("heartbeat", group_id, member_id)
        # The member's pending timer (same key, same op) only moves: a completed join or sync
        # re-arms every member's, twice per rebalance.
        if not self.context.touch(key, delay_ms):
            self.context.schedule(key, delay_ms,
                                  lambda _s: self._expire_heartbeat(group_id, member_id))

    def _expire_heartbeat(self, group_id: str, member_id: str) -> Result:
        group = self.groups.get(group_id)
        if group is None or group.is_in(S.DEAD):
            return self._result(None)
        if group.is_pending(member_id):
            log.info("pending member %s of group %s expired", member_id, group_id)
            group.remove(member_id)
            if group.is_in(S.PREPARING_REBALANCE) and group.has_all_members_joined():
                self._complete_join(group)
            return self._result(None)
        member = group.members.get(member_id)
        if member is not None and not member.has_satisfied_heartbeat():
            log.info("member %s of group %s failed its session timeout; removing it",
                     member_id, group_id)
            self.events.emit(group_id, "session-expired", member_id=member_id)
            self._remove_member_and_update(group, member)
        return self._result(None)

    def _remove_member_and_update(self, group: ClassicGroup, member: Member) -> None:
        group.complete_join(member, JoinResult(E.UNKNOWN_MEMBER_ID, ""))
        group.remove(member.member_id)
        if group.is_in(S.STABLE, S.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance_or_complete_join(group)
        elif group.is_in(S.PREPARING_REBALANCE) and group.has_all_members_joined():
            self._complete_join(group)

    def _reset_and_propagate_assignment_with_error(self, group: ClassicGroup, error: int) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group: ClassicGroup, error: int) -> None:
        # Kafka names the protocol only in successful answers.
        ptype, pname = (group.protocol_type, group.protocol_name) if error == E.NONE else (None, None)
        for member in group.members.values():
            if group.complete_sync(member, SyncResult(error, member.assignment, ptype, pname)):
                self._reschedule_heartbeat(group, member)

    # SyncGroup -------------------------------------------------------------------------------
    def sync_group(self, r: SyncRequest) -> Result:
        """Result whose response is the (maybe parked) future of the SyncResult."""
        fut = self.context.new_future()
        group = self.groups.get(r.group_id)
        if group is None:
            fut.set_result(SyncResult(E.UNKNOWN_MEMBER_ID))
            return Result((), fut)
        error = self._validate_sync(group, r)
        state = group.state
        if error is not None:
            fut.set_result(SyncResult(error))
        elif state is S.EMPTY:
            fut.set_result(SyncResult(E.UNKNOWN_MEMBER_ID))
        elif state is S.PREPARING_REBALANCE:
            fut.set_result(SyncResult(E.REBALANCE_IN_PROGRESS))
        elif state is S.COMPLETING_REBALANCE:
            group.members[r.member_id].sync_future = fut
            self._remove_pending_sync(group, r.member_id)
            if group.is_leader(r.member_id):
                self._store_assignment(group, r)
        elif state is S.STABLE:
            self._remove_pending_sync(group, r.member_id)
            fut.set_result(SyncResult(E.NONE, group.members[r.member_id].assignment,
                                      group.protocol_type, group.protocol_name))
        return self._result(fut)

    @staticmethod
    def _validate_sync(group: ClassicGroup, r: SyncRequest) -> int | None:
        if group.is_in(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        try:
            group.validate_member(r.member_id, r.group_instance_id)
        except CoordinatorError as exc:
            return exc.code
        if r.generation != group.generation:
            return E.ILLEGAL_GENERATION
        if _inconsistent(r.protocol_type, group.protocol_type) or _inconsistent(
                r.protocol_name, group.protocol_name):
            return E.INCONSISTENT_GROUP_PROTOCOL
        return None

    def _remove_pending_sync(self, group: ClassicGroup, member_id: str) -> None:
        pending = group.pending_sync
        pending.discard(member_id)
        if not pending or group.is_in(S.DEAD, S.EMPTY, S.PREPARING_REBALANCE):
            self.context.cancel(("sync", group.group_id))

    def _store_assignment(self, group: ClassicGroup, r: SyncRequest) -> None:
        assignment = dict(r.assignments)
        for member_id in group.members:
            assignment.setdefault(member_id, b"")
        generation = r.generation

        def on_durable() -> None:
            if self.groups.get(group.group_id) is not group or not (
                    group.is_in(S.COMPLETING_REBALANCE) and group.generation == generation):
                return
            for member in group.members.values():
                member.assignment = assignment.get(member.member_id, b"")
            self._propagate_assignment(group, E.NONE)
            group.transition(S.STABLE, self._now())
            self.events.emit(group.group_id, "rebalance-completed", generation=generation,
                             members=len(group.members))
        self._write(R.group_metadata(group, assignment), on_durable)

    # Heartbeat / LeaveGroup ------------------------------------------------------------------
    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None,
                  generation: int) -> Result:
        group = self.groups.get(group_id)
        if group is None:
            return _HEARTBEAT_RESULTS[E.UNKNOWN_MEMBER_ID]
        state = group.state  # plain comparisons: the hottest group request
        if state is S.DEAD:
            return _HEARTBEAT_RESULTS[E.COORDINATOR_NOT_AVAILABLE]
        member = group.members.get(member_id) if instance_id is None else None
        if member is None:  # unknown, or static: group.validate_member says which error
            try:
                group.validate_member(member_id, instance_id)
            except CoordinatorError as exc:
                return _HEARTBEAT_RESULTS.get(exc.code) or Result((), exc.code)
            member = group.members[member_id]
        if generation != group.generation:
            return _HEARTBEAT_RESULTS[E.ILLEGAL_GENERATION]
        if state is S.EMPTY:
            return _HEARTBEAT_RESULTS[E.UNKNOWN_MEMBER_ID]
        # The session timeout's deadline moves; the timer set at join/sync stays (no new op).
        session_ms = member.session_timeout_ms
        if not self.context.touch(("heartbeat", group_id, member_id), session_ms):
            self._reschedule_heartbeat_id(group_id, member_id, session_ms)
        return _HEARTBEAT_RESULTS[
            E.REBALANCE_IN_PROGRESS if state is S.PREPARING_REBALANCE else E.NONE]

    def touch_member(self, group: ClassicGroup, member_id: str) -> None:
        """An offset commit counts as a heartbeat of a live member."""
        if group.is_in(S.STABLE, S.PREPARING_REBALANCE):
            member = group.members.get(member_id)
            if member is not None:
                self._reschedule_heartbeat(group, member)

    def leave_group(self, group_id: str, members: list[tuple[str, str | None]]) -> Result:
        """Response: (error, [(member id, instance id, error)])."""
        group = self.groups.get(group_id)
        if group is None:
            return Result((), (E.NONE, [(m, i, E.UNKNOWN_MEMBER_ID) for m, i in members]))
        if group.is_in(S.DEAD):
            return Result((), (E.COORDINATOR_NOT_AVAILABLE, []))
        results: list[tuple[str, str | None, int]] = []
        removed = False
        for member_id, instance_id in members:
            if member_id == "":
                static_id = group.static_members.get(instance_id) if instance_id is not None else None
                if static_id is not None:
                    self._remove_current_member(group, static_id)
                    results.append((member_id, instance_id, E.NONE))
                    removed = True
                else:
                    results.append((member_id, instance_id, E.UNKNOWN_MEMBER_ID))
            elif group.is_pending(member_id):
                group.remove(member_id)
                self.context.cancel(_heartbeat_key(group_id, member_id))
                results.append((member_id, instance_id, E.NONE))
                removed = True
            else:
                try:
                    group.validate_member(member_id, instance_id)
                except CoordinatorError as exc:
                    results.append((member_id, instance_id, exc.code))
                    continue
                self._remove_current_member(group, member_id)
                results.append((member_id, instance_id, E.NONE))
                removed = True
        if removed:
            if group.is_in(S.STABLE, S.COMPLETING_REBALANCE):
                self._maybe_prepare_rebalance_or_complete_join(group)
            elif group.is_in(S.PREPARING_REBALANCE):
                self._maybe_complete_join_phase(group)
        return self._result((E.NONE, results))

    def _remove_current_member(self, group: ClassicGroup, member_id: str) -> None:
        member = group.members[member_id]
        self.context.cancel(_heartbeat_key(group.group_id, member_id))
        log.info("member %s leaves group %s", member_id, group.group_id)
        self.events.emit(group.group_id, "member-left", member_id=member_id)
        group.complete_join(member, JoinResult(E.UNKNOWN_MEMBER_ID, ""))
        group.remove(member_id)

    # Describe / List (reads) -----------------------------------------------------------------
    def describe_group(self, group_id: str, version: int) -> DescribedGroup:
        group = self.groups.get(group_id)
        if group is None or group.is_in(S.DEAD):
            if version >= 6:
                return DescribedGroup(group_id, E.GROUP_ID_NOT_FOUND, "Dead", "", "", [],
                                      f"Group {group_id} not found.")
            return DescribedGroup(group_id, E.NONE, "Dead", "", "", [])
        if group.is_in(S.STABLE):
            assert group.protocol_name is not None
            members = [(m, m.metadata(group.protocol_name)) for m in group.members.values()]
            data = group.protocol_name
        else:
            members = [(m, b"") for m in group.members.values()]
            data = ""
        return DescribedGroup(group_id, E.NONE, group.state.value, group.protocol_type or "",
                              data, members)

    def list_groups(self, states: set[str], types: set[str]) -> list[tuple[str, str, str, str]]:
        if types and "classic" not in types:
            return []
        return [(g.group_id, g.protocol_type or "", g.state.value, "classic")
                for g in self.groups.values()
                if not states or g.state.value.lower() in states]


def _inconsistent(requested: str | None, current: str | None) -> bool:
    return requested is not None and current is not None and requested != current
