"""Reconciliation of one member towards the group's target assignment (KIP-848 §4.6).

A member first revokes what it must give up (UNREVOKED_PARTITIONS), and only then is given
partitions; partitions another member still owns are withheld (UNRELEASED_PARTITIONS) until
their partition epoch drops to -1. Port of Kafka's CurrentAssignmentBuilder.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace

from kafkette.coordinator.runtime.error_codes import FENCED_MEMBER_EPOCH, CoordinatorError

from .member import Assignment, ConsumerGroupMember, MemberState

# (topic id, partition) -> epoch of the member that owns it now, or -1 when nobody does
PartitionEpoch = Callable[[uuid.UUID, int], int]


def reconcile(member: ConsumerGroupMember, target_epoch: int, target: Assignment,
              partition_epoch: PartitionEpoch, owned: Assignment | None) -> ConsumerGroupMember:
    """The member after one reconciliation step (the same object when nothing changes).

    ``owned`` is what the member reported in this heartbeat (None = not reported).
    Raises FENCED_MEMBER_EPOCH for a member in a state from a newer coordinator that still
    owns partitions.
    """
    state = member.state
    if state == MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    if state == MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.partitions_pending_revocation):
            return member
        return _next(member, member.member_epoch + 1, target_epoch, target, partition_epoch, owned)
    if state == MemberState.UNRELEASED_PARTITIONS:
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    if owned is None or owned:
        raise CoordinatorError(FENCED_MEMBER_EPOCH,
                               "The consumer group member is in a unknown state. "
                               "The member must abandon all its partitions and rejoin.")
    return _next(member, target_epoch, target_epoch, target, partition_epoch, owned)


def _owns_any(owned: Assignment | None, partitions: Assignment) -> bool:
    """Whether the reported partitions include any of ``partitions`` (unreported = yes)."""
    if owned is None:
        return True
    return any(not ps.isdisjoint(partitions.get(tid, ())) for tid, ps in owned.items())


def _next(member: ConsumerGroupMember, member_epoch: int, target_epoch: int, target: Assignment,
          partition_epoch: PartitionEpoch, owned: Assignment | None) -> ConsumerGroupMember:
    current = member.assigned_partitions
    withheld = False
    keep: dict[uuid.UUID, frozenset[int]] = {}
    revoke: dict[uuid.UUID, frozenset[int]] = {}
    gain: dict[uuid.UUID, frozenset[int]] = {}
    for tid in target.keys() | current.keys():
        wanted = target.get(tid, frozenset())
        owned_now = current.get(tid, frozenset())
        kept = owned_now & wanted
        pending = wanted - kept
        free = frozenset(p for p in pending if partition_epoch(tid, p) == -1)
        withheld = withheld or len(free) < len(pending)
        if kept:
            keep[tid] = kept
        if owned_now - kept:
            revoke[tid] = owned_now - kept
        if free:
            gain[tid] = free

    if revoke and _owns_any(owned, revoke):
        return replace(member.with_epoch(member_epoch), state=MemberState.UNREVOKED_PARTITIONS,
                       assigned_partitions=keep, partitions_pending_revocation=revoke)
    # Kafka's three remaining branches (new partitions / only withheld / nothing) all land here:
    # the member moves to the target epoch with what it keeps plus the free partitions.
    assigned = {tid: keep.get(tid, frozenset()) | gain.get(tid, frozenset())
                for tid in keep.keys() | gain.keys()}
    state = MemberState.UNRELEASED_PARTITIONS if withheld else MemberState.STABLE
    return replace(member.with_epoch(target_epoch), state=state, assigned_partitions=assigned,
                   partitions_pending_revocation={})
