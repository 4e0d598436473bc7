"""The replica arithmetic of a partition reassignment, as Kafka's controller does it
(PartitionReassignmentReplicas, PartitionReassignmentRevert). Pure: lists in, lists out.

A reassignment from ``current`` to ``target`` first widens the replica list to the target
followed by the replicas it removes; ``adding`` are the target's replicas not in ``current``,
``removing`` the current ones not in the target (both sorted). It completes once the in-sync
replicas, less those removed, hold every target replica: the list is then the target alone.
Cancelling it keeps the replicas it was removing and drops the ones it was adding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Reassignment:
    replicas: list[int]  # the target, then the replicas being removed
    adding: list[int] = field(default_factory=list)
    removing: list[int] = field(default_factory=list)

    @property
    def in_progress(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def target(self) -> list[int]:
        """Where the partition is headed: the replica list without the ones being removed."""
        return [r for r in self.replicas if r not in self.removing]

    @property
    def original(self) -> list[int]:
        """The replicas before the reassignment: the list without the ones being added."""
        return [r for r in self.replicas if r not in self.adding]


def plan(current: Sequence[int], target: Sequence[int]) -> Reassignment:
    """The reassignment of a partition whose replica list is ``current`` to ``target``."""
    removing = sorted(set(current) - set(target))
    adding = sorted(set(target) - set(current))
    return Reassignment([*target, *removing], adding, removing)


def completed(reassignment: Reassignment, isr: Sequence[int]) -> list[int] | None:
    """The final replica list when the in-sync replicas let the reassignment complete, else
    None (Kafka's maybeCompleteReassignment)."""
    if not reassignment.in_progress:
        return None
    removing = reassignment.removing
    remaining_isr = {r for r in isr if r not in removing}
    target = reassignment.target
    if not remaining_isr or not target or not remaining_isr.issuperset(target):
        return None
    return target


def revert(reassignment: Reassignment, isr: Sequence[int]) -> tuple[list[int], bool]:
    """(replica list, unclean) after cancelling: the original replicas; unclean when none of
    the in-sync replicas is one of them (reverting would take an unclean leader election)."""
    remaining_isr = [r for r in isr if r not in reassignment.adding]
    return reassignment.original, not remaining_isr


class UncleanRevertError(Exception):
    """Cancelling the reassignment would take an unclean leader election."""
