"""The ``uniform`` server assignor, Kafka's default (UniformAssignor).

Priorities: every subscribed partition assigned exactly once, balance, then stickiness (a
partition stays with its current owner unless balance needs it elsewhere).

* Homogeneous (all members subscribe to the same topics): P partitions over M members, quota
  P // M and P % M members get one more. The extra slots go to the members that already hold
  the most (then by member id), which keeps more partitions in place than Kafka's iteration
  order and gives the same balance. Members keep their current partitions up to their quota;
  the rest plus never-assigned partitions fill the members under quota. max - min <= 1.
* Heterogeneous: keep every current partition of a still-subscribed topic; hand out the free
  partitions topic by topic (fewest subscribers per partition first) to the least-loaded
  subscriber; then move partitions of a topic from its most-loaded to its least-loaded
  subscriber while their loads differ by more than one. Each move lowers the sum of squared
  loads, so the loop ends; at the end no single move can improve balance.
"""

from __future__ import annotations

import heapq
import uuid
from typing import TYPE_CHECKING

# spec.py (frozen dataclasses) loads with the first assignment: building the configured
# assignors, which every broker start does, needs only this class.
if TYPE_CHECKING:
    from .spec import GroupAssignment, GroupSpec, TopicDescriber

TopicPartition = tuple[uuid.UUID, int]


def _retained(spec: GroupSpec, member_ids: list[str], counts: dict[uuid.UUID, int]
              ) -> dict[str, list[TopicPartition]]:
    """Per member, its current partitions that are still valid and subscribed, each partition
    kept by one member only (the first in id order, should the input claim it twice)."""
    taken: set[TopicPartition] = set()
    retained: dict[str, list[TopicPartition]] = {}
    for member_id in member_ids:
        subscribed = spec.members[member_id].subscribed_topic_ids
        current = spec.current_of(member_id)
        kept = []
        for tid in sorted(current):
            if tid not in subscribed:
                continue
            for p in sorted(current[tid]):
                if p < counts[tid] and (tid, p) not in taken:
                    taken.add((tid, p))
                    kept.append((tid, p))
        retained[member_id] = kept
    return retained


def _freeze(assigned: dict[str, list[TopicPartition]]) -> GroupAssignment:
    result: GroupAssignment = {}
    for member_id, tps in assigned.items():
        by_topic: dict[uuid.UUID, set[int]] = {}
        for tid, p in tps:
            by_topic.setdefault(tid, set()).add(p)
        result[member_id] = {tid: frozenset(ps) for tid, ps in sorted(by_topic.items())}
    return result


class UniformAssignor:
    name = "uniform"

    def assign(self, spec: GroupSpec, topics: TopicDescriber) -> GroupAssignment:
        if not spec.members:
            return {}
        from .spec import is_homogeneous, partition_counts

        counts = partition_counts(spec, topics)
        member_ids = sorted(spec.members)
        retained = _retained(spec, member_ids, counts)
        if is_homogeneous(spec):
            return _freeze(_homogeneous(member_ids, counts, retained))
        return _freeze(_heterogeneous(spec, member_ids, counts, retained))


def _unowned(counts: dict[uuid.UUID, int], retained: dict[str, list[TopicPartition]]
             ) -> list[TopicPartition]:
    owned = {tp for tps in retained.values() for tp in tps}
    return [(tid, p) for tid in counts for p in range(counts[tid]) if (tid, p) not in owned]


def _homogeneous(member_ids: list[str], counts: dict[uuid.UUID, int],
                 retained: dict[str, list[TopicPartition]]) -> dict[str, list[TopicPartition]]:
    total = sum(counts.values())
    quota, extra = divmod(total, len(member_ids))
    by_holdings = sorted(member_ids, key=lambda m: (-len(retained[m]), m))
    quotas = {m: quota + (1 if i < extra else 0) for i, m in enumerate(by_holdings)}
    free = _unowned(counts, retained)
    assigned: dict[str, list[TopicPartition]] = {}
    for member_id in member_ids:
        kept = retained[member_id]
        assigned[member_id] = kept[:quotas[member_id]]
        free.extend(kept[quotas[member_id]:])
    free.sort()
    it = iter(free)
    for member_id in member_ids:
        mine = assigned[member_id]
        while len(mine) < quotas[member_id]:
            mine.append(next(it))
    if next(it, None) is not None:  # cannot happen: the quotas add up to the total
        from .spec import PartitionAssignorError

        raise PartitionAssignorError("Partitions were left unassigned")
    return assigned


def _heterogeneous(spec: GroupSpec, member_ids: list[str], counts: dict[uuid.UUID, int],
                   retained: dict[str, list[TopicPartition]]) -> dict[str, list[TopicPartition]]:
    subscribers = {tid: [m for m in member_ids if tid in spec.members[m].subscribed_topic_ids]
                   for tid in counts}
    held: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in member_ids}
    for member_id in member_ids:
        for tid, p in retained[member_id]:
            held[member_id].setdefault(tid, set()).add(p)
    load = {m: len(retained[m]) for m in member_ids}
    rank = {m: i for i, m in enumerate(member_ids)}

    # topics with the fewest candidates per partition first: they have the least freedom
    order = sorted(counts, key=lambda t: (-(counts[t] / len(subscribers[t])),
                                          len(subscribers[t]), t))
    free_by_topic: dict[uuid.UUID, list[int]] = {}
    for tid, p in _unowned(counts, retained):
        free_by_topic.setdefault(tid, []).append(p)
    for tid in order:
        if not free_by_topic.get(tid):
            continue
        # least loaded subscriber first, ties by member id; only this topic changes loads here
        heap = [(load[m], rank[m], m) for m in subscribers[tid]]
        heapq.heapify(heap)
        for p in free_by_topic[tid]:
            _, r, member_id = heapq.heappop(heap)
            held[member_id].setdefault(tid, set()).add(p)
            load[member_id] += 1
            heapq.heappush(heap, (load[member_id], r, member_id))

    moved = True
    while moved:
        moved = False
        for tid in order:
            subs = subscribers[tid]
            if len(subs) < 2:
                continue
            while True:
                holders = [m for m in subs if held[m].get(tid)]
                if not holders:
                    break
                donor = max(holders, key=lambda m: (load[m], -rank[m]))
                taker = min(subs, key=lambda m: (load[m], rank[m]))
                if load[donor] - load[taker] <= 1:
                    break
                # give away the donor's highest partition of this topic
                partitions = held[donor][tid]
                p = max(partitions)
                partitions.discard(p)
                held[taker].setdefault(tid, set()).add(p)
                load[donor] -= 1
                load[taker] += 1
                moved = True
    return {m: [(tid, p) for tid, ps in held[m].items() for p in ps] for m in member_ids}
