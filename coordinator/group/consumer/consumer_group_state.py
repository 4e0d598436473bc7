"""The consumer group aggregate (KIP-848): hard state changed only by replaying records.

Holds the group epoch, the members (immutable values), the static-member index, the
subscription metadata, the target assignment with its inverted index (partition -> member),
the partition epochs (partition -> epoch of the member owning it now), the resolved regexes and
the counts of preferred server assignors. The group state is derived. Port of Kafka's
ConsumerGroup (modern/consumer) minus the timeline: ``replay`` is the only mutator, so the
runtime can snapshot/revert around it.
"""

from __future__ import annotations

import enum
import logging
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass, replace
from typing import Any

from kafkette.coordinator.group.assignor.spec import Assignment, SubscriptionType
from kafkette.coordinator.runtime.error_codes import (
    FENCED_MEMBER_EPOCH,
    ILLEGAL_GENERATION,
    NON_EMPTY_GROUP,
    STALE_MEMBER_EPOCH,
    UNKNOWN_MEMBER_ID,
    UNSUPPORTED_VERSION,
    CoordinatorError,
)
from kafkette.protocol import consumer_group_records as cgr

from . import consumer_record_builders as records
from .consumer_record_builders import Record
from .member import ConsumerGroupMember, assignment_from_records
from .target import subscribed_topic_names, subscription_type

log = logging.getLogger(__name__)

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2

# topic name -> (topic id, partition count), None when the topic does not exist
TopicLookup = Callable[[str], "tuple[uuid.UUID, int] | None"]


class ConsumerGroupState(enum.Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class GroupStateError(RuntimeError):
    """Records that contradict the group's state (Kafka: IllegalStateException on replay)."""


@dataclass(frozen=True, slots=True)
class ResolvedRegex:
    topics: frozenset[str]
    version: int
    timestamp: int


def owned_subset(owned: Assignment | None, assigned: Assignment) -> bool:
    """Kafka's isSubset: reported partitions all assigned (not reported = no)."""
    if owned is None:
        return False
    return all(ps <= assigned.get(tid, frozenset()) for tid, ps in owned.items())


def check_member_epoch(member: ConsumerGroupMember, received_epoch: int,
                       owned: Assignment | None) -> None:
    """FENCED_MEMBER_EPOCH unless the heartbeat's epoch is the member's, or its previous one
    with owned partitions within the assigned ones (the epoch bump's response got lost)."""
    if received_epoch > member.member_epoch:
        raise CoordinatorError(FENCED_MEMBER_EPOCH, (
            f"The consumer group member has a greater member epoch ({received_epoch}) than the "
            f"one known by the group coordinator ({member.member_epoch}). The member must "
            "abandon all its partitions and rejoin."))
    if received_epoch < member.member_epoch and (
            received_epoch != member.previous_member_epoch
            or not owned_subset(owned, member.assigned_partitions)):
        raise CoordinatorError(FENCED_MEMBER_EPOCH, (
            f"The consumer group member has a smaller member epoch ({received_epoch}) than the "
            f"one known by the group coordinator ({member.member_epoch}). The member must "
            "abandon all its partitions and rejoin."))


class ConsumerGroup:
    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.members: dict[str, ConsumerGroupMember] = {}
        self.static_members: dict[str, str] = {}  # instance id -> member id
        self.subscription_metadata: dict[str, cgr.TopicMetadata] = {}
        self.assignment_epoch = -1
        self.target: dict[str, Assignment] = {}
        self.inverted_target: dict[uuid.UUID, dict[int, str]] = {}
        self.partition_epochs: dict[uuid.UUID, dict[int, int]] = {}
        self.resolved_regexes: dict[str, ResolvedRegex] = {}
        self.server_assignors: Counter[str] = Counter()
        self._regex_counts: Counter[str] = Counter()  # regex -> members subscribing (> 0)

    # -- derived state ---------------------------------------------------------------------------

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def is_empty(self) -> bool:
        return not self.members

    def partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        return self.partition_epochs.get(topic_id, {}).get(partition, -1)

    def target_of(self, member_id: str) -> Assignment:
        return self.target.get(member_id, {})

    def static_member(self, instance_id: str) -> ConsumerGroupMember | None:
        member_id = self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def preferred_assignor(self, default: str, updated: ConsumerGroupMember | None = None,
                           removed: ConsumerGroupMember | None = None) -> str:
        """The server assignor most members name (ties: alphabetical), else ``default``;
        ``updated``/``removed`` preview a member change not yet replayed."""
        counts = Counter(self.server_assignors)
        old = self.members.get(updated.member_id) if updated is not None else removed
        if old is not None and old.server_assignor:
            counts[old.server_assignor] -= 1
        if updated is not None and updated.server_assignor:
            counts[updated.server_assignor] += 1
        best = sorted((n for n, c in counts.items() if c > 0), key=lambda n: (-counts[n], n))
        return best[0] if best else default

    def _members_with(self, updated: ConsumerGroupMember | None,
                      removed: str | None) -> dict[str, ConsumerGroupMember]:
        members = dict(self.members)
        if removed is not None:
            members.pop(removed, None)
        if updated is not None:
            members[updated.member_id] = updated
        return members

    def subscription_type(self, updated: ConsumerGroupMember | None = None,
                          removed: str | None = None) -> SubscriptionType:
        return subscription_type(self._members_with(updated, removed))

    def subscribed_topic_names(self, updated: ConsumerGroupMember | None = None,
                               removed: str | None = None,
                               resolved: Mapping[str, frozenset[str]] | None = None
                               ) -> Counter[str]:
        """Topic name -> number of members subscribing (names and resolved regexes);
        ``resolved`` overrides the group's resolved regexes."""
        if resolved is None:
            resolved = {r: v.topics for r, v in self.resolved_regexes.items()}
        counts: Counter[str] = Counter()
        for member in self._members_with(updated, removed).values():
            counts.update(subscribed_topic_names(member, resolved))
        return counts

    def regex_subscribers(self) -> Counter[str]:
        """Regex -> number of members subscribing to it (a copy the caller may change)."""
        return Counter(self._regex_counts)

    @property
    def has_regex_subscribers(self) -> bool:
        return bool(self._regex_counts)

    def is_subscribed_to_topic(self, name: str) -> bool:
        return self.subscribed_topic_names()[name] > 0

    is_subscribed_to = is_subscribed_to_topic  # the name offsets.Group gives it

    @staticmethod
    def offset_expiration_base() -> Callable[[Any], int]:
        """Offsets of a consumer group expire counting from their commit (Kafka's
        ConsumerGroup.offsetExpirationCondition); subscribed topics' offsets never do."""
        return lambda value: value.commit_timestamp

    def compute_subscription_metadata(self, lookup: TopicLookup,
                                      updated: ConsumerGroupMember | None = None,
                                      removed: str | None = None,
                                      resolved: Mapping[str, frozenset[str]] | None = None
                                      ) -> dict[str, cgr.TopicMetadata]:
        """Metadata (id, partition count) of every existing topic the members subscribe to."""
        result: dict[str, cgr.TopicMetadata] = {}
        for name in sorted(self.subscribed_topic_names(updated, removed, resolved)):
            found = lookup(name)
            if found is not None:
                result[name] = cgr.TopicMetadata(found[0], name, found[1])
        return result

    def subscription_metadata_changed(self, metadata: Mapping[str, cgr.TopicMetadata]) -> bool:
        def strip(m: Mapping[str, cgr.TopicMetadata]) -> dict[str, tuple[uuid.UUID, int]]:
            return {n: (t.topic_id, t.num_partitions) for n, t in m.items()}
        return strip(metadata) != strip(self.subscription_metadata)

    # -- validation of other APIs ----------------------------------------------------------------

    def validate_offset_commit(self, member_id: str, instance_id: str | None, member_epoch: int,
                               is_transactional: bool, api_version: int) -> None:
        """Kafka's ConsumerGroup.validateOffsetCommit: CoordinatorError if refused."""
        if member_epoch < 0 and not self.members:
            return  # admin client or manual assignment into an empty group
        member = self.members.get(member_id)
        if member is None:
            raise CoordinatorError(UNKNOWN_MEMBER_ID,
                                   f"Member {member_id} is not a member of group {self.group_id}.")
        if not is_transactional and not member.uses_classic_protocol and api_version < 9:
            raise CoordinatorError(UNSUPPORTED_VERSION, "OffsetCommit version 9 or above must be "
                                   "used by members using the modern group protocol")
        self._validate_member_epoch(member, member_epoch)

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> None:
        if member_id is None and member_epoch < 0:
            return
        member = self.members.get(member_id or "")
        if member is None:
            raise CoordinatorError(UNKNOWN_MEMBER_ID,
                                   f"Member {member_id} is not a member of group {self.group_id}.")
        self._validate_member_epoch(member, member_epoch)

    @staticmethod
    def _validate_member_epoch(member: ConsumerGroupMember, received: int) -> None:
        if received == member.member_epoch:
            return
        if member.uses_classic_protocol:
            raise CoordinatorError(ILLEGAL_GENERATION, f"The received generation id {received} "
                                   f"does not match the expected member epoch {member.member_epoch}.")
        raise CoordinatorError(STALE_MEMBER_EPOCH, f"The received member epoch {received} does "
                               f"not match the expected member epoch {member.member_epoch}.")

    def validate_delete(self) -> None:
        if self.state != ConsumerGroupState.EMPTY:
            raise CoordinatorError(NON_EMPTY_GROUP, f"The group {self.group_id} is not empty.")

    def tombstones(self) -> list[Record]:
        """Every record needed to delete the group, in Kafka's order (offsets excluded)."""
        return records.group_deletion(self.group_id, self.members, self.resolved_regexes)

    # -- replay ----------------------------------------------------------------------------------

    def replay(self, key: cgr.ConsumerGroupKey, value: cgr.ConsumerGroupValue | None) -> None:
        """Apply one record of this group. A type-3 tombstone only checks that the group may go;
        removing it from the shard is the caller's job."""
        match key:
            case cgr.ConsumerGroupMetadataKey():
                if value is None:
                    self._check_deletable()
                else:
                    self.group_epoch = value.epoch  # type: ignore[union-attr]  # the record key's type fixes the value's type
            case cgr.ConsumerGroupPartitionMetadataKey():
                assert value is None or isinstance(value, cgr.ConsumerGroupPartitionMetadataValue)
                self.subscription_metadata = ({} if value is None
                                              else {t.topic_name: t for t in value.topics})
            case cgr.ConsumerGroupMemberMetadataKey(member_id=member_id):
                if value is None:
                    self._replay_member_removal(member_id)
                else:
                    old = self.members.get(member_id) or ConsumerGroupMember(member_id)
                    self._put_member(old.replay_metadata(value))  # type: ignore[arg-type]  # the record key's type fixes the value's type
            case cgr.ConsumerGroupTargetAssignmentMetadataKey():
                if value is None:
                    if self.target:
                        raise GroupStateError(f"group {self.group_id}: target assignment epoch "
                                              "tombstone while members still have a target")
                    self.assignment_epoch = -1
                else:
                    self.assignment_epoch = value.assignment_epoch  # type: ignore[union-attr]  # the record key's type fixes the value's type
            case cgr.ConsumerGroupTargetAssignmentMemberKey(member_id=member_id):
                new = (None if value is None
                       else assignment_from_records(value.topic_partitions))  # type: ignore[union-attr]  # the record key's type fixes the value's type
                self._set_target(member_id, new)
            case cgr.ConsumerGroupCurrentMemberAssignmentKey(member_id=member_id):
                current = self.members.get(member_id)
                if value is None:
                    if current is not None:
                        self._put_member(replace(
                            current, member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                            previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                            assigned_partitions={}, partitions_pending_revocation={}))
                else:
                    base = current or ConsumerGroupMember(member_id)
                    self._put_member(base.replay_assignment(value))  # type: ignore[arg-type]  # the record key's type fixes the value's type
            case cgr.ConsumerGroupRegularExpressionKey(regular_expression=regex):
                if value is None:
                    self.resolved_regexes.pop(regex, None)
                else:
                    assert isinstance(value, cgr.ConsumerGroupRegularExpressionValue)
                    self.resolved_regexes[regex] = ResolvedRegex(
                        frozenset(value.topics), value.version, value.timestamp)
            case _:
                raise TypeError(f"not a consumer group record key: {key!r}")

    def _check_deletable(self) -> None:
        if self.members or self.target or self.assignment_epoch != -1:
            raise GroupStateError(f"group {self.group_id} deleted while it still has members or "
                                  "a target assignment")

    def _replay_member_removal(self, member_id: str) -> None:
        old = self.members.get(member_id)
        if old is None:
            return  # a compacted log may keep tombstones of members it no longer shows
        if old.member_epoch != LEAVE_GROUP_MEMBER_EPOCH or member_id in self.target:
            log.warning("group %s: member %s removed before its assignment/target tombstones",
                        self.group_id, member_id)
            self._set_target(member_id, None)
        self._remove_member(member_id)

    def _put_member(self, new: ConsumerGroupMember) -> None:
        old = self.members.get(new.member_id)
        self._member_changed(old, new)
        self.members[new.member_id] = new

    def _remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is not None:
            self._member_changed(old, None)

    def _member_changed(self, old: ConsumerGroupMember | None,
                        new: ConsumerGroupMember | None) -> None:
        if old is not None:
            if old.server_assignor:
                self.server_assignors[old.server_assignor] -= 1
                if self.server_assignors[old.server_assignor] <= 0:
                    del self.server_assignors[old.server_assignor]
            if old.subscribed_topic_regex:
                self._regex_counts[old.subscribed_topic_regex] -= 1
                if self._regex_counts[old.subscribed_topic_regex] <= 0:
                    del self._regex_counts[old.subscribed_topic_regex]
            if old.instance_id and self.static_members.get(old.instance_id) == old.member_id:
                del self.static_members[old.instance_id]
            self._remove_partition_epochs(old.assigned_partitions, old.member_epoch)
            self._remove_partition_epochs(old.partitions_pending_revocation, old.member_epoch)
        if new is not None:
            if new.server_assignor:
                self.server_assignors[new.server_assignor] += 1
            if new.subscribed_topic_regex:
                self._regex_counts[new.subscribed_topic_regex] += 1
            if new.instance_id:
                self.static_members[new.instance_id] = new.member_id
            self._add_partition_epochs(new.assigned_partitions, new.member_epoch)
            self._add_partition_epochs(new.partitions_pending_revocation, new.member_epoch)

    def _remove_partition_epochs(self, assignment: Assignment, expected: int) -> None:
        for tid, partitions in assignment.items():
            epochs = self.partition_epochs.get(tid, {})
            for p in partitions:
                found = epochs.pop(p, None)
                if found != expected:
                    raise GroupStateError(f"Cannot remove the epoch {expected} from {tid}-{p} "
                                          f"because the partition is owned at epoch {found}")
            if not epochs:
                self.partition_epochs.pop(tid, None)

    def _add_partition_epochs(self, assignment: Assignment, epoch: int) -> None:
        for tid, partitions in assignment.items():
            epochs = self.partition_epochs.setdefault(tid, {})
            for p in partitions:
                if p in epochs:
                    raise GroupStateError(f"Cannot set the epoch of {tid}-{p} to {epoch} because "
                                          f"the partition is still owned at epoch {epochs[p]}")
                epochs[p] = epoch

    def _set_target(self, member_id: str, assignment: Assignment | None) -> None:
        for tid, partitions in self.target.pop(member_id, {}).items():
            owners = self.inverted_target.get(tid, {})
            for p in partitions:
                if owners.get(p) == member_id:
                    del owners[p]
            if not owners:
                self.inverted_target.pop(tid, None)
        if assignment is None:
            return
        self.target[member_id] = assignment
        for tid, partitions in assignment.items():
            owners = self.inverted_target.setdefault(tid, {})
            for p in partitions:
                owners[p] = member_id

    def replay_all(self, items: Iterable[tuple[cgr.ConsumerGroupKey,
                                               cgr.ConsumerGroupValue | None]]) -> None:
        for key, value in items:
            self.replay(key, value)


def replay_record(groups: MutableMapping[str, ConsumerGroup], key: cgr.ConsumerGroupKey,
                  value: cgr.ConsumerGroupValue | None) -> None:
    """Replay one consumer-group record into a shard's map of consumer groups: the first record
    of an unknown group creates it, the type-3 tombstone removes it (after its checks), other
    tombstones of unknown groups are ignored (a compacted log keeps some)."""
    group = groups.get(key.group)
    if group is None:
        if value is None:
            return
        group = groups[key.group] = ConsumerGroup(key.group)
    group.replay(key, value)
    if value is None and isinstance(key, cgr.ConsumerGroupMetadataKey):
        del groups[key.group]
