"""Classic group and member state (Kafka's ClassicGroup / ClassicGroupMember), no I/O."""

from __future__ import annotations

import asyncio
import enum
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafkette.protocol.group_records import OffsetCommitValue

from ...runtime.error_codes import (
    COORDINATOR_NOT_AVAILABLE,
    FENCED_INSTANCE_ID,
    ILLEGAL_GENERATION,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
    CoordinatorError,
)

CONSUMER_PROTOCOL = "consumer"


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


# For hot paths (heartbeat, offset commit): a module global is read in ~10 ns, an enum member
# looked up on its class ~70.
STATE_EMPTY, STATE_PREPARING_REBALANCE = GroupState.EMPTY, GroupState.PREPARING_REBALANCE
STATE_COMPLETING_REBALANCE, STATE_DEAD = GroupState.COMPLETING_REBALANCE, GroupState.DEAD

_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}

Protocols = tuple[tuple[str, bytes], ...]


@dataclass(slots=True)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    assignment: bytes = b""
    is_new: bool = False
    join_future: asyncio.Future | None = None
    sync_future: asyncio.Future | None = None
    # Derived from the fields above, kept from one generation to the next while they stay the
    # same (a rejoin with the same protocols): the topics of a subscription, (metadata, topics),
    # and the member's GroupMetadata record bytes but for its assignment, (protocol, bytes).
    # ``update_member`` drops them when the protocols or timeouts change.
    topics_cache: tuple[bytes, frozenset[str]] | None = field(default=None, repr=False,
                                                               compare=False)
    record_cache: tuple[str | None, bytes] | None = field(default=None, repr=False,
                                                          compare=False)

    @property
    def awaiting_join(self) -> bool:
        return self.join_future is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_future is not None

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def metadata(self, protocol: str) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        raise KeyError(protocol)

    def subscribed_topics(self, protocol: str) -> frozenset[str]:
        """Topics of the member's consumer-protocol subscription for ``protocol`` (parsed once
        per metadata); KeyError or ConsumerProtocolError as ``metadata``/the parser raise."""
        data = self.metadata(protocol)
        cached = self.topics_cache
        if cached is not None and cached[0] == data:
            return cached[1]
        # the consumer-protocol codecs load with the first subscription parsed
        from kafkette.protocol.consumer_protocol import subscription_topics

        topics = frozenset(subscription_topics(data))
        self.topics_cache = (data, topics)
        return topics

    def has_satisfied_heartbeat(self) -> bool:
        # A new member may be expired while awaiting join; an established one awaiting
        # join/sync is alive (the client cannot heartbeat while its request is parked).
        if self.is_new:
            return False
        return self.awaiting_join or self.awaiting_sync

    def vote(self, candidates: set[str]) -> str:
        return next(name for name, _ in self.protocols if name in candidates)


def new_member_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4()}"


@dataclass(slots=True)
class ClassicGroup:
    group_id: str
    now_ms: int
    state: GroupState = GroupState.EMPTY
    previous_state: GroupState | None = None
    state_timestamp: int | None = None
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    pending_join: set[str] = field(default_factory=set)
    pending_sync: set[str] = field(default_factory=set)
    supported: Counter = field(default_factory=Counter)
    awaiting_join_count: int = 0
    new_member_added: bool = False
    subscribed_topics: frozenset[str] | None = None

    def __post_init__(self) -> None:
        if self.state_timestamp is None:
            self.state_timestamp = self.now_ms

    # State -----------------------------------------------------------------------------------
    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    def transition(self, target: GroupState, now_ms: int) -> None:
        if self.state not in _VALID_PREVIOUS[target]:
            raise RuntimeError(f"group {self.group_id}: illegal transition {self.state} -> {target}")
        self.previous_state = self.state
        self.state = target
        self.state_timestamp = now_ms

    def can_rebalance(self) -> bool:
        return self.state in _VALID_PREVIOUS[GroupState.PREPARING_REBALANCE]

    @property
    def is_empty_state(self) -> bool:
        return self.state is GroupState.EMPTY

    # Membership ------------------------------------------------------------------------------
    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def is_pending(self, member_id: str) -> bool:
        return member_id in self.pending_join

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def add(self, member: Member, future: asyncio.Future | None = None) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise RuntimeError(f"static member {member.group_instance_id} already present")
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        self.supported.update(_names(member.protocols))
        member.join_future = future
        if future is not None:
            self.awaiting_join_count += 1
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.pending_join.discard(member.member_id)

    def remove(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self.supported.subtract(_names(member.protocols))
            if member.awaiting_join:
                self.awaiting_join_count -= 1
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_join.discard(member_id)
        self.pending_sync.discard(member_id)

    def update_member(self, member: Member, protocols: Protocols, rebalance_timeout_ms: int,
                      session_timeout_ms: int, future: asyncio.Future | None) -> None:
        if protocols != member.protocols:  # a rejoin usually sends the same ones again
            self.supported.subtract(_names(member.protocols))
            member.protocols = protocols
            self.supported.update(_names(protocols))
            member.topics_cache = member.record_cache = None
        if (rebalance_timeout_ms != member.rebalance_timeout_ms
                or session_timeout_ms != member.session_timeout_ms):
            member.rebalance_timeout_ms = rebalance_timeout_ms
            member.session_timeout_ms = session_timeout_ms
            member.record_cache = None
        if future is not None and not member.awaiting_join:
            self.awaiting_join_count += 1
        elif future is None and member.awaiting_join:
            self.awaiting_join_count -= 1
        member.join_future = future

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str,
                              join_fence: Any = None, sync_fence: Any = None) -> Member:
        old = self.members.pop(old_id)
        self.complete_join(old, join_fence)
        self.complete_sync(old, sync_fence)
        new = Member(new_id, old.group_instance_id, old.client_id, old.client_host,
                     old.rebalance_timeout_ms, old.session_timeout_ms, old.protocol_type,
                     old.protocols, old.assignment)
        self.members[new_id] = new
        if self.leader_id == old_id:
            self.leader_id = new_id
        # Kafka leaves pending_sync alone: an old id still pending there is removed (and the
        # group rebalanced) when the pending-sync timer fires.
        self.static_members[instance_id] = new_id
        return new

    def validate_member(self, member_id: str, instance_id: str | None) -> None:
        if instance_id is not None:
            existing = self.static_members.get(instance_id)
            if existing is None:
                raise CoordinatorError(UNKNOWN_MEMBER_ID)
            if existing != member_id:
                raise CoordinatorError(FENCED_INSTANCE_ID)
        elif member_id not in self.members:
            raise CoordinatorError(UNKNOWN_MEMBER_ID)

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.awaiting_join_count and not self.pending_join

    def not_yet_rejoined(self) -> list[Member]:
        return [m for m in self.members.values() if not m.awaiting_join]

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def maybe_elect_new_joined_leader(self) -> bool:
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.awaiting_join:
            return True
        for member in self.members.values():
            if member.awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    # Protocols -------------------------------------------------------------------------------
    def supports_protocols(self, protocol_type: str, protocols: Protocols) -> bool:
        if self.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(protocols)
        if protocol_type != self.protocol_type:
            return False
        n = len(self.members)
        supported = self.supported
        return any(supported[name] == n for name, _ in protocols)

    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {name for name, count in self.supported.items() if count == n and n > 0}

    def select_protocol(self) -> str:
        candidates = self.candidate_protocols()
        if not candidates:
            raise RuntimeError(f"group {self.group_id}: no protocol supported by all members")
        votes = Counter(m.vote(candidates) for m in self.members.values())
        return votes.most_common(1)[0][0]

    def init_next_generation(self, now_ms: int) -> None:
        self.generation += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition(GroupState.EMPTY, now_ms)
        self.pending_sync.clear()

    def uses_consumer_protocol(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL

    def compute_subscribed_topics(self) -> frozenset[str] | None:
        if self.protocol_type != CONSUMER_PROTOCOL:
            return None
        if not self.members:
            return frozenset()
        if self.protocol_name is None:
            return None
        from kafkette.protocol.consumer_protocol import ConsumerProtocolError

        protocol = self.protocol_name
        topics: set[str] = set()
        try:
            for member in self.members.values():
                topics.update(member.subscribed_topics(protocol))
        except (ConsumerProtocolError, KeyError):
            return None
        return frozenset(topics)

    def is_subscribed_to(self, topic: str) -> bool:
        if self.subscribed_topics is None:
            return self.uses_consumer_protocol()
        return topic in self.subscribed_topics

    # Offsets ---------------------------------------------------------------------------------
    def validate_offset_commit(self, member_id: str, instance_id: str | None, generation: int,
                               is_transactional: bool, api_version: int) -> None:
        """Kafka's ClassicGroup.validateOffsetCommit: CoordinatorError if refused (the API
        version and whether the commit is transactional do not matter to a classic group)."""
        state = self.state  # compared inline, not with is_in: every commit comes here
        if state is STATE_DEAD:
            raise CoordinatorError(COORDINATOR_NOT_AVAILABLE)
        if generation < 0 and state is STATE_EMPTY:
            return
        if generation >= 0 or member_id != "" or instance_id is not None:
            self.validate_member(member_id, instance_id)
            if generation != self.generation:
                raise CoordinatorError(ILLEGAL_GENERATION)
        elif state is not STATE_EMPTY:
            raise CoordinatorError(UNKNOWN_MEMBER_ID)
        if state is STATE_COMPLETING_REBALANCE:
            raise CoordinatorError(REBALANCE_IN_PROGRESS)

    def offset_expiration_base(self) -> Callable[[OffsetCommitValue], int] | None:
        """From when an offset's retention counts, None while offsets cannot expire."""
        if self.protocol_type:
            if self.is_in(GroupState.EMPTY):
                ts = self.state_timestamp
                return lambda v: ts if ts is not None else v.commit_timestamp
            if self.uses_consumer_protocol() and self.subscribed_topics is not None and \
                    self.is_in(GroupState.STABLE):
                return lambda v: v.commit_timestamp
            return None
        return lambda v: v.commit_timestamp

    # Parked responses ------------------------------------------------------------------------
    def complete_join(self, member: Member, response: Any) -> bool:
        fut = member.join_future
        if fut is None:
            return False
        member.join_future = None
        self.awaiting_join_count -= 1
        if not fut.done():
            fut.set_result(response)
        return True

    def complete_sync(self, member: Member, response: Any) -> bool:
        fut = member.sync_future
        if fut is None:
            return False
        member.sync_future = None
        if not fut.done():
            fut.set_result(response)
        return True

    def leader_members(self) -> list[tuple[str, str | None, bytes]]:
        """What the leader's JoinGroup response lists: id, instance id, selected-protocol metadata."""
        assert self.protocol_name is not None
        return [(m.member_id, m.group_instance_id, m.metadata(self.protocol_name))
                for m in self.members.values()]


def _names(protocols: Protocols) -> set[str]:
    """A member's protocol names, each once: a JoinGroup listing one name twice still counts as
    one vote, so the group can select it (a double count left no candidate and the join hung)."""
    return {name for name, _ in protocols}
