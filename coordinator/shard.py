"""One coordinator shard: the groups and offsets of one ``__consumer_offsets`` partition.

Mirrors Kafka's GroupMetadataManager/OffsetMetadataManager for classic groups. Every method runs
to completion on the event loop without awaiting, so a shard applies one mutation at a time.
Records go through ``_append``: offset records and tombstones are applied to memory by
``replay`` (as on load); classic group records only persist state the state machine already
holds (Kafka appends them with replay disabled). Responses that depend on a write complete when
the write is durable.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from kafkette.protocol.group_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    RecordDecodeError,
    decode_key,
    decode_offset_value,
    decode_value,
    encode_key,
    encode_offset_key,
    encode_offset_value,
    encode_value,
)

from . import errors as E
from .clock import Clock
from .errors import CoordinatorError, append_error
from .events import GroupEventLog
from .group import ClassicGroup, GroupState, Member, Protocols, new_member_id
from .log import CoordinatorLog, RawRecord

log = logging.getLogger("kafkette.coordinator")

NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000
_MAX_BATCH_RECORDS = 5000
_OFFSET_KEY_VERSIONS = (b"\x00\x00", b"\x00\x01")
_GROUP_KEY_VERSION = b"\x00\x02"
S = GroupState


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


@dataclass(slots=True)
class JoinResult:
    error: int = E.NONE
    member_id: str = ""
    generation: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)
    skip_assignment: bool = False


@dataclass(slots=True)
class SyncResult:
    error: int = E.NONE
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


@dataclass(slots=True)
class JoinRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    client_id: str
    client_host: str
    version: int
    reason: str | None = None


@dataclass(slots=True)
class SyncRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    generation: int
    protocol_type: str | None
    protocol_name: str | None
    assignments: dict[str, bytes]


@dataclass(slots=True)
class CommitPartition:
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None


@dataclass(slots=True)
class DescribedGroup:
    group_id: str
    error: int
    state: str
    protocol_type: str
    protocol_data: str
    members: list[tuple[Member, bytes]]  # (member, metadata or b"")
    error_message: str | None = None


Record = tuple[OffsetCommitKey | GroupMetadataKey, OffsetCommitValue | GroupMetadataValue | None]


def java_length(s: str) -> int:
    """Java String.length(): UTF-16 code units."""
    return len(s.encode("utf-16-le")) // 2


class _Appender:
    """Batches records so concurrent writes share one append (one fsync).

    Adaptive linger: with no write in flight the batch is flushed at the end of the current
    loop turn (requests that arrived together still share it); while a write is in flight
    records accumulate, for at most ``group.coordinator.append.linger.ms``, and go out as one
    batch as soon as that write completes. Driven by callbacks: no task per batch.
    """

    def __init__(self, log_: CoordinatorLog, linger_ms: int) -> None:
        self._log = log_
        self._linger = max(linger_ms, 0) / 1000
        self._buf: list[tuple[bytes, bytes | None]] = []
        self._fut: asyncio.Future | None = None  # resolves when ``_buf`` is durable
        self._handle: asyncio.Handle | None = None
        self._inflight = 0
        self.last_write: asyncio.Future | None = None

    def append(self, records: list[tuple[bytes, bytes | None]]) -> asyncio.Future:
        if self._fut is None:
            loop = asyncio.get_running_loop()
            self._fut = loop.create_future()
            self._fut.add_done_callback(_consume_exception)
            self.last_write = self._fut
            if self._inflight:
                self._handle = loop.call_later(self._linger, self.flush)
            else:
                self._handle = loop.call_soon(self.flush)
        self._buf.extend(records)
        fut = self._fut
        if len(self._buf) >= _MAX_BATCH_RECORDS:
            self.flush()
        return fut

    def flush(self) -> None:
        """Write the collected batch now (the log keeps appends in submission order)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if self._fut is None:
            return
        buf, fut = self._buf, self._fut
        self._buf, self._fut = [], None
        try:
            write = self._log.append(buf)
        except Exception as exc:  # noqa: BLE001 - handed to every waiter
            self._failed(fut, len(buf), exc)
            return
        self._inflight += 1
        write.add_done_callback(lambda w: self._written(w, fut, len(buf)))

    def _written(self, write: asyncio.Future, fut: asyncio.Future, count: int) -> None:
        self._inflight -= 1
        exc = (CoordinatorError(E.NOT_COORDINATOR, "append cancelled") if write.cancelled()
               else write.exception())
        if exc is not None:
            self._failed(fut, count, exc)
        elif not fut.done():
            fut.set_result(None)
        if self._fut is not None and not self._inflight:
            self.flush()  # records that lingered behind this write go out now

    @staticmethod
    def _failed(fut: asyncio.Future, count: int, exc: BaseException) -> None:
        log.warning("append of %d coordinator records failed: %r", count, exc)
        if not fut.done():
            fut.set_exception(exc)

    def idle(self) -> asyncio.Future | None:
        """A future done when everything appended so far is durable (None if nothing pending)."""
        fut = self.last_write
        return None if fut is None or fut.done() else fut

    async def close(self) -> None:
        self.flush()
        pending = self.idle()
        if pending is not None:
            await asyncio.wait([pending])


def _consume_exception(fut: asyncio.Future) -> None:
    if not fut.cancelled():
        fut.exception()


class Shard:
    def __init__(self, partition: int, log_: CoordinatorLog, clock: Clock,
                 config: CoordinatorConfig) -> None:
        self.partition = partition
        self.log = log_
        self.clock = clock
        self.config = config
        self.groups: dict[str, ClassicGroup] = {}
        # group -> topic -> partition -> OffsetCommitValue bytes, decoded when read
        self.offsets: dict[str, dict[str, dict[int, bytes]]] = {}
        # OffsetCommitKey bytes without the partition -> the partition dict those keys fill
        # (valid while that dict and its group exist: cleared whenever one is removed)
        self._offset_parts: dict[bytes, dict[int, bytes]] = {}
        self.loading = True
        self.active = False
        self._appender = _Appender(log_, config.append_linger_ms)
        self.events = GroupEventLog(clock)

    # Lifecycle -------------------------------------------------------------------------------
    async def load(self) -> int:
        """Replay the whole partition log, then arm timers. Returns the record count."""
        count = 0
        async for chunk in self.log.read():
            count += self.replay_all(chunk)
        self._on_loaded()
        return count

    def _on_loaded(self) -> None:
        self.events.loaded()
        self.loading = False
        self.active = True
        for group in self.groups.values():
            for member in group.members.values():
                self._reschedule_heartbeat(group, member)
            if len(group.members) > self.config.max_group_size and group.is_in(S.STABLE):
                self._prepare_rebalance(group)
        self._schedule_retention_check()

    def unload(self) -> None:
        """Leadership lost: parked requests get NOT_COORDINATOR, groups become Dead."""
        self.active = False
        self.clock.cancel(self._retention_key)
        for group in self.groups.values():
            self._cancel_group_timers(group)
            for member in list(group.members.values()):
                if group.is_in(S.PREPARING_REBALANCE):
                    group.complete_join(member, JoinResult(E.NOT_COORDINATOR, member.member_id))
                if group.is_in(S.COMPLETING_REBALANCE, S.STABLE):
                    group.complete_sync(member, SyncResult(E.NOT_COORDINATOR))
            group.transition(S.DEAD, self.clock.now_ms())
        self.groups.clear()
        self.offsets.clear()
        self._offset_parts.clear()

    async def close(self) -> None:
        await self._appender.close()

    def pending_write(self) -> asyncio.Future | None:
        return self._appender.idle()

    # Replay (load and live offset records) ----------------------------------------------------
    def replay(self, key: bytes, value: bytes | None) -> None:
        """Apply one ``__consumer_offsets`` record (value None: a tombstone) to memory."""
        self.replay_all(((key, value),))

    def replay_all(self, records: Iterable[RawRecord]) -> int:
        """Apply records in log order, as on load; returns how many.

        An offset record whose key prefix (version, group, topic) was seen before only stores
        its value bytes: loading a large log decodes each group and topic name once."""
        cached = self._offset_parts
        count = 0
        for key, value in records:
            count += 1
            if value is not None:
                parts = cached.get(key[:-4])
                if parts is not None:
                    parts[int.from_bytes(key[-4:], "big", signed=True)] = value
                    continue
            self._replay_decoded(key, value)
        return count

    def _replay_decoded(self, key_bytes: bytes, value: bytes | None) -> None:
        try:
            key = decode_key(key_bytes)
            if isinstance(key, GroupMetadataKey):
                self._replay_group(key.group, None if value is None else decode_value(key, value))
                return
        except RecordDecodeError as exc:
            log.warning("skipping undecodable __consumer_offsets-%d record: %s", self.partition, exc)
            return
        if not isinstance(key, OffsetCommitKey):
            log.warning("skipping __consumer_offsets-%d record of unknown type %d",
                        self.partition, key.version)
            return
        if value is None:
            topics = self.offsets.get(key.group)
            parts = topics.get(key.topic) if topics is not None else None
            if parts is not None and parts.pop(key.partition, None) is not None and not parts:
                del topics[key.topic]  # type: ignore[union-attr]
                if not topics:
                    del self.offsets[key.group]
                self._offset_parts.clear()
            return
        if key.group not in self.groups:
            self._create_group(key.group)
        parts = self.offsets.setdefault(key.group, {}).setdefault(key.topic, {})
        parts[key.partition] = value
        self._offset_parts[key_bytes[:-4]] = parts

    def _replay_group(self, group_id: str, value: GroupMetadataValue | None) -> None:
        if value is None:
            group = self.groups.pop(group_id, None)
            if group is not None:
                self._cancel_group_timers(group)
                group.transition(S.DEAD, self.clock.now_ms())
                self._offset_parts.clear()
            return
        self.groups[group_id] = self._group_from_record(group_id, value)

    def _stored_offset(self, key: bytes, absent: set[bytes] | None = None) -> bytes | None:
        """The value bytes held for an offset key, None if none. ``absent`` remembers key
        prefixes (group and topic) found to hold nothing, across calls."""
        prefix = key[:-4]
        parts = self._offset_parts.get(prefix)
        if parts is None:
            if absent is not None and prefix in absent:
                return None
            k = decode_key(key)
            assert isinstance(k, OffsetCommitKey)
            parts = self.offsets.get(k.group, {}).get(k.topic) if k.group in self.groups else None
            if parts is None:
                if absent is not None:
                    absent.add(prefix)
                return None
            self._offset_parts[prefix] = parts
        return parts.get(int.from_bytes(key[-4:], "big", signed=True))

    def _offset_value(self, group_id: str, topic: str, partition: int,
                      data: bytes) -> OffsetCommitValue | None:
        try:
            return decode_offset_value(data)
        except RecordDecodeError as exc:
            log.warning("ignoring undecodable offset of group %s for %s-%d: %s",
                        group_id, topic, partition, exc)
            return None

    def _group_from_record(self, group_id: str, value: GroupMetadataValue) -> ClassicGroup:
        group = ClassicGroup(
            group_id, self.clock.now_ms(),
            state=S.STABLE if value.members else S.EMPTY,
            generation=value.generation,
            protocol_type=value.protocol_type or None,
            protocol_name=value.protocol,
        )
        group.state_timestamp = value.current_state_timestamp if value.current_state_timestamp != -1 else None
        for m in value.members:
            member = Member(
                m.member_id, m.group_instance_id, m.client_id, m.client_host,
                m.session_timeout if m.rebalance_timeout == -1 else m.rebalance_timeout,
                m.session_timeout, value.protocol_type,
                ((value.protocol or "", m.subscription),), m.assignment,
            )
            group.add(member)
        group.protocol_type = value.protocol_type or None
        group.leader_id = value.leader
        group.subscribed_topics = group.compute_subscribed_topics()
        return group

    # Records ---------------------------------------------------------------------------------
    def _append(self, records: Sequence[Record], replay: bool) -> asyncio.Future:
        raw = [(encode_key(k), None if v is None else encode_value(v)) for k, v in records]
        return self._write(raw, replay)

    def _write(self, raw: list[RawRecord], replay: bool) -> asyncio.Future:
        """Queue records for the log; with ``replay`` apply them to memory now (offset records
        and tombstones only) and undo them if the write fails."""
        if not replay:
            return self._appender.append(raw)
        absent: set[bytes] = set()
        undo = [(key, self._stored_offset(key, absent), value) for key, value in raw
                if key[:2] in _OFFSET_KEY_VERSIONS]
        deleted = [(group, group.state, group.state_timestamp) for group in (
            self.groups.get(decode_key(key).group) for key, value in raw
            if value is None and key[:2] == _GROUP_KEY_VERSION) if group is not None]
        self.replay_all(raw)
        fut = self._appender.append(raw)
        if undo or deleted:
            def revert(f: asyncio.Future) -> None:
                if f.cancelled() or f.exception() is None:
                    return
                for group, state, since in deleted:  # groups first: offsets need their group
                    if group.group_id not in self.groups:
                        group.state, group.state_timestamp = state, since
                        self.groups[group.group_id] = group
                for key, before, written in reversed(undo):
                    if self._stored_offset(key) is written:
                        self.replay(key, before)
            fut.add_done_callback(revert)
        return fut

    def _group_record(self, group: ClassicGroup, assignment: dict[str, bytes]) -> Record:
        members = tuple(
            MemberMetadata(
                m.member_id, m.group_instance_id, m.client_id, m.client_host,
                m.rebalance_timeout_ms, m.session_timeout_ms,
                m.metadata(group.protocol_name) if group.protocol_name is not None else b"",
                assignment.get(m.member_id, b""),
            )
            for m in group.members.values()
        )
        ts = group.state_timestamp if group.state_timestamp is not None else -1
        value = GroupMetadataValue(group.protocol_type or "", group.generation, group.protocol_name,
                                   group.leader_id, ts, members)
        return GroupMetadataKey(group.group_id), value

    def _empty_group_record(self, group: ClassicGroup) -> Record:
        ts = group.state_timestamp if group.state_timestamp is not None else -1
        return GroupMetadataKey(group.group_id), GroupMetadataValue("", 0, None, None, ts, ())

    # Groups ----------------------------------------------------------------------------------
    def _create_group(self, group_id: str) -> ClassicGroup:
        group = ClassicGroup(group_id, self.clock.now_ms())
        self.groups[group_id] = group
        return group

    def _cancel_group_timers(self, group: ClassicGroup) -> None:
        self.clock.cancel(f"join-{group.group_id}")
        self.clock.cancel(f"sync-{group.group_id}")
        for member_id in list(group.members) + list(group.pending_join):
            self.clock.cancel(f"heartbeat-{group.group_id}-{member_id}")

    # JoinGroup -------------------------------------------------------------------------------
    def join_group(self, r: JoinRequest) -> asyncio.Future:
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        group = self.groups.get(r.group_id)
        is_unknown = r.member_id == ""
        if group is None:
            if not is_unknown:
                fut.set_result(JoinResult(E.UNKNOWN_MEMBER_ID, r.member_id))
                return fut
            group = self._create_group(r.group_id)
            new_group = True
        else:
            new_group = False
        if not self._accept_joining_member(group, r.member_id):
            group.remove(r.member_id)
            fut.set_result(JoinResult(E.GROUP_MAX_SIZE_REACHED, ""))
        elif is_unknown:
            self._join_new_member(group, r, fut)
        else:
            self._join_existing_member(group, r, fut)
        if new_group:
            write = self._append([self._empty_group_record(group)], replay=False)

            def on_written(f: asyncio.Future) -> None:
                if f.cancelled() or f.exception() is None:
                    return
                error = append_error(f.exception())
                if not fut.done():
                    fut.set_result(JoinResult(error, ""))
                self._drop_unwritten_group(group, error)
            write.add_done_callback(on_written)
        return fut

    def _drop_unwritten_group(self, group: ClassicGroup, error: int) -> None:
        """The write that created ``group`` failed: as Kafka reverts its snapshot, the group
        goes away (parked joins get the write's error) unless it has formed since."""
        if self.groups.get(group.group_id) is not group or group.generation > 0 \
                or group.is_in(S.DEAD) or self.offsets.get(group.group_id):
            return
        self._cancel_group_timers(group)
        for member in list(group.members.values()):
            group.complete_join(member, JoinResult(error, ""))
        del self.groups[group.group_id]
        group.transition(S.DEAD, self.clock.now_ms())

    def _accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        max_size = self.config.max_group_size
        if group.is_in(S.EMPTY, S.DEAD):
            return True
        if group.is_in(S.PREPARING_REBALANCE):
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
        if group.is_in(S.DEAD):
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
        if group.is_in(S.PREPARING_REBALANCE):
            self._update_member_then_rebalance(group, member, r, fut)
        elif group.is_in(S.COMPLETING_REBALANCE):
            if member.protocols == r.protocols:
                fut.set_result(self._current_join_result(
                    group, mid, group.leader_members() if group.is_leader(mid) else []))
            else:
                self._update_member_then_rebalance(group, member, r, fut)
        elif group.is_in(S.STABLE):
            if group.is_leader(mid) or member.protocols != r.protocols:
                self._update_member_then_rebalance(group, member, r, fut)
            else:
                fut.set_result(self._current_join_result(group, mid, []))
        else:
            fut.set_result(JoinResult(E.UNKNOWN_MEMBER_ID, mid))

    def _current_join_result(self, group: ClassicGroup, member_id: str,
                             members: list) -> JoinResult:
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
        self.events.emit(group.group_id, "member-joined", member_id=member_id, client_id=r.client_id, client_host=r.client_host, instance_id=r.group_instance_id)
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
        self.clock.cancel(f"heartbeat-{group.group_id}-{old_id}")
        self.events.emit(group.group_id, "static-member-replaced", member_id=new_id, previous_member_id=old_id, instance_id=instance_id)
        self._reschedule_heartbeat(group, new)
        old_rebalance, old_session, old_protocols = (
            new.rebalance_timeout_ms, new.session_timeout_ms, new.protocols)
        group.update_member(new, r.protocols, r.rebalance_timeout_ms, r.session_timeout_ms, fut)
        if group.is_in(S.STABLE):
            if (group.protocol_name or "") != group.select_protocol():
                self._maybe_prepare_rebalance_or_complete_join(group)
                return
            assignment = {m.member_id: m.assignment for m in group.members.values()}
            write = self._append([self._group_record(group, assignment)], replay=False)
            version = r.version

            def on_written(f: asyncio.Future) -> None:
                exc = None if f.cancelled() else f.exception()
                if exc is not None or f.cancelled():
                    group.update_member(new, old_protocols, old_rebalance, old_session, None)
                    if new_id in group.members:
                        old = group.replace_static_member(instance_id, new_id, old_id)
                        self._reschedule_heartbeat(group, old)
                    if not fut.done():
                        fut.set_result(JoinResult(
                            append_error(exc) if exc else E.COORDINATOR_NOT_AVAILABLE, "",
                            group.generation, group.protocol_type, group.protocol_name,
                            current_leader or ""))
                elif version >= 9:
                    is_leader = group.is_leader(new_id)
                    group.complete_join(new, JoinResult(
                        E.NONE, new_id, group.generation, group.protocol_type,
                        group.protocol_name, group.leader_id or "",
                        group.leader_members() if is_leader else [], skip_assignment=is_leader))
                else:
                    group.complete_join(new, JoinResult(
                        E.NONE, new_id, group.generation, group.protocol_type,
                        group.protocol_name, current_leader or ""))
            write.add_done_callback(on_written)
        elif group.is_in(S.COMPLETING_REBALANCE):
            self._prepare_rebalance(group)
        elif group.is_in(S.PREPARING_REBALANCE):
            self._maybe_complete_join_phase(group)

    # Rebalance machinery ---------------------------------------------------------------------
    def _maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group)
        else:
            self._maybe_complete_join_phase(group)

    def _prepare_rebalance(self, group: ClassicGroup) -> None:
        if group.is_in(S.COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_with_error(group, E.REBALANCE_IN_PROGRESS)
        self.clock.cancel(f"sync-{group.group_id}")
        initial = group.is_in(S.EMPTY)
        if initial:
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            gid = group.group_id
            self.clock.schedule(f"join-{gid}", delay,
                                lambda: self._try_complete_initial(gid, delay, remaining))
        group.transition(S.PREPARING_REBALANCE, self.clock.now_ms())
        self.events.emit(group.group_id, "rebalance-started", generation=group.generation, members=len(group.members))
        log.debug("preparing to rebalance group %s (generation %d)", group.group_id, group.generation)
        if not initial:
            self._maybe_complete_join_else_schedule(group)

    def _try_complete_initial(self, group_id: str, delay: int, remaining: int) -> None:
        group = self.groups.get(group_id)
        if group is None:
            return
        if group.new_member_added and remaining != 0:
            group.new_member_added = False
            new_delay = min(self.config.initial_rebalance_delay_ms, remaining)
            new_remaining = max(remaining - delay, 0)
            self.clock.schedule(f"join-{group_id}", new_delay,
                                lambda: self._try_complete_initial(group_id, new_delay, new_remaining))
        else:
            self._complete_join(group)

    def _maybe_complete_join_else_schedule(self, group: ClassicGroup) -> None:
        if group.has_all_members_joined():
            self._complete_join(group)
        else:
            self._schedule_join_timeout(group)

    def _schedule_join_timeout(self, group: ClassicGroup) -> None:
        gid = group.group_id
        self.clock.schedule(f"join-{gid}", group.rebalance_timeout_ms(),
                            lambda: self._complete_join_by_id(gid))

    def _complete_join_by_id(self, group_id: str) -> None:
        group = self.groups.get(group_id)
        if group is not None:
            self._complete_join(group)

    def _maybe_complete_join_phase(self, group: ClassicGroup) -> None:
        if (group.is_in(S.PREPARING_REBALANCE) and group.has_all_members_joined()
                and group.previous_state is not S.EMPTY):
            self._complete_join(group)

    def _complete_join(self, group: ClassicGroup) -> None:
        gid = group.group_id
        self.clock.cancel(f"join-{gid}")
        if not group.is_in(S.PREPARING_REBALANCE):
            return
        for member in [m for m in group.not_yet_rejoined() if not m.is_static]:
            group.remove(member.member_id)
            self.clock.cancel(f"heartbeat-{gid}-{member.member_id}")
        if not group.maybe_elect_new_joined_leader() and group.members:
            log.warning("group %s could not complete rebalance because no members rejoined", gid)
            self._schedule_join_timeout(group)
            return
        group.init_next_generation(self.clock.now_ms())
        self.events.emit(gid, "generation", generation=group.generation, members=len(group.members), protocol=group.protocol_name, leader=group.leader_id)
        if group.is_in(S.EMPTY):
            log.info("group %s with generation %d is now empty", gid, group.generation)
            self._append([self._group_record(group, {})], replay=False)
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
        self.clock.schedule(f"sync-{gid}", group.rebalance_timeout_ms(),
                            lambda: self._expire_pending_sync(gid, generation))

    def _expire_pending_sync(self, group_id: str, generation: int) -> None:
        group = self.groups.get(group_id)
        if group is None or group.generation != generation:
            return
        if group.is_in(S.COMPLETING_REBALANCE, S.STABLE) and group.pending_sync:
            for member_id in list(group.pending_sync):
                group.remove(member_id)
                self.clock.cancel(f"heartbeat-{group_id}-{member_id}")
            log.info("removed members of group %s that did not sync in time", group_id)
            self.events.emit(group_id, "sync-expired", generation=generation)
            self._prepare_rebalance(group)

    def _reschedule_heartbeat(self, group: ClassicGroup, member: Member,
                              delay_ms: int | None = None) -> None:
        self._reschedule_heartbeat_id(group.group_id, member.member_id,
                                      member.session_timeout_ms if delay_ms is None else delay_ms)

    def _reschedule_heartbeat_id(self, group_id: str, member_id: str, delay_ms: int) -> None:
        self.clock.schedule(f"heartbeat-{group_id}-{member_id}", delay_ms,
                            lambda: self._expire_heartbeat(group_id, member_id))

    def _expire_heartbeat(self, group_id: str, member_id: str) -> None:
        group = self.groups.get(group_id)
        if group is None or group.is_in(S.DEAD):
            return
        if group.is_pending(member_id):
            log.info("pending member %s of group %s expired", member_id, group_id)
            group.remove(member_id)
            if group.is_in(S.PREPARING_REBALANCE) and group.has_all_members_joined():
                self._complete_join(group)
            return
        member = group.members.get(member_id)
        if member is None or member.has_satisfied_heartbeat():
            return
        log.info("member %s of group %s failed its session timeout; removing it", member_id, group_id)
        self.events.emit(group_id, "session-expired", member_id=member_id)
        self._remove_member_and_update(group, member)

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
    def sync_group(self, r: SyncRequest) -> asyncio.Future:
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        group = self.groups.get(r.group_id)
        if group is None:
            fut.set_result(SyncResult(E.UNKNOWN_MEMBER_ID))
            return fut
        error = self._validate_sync(group, r)
        if error is not None:
            fut.set_result(SyncResult(error))
        elif group.is_in(S.EMPTY):
            fut.set_result(SyncResult(E.UNKNOWN_MEMBER_ID))
        elif group.is_in(S.PREPARING_REBALANCE):
            fut.set_result(SyncResult(E.REBALANCE_IN_PROGRESS))
        elif group.is_in(S.COMPLETING_REBALANCE):
            group.members[r.member_id].sync_future = fut
            self._remove_pending_sync(group, r.member_id)
            if group.is_leader(r.member_id):
                self._store_assignment(group, r)
        elif group.is_in(S.STABLE):
            self._remove_pending_sync(group, r.member_id)
            fut.set_result(SyncResult(E.NONE, group.members[r.member_id].assignment,
                                      group.protocol_type, group.protocol_name))
        return fut

    def _validate_sync(self, group: ClassicGroup, r: SyncRequest) -> int | None:
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
        group.pending_sync.discard(member_id)
        if group.is_in(S.DEAD, S.EMPTY, S.PREPARING_REBALANCE) or not group.pending_sync:
            self.clock.cancel(f"sync-{group.group_id}")

    def _store_assignment(self, group: ClassicGroup, r: SyncRequest) -> None:
        assignment = dict(r.assignments)
        for member_id in group.members:
            assignment.setdefault(member_id, b"")
        generation = r.generation
        write = self._append([self._group_record(group, assignment)], replay=False)

        def on_written(f: asyncio.Future) -> None:
            if self.groups.get(group.group_id) is not group:
                return
            if not (group.is_in(S.COMPLETING_REBALANCE) and group.generation == generation):
                return
            exc = None if f.cancelled() else f.exception()
            if exc is not None or f.cancelled():
                self._reset_and_propagate_assignment_with_error(
                    group, append_error(exc) if exc else E.COORDINATOR_NOT_AVAILABLE)
                self._maybe_prepare_rebalance_or_complete_join(group)
                return
            for member in group.members.values():
                member.assignment = assignment.get(member.member_id, b"")
            self._propagate_assignment(group, E.NONE)
            group.transition(S.STABLE, self.clock.now_ms())
            self.events.emit(group.group_id, "rebalance-completed", generation=generation, members=len(group.members))
        write.add_done_callback(on_written)

    # Heartbeat / LeaveGroup ------------------------------------------------------------------
    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None,
                  generation: int) -> int:
        group = self.groups.get(group_id)
        if group is None:
            return E.UNKNOWN_MEMBER_ID
        if group.is_in(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        try:
            group.validate_member(member_id, instance_id)
        except CoordinatorError as exc:
            return exc.code
        if generation != group.generation:
            return E.ILLEGAL_GENERATION
        if group.is_in(S.EMPTY):
            return E.UNKNOWN_MEMBER_ID
        self._reschedule_heartbeat(group, group.members[member_id])
        return E.REBALANCE_IN_PROGRESS if group.is_in(S.PREPARING_REBALANCE) else E.NONE

    def leave_group(self, group_id: str, members: list[tuple[str, str | None]]
                    ) -> tuple[int, list[tuple[str, str | None, int]]]:
        group = self.groups.get(group_id)
        if group is None:
            return E.NONE, [(m, i, E.UNKNOWN_MEMBER_ID) for m, i in members]
        if group.is_in(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE, []
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
                self.clock.cancel(f"heartbeat-{group_id}-{member_id}")
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
        return E.NONE, results

    def _remove_current_member(self, group: ClassicGroup, member_id: str) -> None:
        member = group.members[member_id]
        self.clock.cancel(f"heartbeat-{group.group_id}-{member_id}")
        log.info("member %s leaves group %s", member_id, group.group_id)
        self.events.emit(group.group_id, "member-left", member_id=member_id)
        group.complete_join(member, JoinResult(E.UNKNOWN_MEMBER_ID, ""))
        group.remove(member_id)

    # Offsets ---------------------------------------------------------------------------------
    def commit_offsets(self, group_id: str, generation: int, member_id: str,
                       instance_id: str | None, retention_ms: int,
                       partitions: list[CommitPartition], version: int
                       ) -> tuple[list[int], asyncio.Future | None]:
        """Per-partition errors, and the write to await before answering (None: nothing written)."""
        group = self.groups.get(group_id)
        try:
            created = group is None
            if group is None:
                if generation >= 0:
                    raise CoordinatorError(E.GROUP_ID_NOT_FOUND if version >= 9 else E.ILLEGAL_GENERATION)
                log.info("creating simple group %s via manual offset commit", group_id)
                group = self._create_group(group_id)
            self._validate_offset_commit(group, member_id, instance_id, generation)
        except CoordinatorError as exc:
            return [exc.code] * len(partitions), None
        if group.is_in(S.STABLE, S.PREPARING_REBALANCE):
            member = group.members.get(member_id)
            if member is not None:
                self._reschedule_heartbeat(group, member)
        now = self.clock.now_ms()
        expire = None if retention_ms == -1 else now + retention_ms
        limit = self.config.offset_metadata_max_bytes
        errors: list[int] = []
        records: list[RawRecord] = []
        for p in partitions:
            if p.metadata is not None and java_length(p.metadata) > limit:
                errors.append(E.OFFSET_METADATA_TOO_LARGE)
                continue
            errors.append(E.NONE)
            records.append((encode_offset_key(group_id, p.topic, p.partition),
                            encode_offset_value(p.offset, p.leader_epoch, p.metadata or "", now,
                                                expire)))
        write = self._write(records, replay=True) if records else None
        self.events.committed(group_id, len(records))
        if created and write is not None:
            def on_written(f: asyncio.Future, group: ClassicGroup = group) -> None:
                if not f.cancelled() and f.exception() is not None:
                    self._drop_unwritten_group(group, append_error(f.exception()))
            write.add_done_callback(on_written)
        return errors, write

    def _validate_offset_commit(self, group: ClassicGroup, member_id: str,
                                instance_id: str | None, generation: int) -> None:
        if group.is_in(S.DEAD):
            raise CoordinatorError(E.COORDINATOR_NOT_AVAILABLE)
        if generation < 0 and group.is_in(S.EMPTY):
            return
        if generation >= 0 or member_id != "" or instance_id is not None:
            group.validate_member(member_id, instance_id)
            if generation != group.generation:
                raise CoordinatorError(E.ILLEGAL_GENERATION)
        elif not group.is_in(S.EMPTY):
            raise CoordinatorError(E.UNKNOWN_MEMBER_ID)
        if group.is_in(S.COMPLETING_REBALANCE):
            raise CoordinatorError(E.REBALANCE_IN_PROGRESS)

    def fetch_offsets(self, group_id: str, topics: list[tuple[str, list[int]]] | None
                      ) -> list[tuple[str, list[tuple[int, int, int, str, int]]]]:
        """[(topic, [(partition, offset, leader_epoch, metadata, error)])]; all offsets if topics is None."""
        stored = self.offsets.get(group_id) if group_id in self.groups else None
        if topics is None:
            if not stored:
                return []
            topics = [(topic, sorted(parts)) for topic, parts in stored.items()]
            missing = None
        else:
            missing = (-1, -1, "", E.NONE)
        out = []
        for topic, partitions in topics:
            parts = stored.get(topic) if stored else None
            rows = []
            for p in partitions:
                data = parts.get(p) if parts else None
                v = None if data is None else self._offset_value(group_id, topic, p, data)
                if v is not None:
                    rows.append((p, v.offset, v.leader_epoch, v.metadata, E.NONE))
                elif missing is not None:
                    rows.append((p, *missing))
            out.append((topic, rows))
        return out

    def delete_offsets(self, group_id: str, topics: list[tuple[str, list[int]]]
                       ) -> tuple[int, list[tuple[str, list[tuple[int, int]]]], asyncio.Future | None]:
        group = self.groups.get(group_id)
        if group is None or group.is_in(S.DEAD):
            return E.GROUP_ID_NOT_FOUND, [], None
        if group.is_in(S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE) and \
                not group.uses_consumer_protocol():
            return E.NON_EMPTY_GROUP, [], None
        stored = self.offsets.get(group_id, {})
        records: list[RawRecord] = []
        out = []
        for topic, partitions in topics:
            if group.is_subscribed_to(topic):
                out.append((topic, [(p, E.GROUP_SUBSCRIBED_TO_TOPIC) for p in partitions]))
                continue
            parts = stored.get(topic, {})
            for p in partitions:
                if p in parts:
                    records.append((encode_offset_key(group_id, topic, p), None))
            out.append((topic, [(p, E.NONE) for p in partitions]))
        write = self._write(records, replay=True) if records else None
        return E.NONE, out, write

    def delete_groups(self, group_ids: list[str]) -> tuple[list[tuple[str, int]], asyncio.Future | None]:
        results = []
        records: list[RawRecord] = []
        for gid in group_ids:
            group = self.groups.get(gid)
            if group is None or group.is_in(S.DEAD):
                results.append((gid, E.GROUP_ID_NOT_FOUND))
                continue
            if not group.is_in(S.EMPTY):
                results.append((gid, E.NON_EMPTY_GROUP))
                continue
            for topic, parts in self.offsets.get(gid, {}).items():
                for p in parts:
                    records.append((encode_offset_key(gid, topic, p), None))
            records.append((encode_key(GroupMetadataKey(gid)), None))
            results.append((gid, E.NONE))
        write = self._write(records, replay=True) if records else None
        return results, write

    # Describe / List -------------------------------------------------------------------------
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

    # Offsets retention -----------------------------------------------------------------------
    @property
    def _retention_key(self) -> str:
        return f"offsets-expiration-{self.partition}"

    def _schedule_retention_check(self) -> None:
        self.clock.schedule(self._retention_key, self.config.retention_check_interval_ms,
                            self.cleanup_group_metadata)

    def cleanup_group_metadata(self) -> None:
        if not self.active:
            return
        records: list[RawRecord] = []
        for gid in list(self.groups):
            if self._cleanup_expired_offsets(gid, records):
                group = self.groups[gid]
                if group.is_in(S.EMPTY):
                    records.append((encode_key(GroupMetadataKey(gid)), None))
        if records:
            log.info("offsets retention: writing %d tombstones for __consumer_offsets-%d",
                     len(records), self.partition)
            self._write(records, replay=True)
        self._schedule_retention_check()

    def _cleanup_expired_offsets(self, group_id: str, records: list[RawRecord]) -> bool:
        stored = self.offsets.get(group_id)
        if not stored:
            return True
        group = self.groups[group_id]
        base = self._expiration_base(group)
        if base is None:
            return False
        now = self.clock.now_ms()
        retention = self.config.offsets_retention_ms
        all_expired = True
        for topic, parts in stored.items():
            if group.is_subscribed_to(topic):
                all_expired = False
                continue
            for p, data in parts.items():
                value = self._offset_value(group_id, topic, p, data)
                if value is None:
                    expired = True
                elif value.expire_timestamp is not None:
                    expired = now >= value.expire_timestamp
                else:
                    expired = now - base(value) >= retention
                if expired:
                    records.append((encode_offset_key(group_id, topic, p), None))
                else:
                    all_expired = False
        return all_expired

    @staticmethod
    def _expiration_base(group: ClassicGroup) -> Callable[[OffsetCommitValue], int] | None:
        if group.protocol_type:
            if group.is_in(S.EMPTY):
                ts = group.state_timestamp
                return lambda v: ts if ts is not None else v.commit_timestamp
            if group.uses_consumer_protocol() and group.subscribed_topics is not None and \
                    group.is_in(S.STABLE):
                return lambda v: v.commit_timestamp
            return None
        return lambda v: v.commit_timestamp


def _inconsistent(requested: str | None, current: str | None) -> bool:
    return requested is not None and current is not None and requested != current
