"""The ``simple`` share group assignor (Kafka's SimpleAssignor and its homogeneous /
heterogeneous builders), the only one share groups have (``group.share.assignors=simple``).

Several members may be assigned the same partition. With M members and P target partitions
each partition is shared by ``ceil(M / P)`` members (1 when M <= P) and member i of the sorted
member ids wants ``ceil(x*(i+1)) - ceil(x*i)`` partitions, x = sharing*P/M, so the counts add up
to sharing*P. Sticky: current assignments still subscribed and within a member's count are kept;
over-shared partitions and over-filled members give partitions up; under-shared partitions are
then handed round-robin to under-filled members. Balance first, then stickiness.

When members subscribe to different topic sets each topic is shared out among its own
subscribers that way and the results are combined (Kafka's heterogeneous builder: M1 on T1, M2
on T2 and M3 on both gives M3 half of T1's partitions and half of T2's).

Pure and deterministic: member ids, topic ids and partitions are walked sorted.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping

from ..assignor.spec import Assignment

NAME = "simple"

TopicPartition = tuple[uuid.UUID, int]


def assign(subscriptions: Mapping[str, frozenset[uuid.UUID]],
           partitions: Mapping[uuid.UUID, tuple[int, ...]],
           current: Mapping[str, Assignment]) -> dict[str, Assignment]:
    """The target assignment of every member.

    ``subscriptions``: member id -> subscribed topic ids; ``partitions``: topic id -> its
    assignable partitions (initialised share-partitions of existing topics); ``current``:
    member id -> its present target assignment (for stickiness).
    """
    if not subscriptions:
        return {}
    sets = set(subscriptions.values())
    if len(sets) == 1:
        topics = next(iter(sets))
        return _homogeneous(sorted(subscriptions), topics, partitions, current)
    out: dict[str, dict[uuid.UUID, frozenset[int]]] = {m: {} for m in subscriptions}
    for topic_id in sorted({t for s in sets for t in s}):
        members = sorted(m for m, s in subscriptions.items() if topic_id in s)
        per_topic = _homogeneous(
            members, frozenset((topic_id,)), partitions,
            {m: {topic_id: a[topic_id]} for m in members
             if (a := current.get(m)) is not None and topic_id in a})
        for member_id, assignment in per_topic.items():
            out[member_id].update(assignment)
    return dict(out)


def _homogeneous(member_ids: list[str], topics: frozenset[uuid.UUID],
                 partitions: Mapping[uuid.UUID, tuple[int, ...]],
                 current: Mapping[str, Assignment]) -> dict[str, Assignment]:
    targets: list[TopicPartition] = [(t, p) for t in sorted(topics)
                                     for p in sorted(partitions.get(t, ()))]
    target_set = set(targets)
    count = len(member_ids)
    if not targets:
        return {m: {} for m in member_ids}
    sharing = (count + len(targets) - 1) // len(targets)
    precise = sharing * len(targets) / count
    desired = [math.ceil(precise * (i + 1)) - math.ceil(precise * i) for i in range(count)]

    # 1. keep what is still assignable
    by_member: list[list[TopicPartition]] = []
    by_partition: dict[TopicPartition, list[int]] = {tp: [] for tp in targets}
    for index, member_id in enumerate(member_ids):
        kept = sorted(tp for tp_topic, ps in (current.get(member_id) or {}).items()
                      for tp in ((tp_topic, p) for p in ps) if tp in target_set)
        by_member.append(kept)
        for tp in kept:
            by_partition[tp].append(index)

    def overfilled(i: int) -> bool:
        return len(by_member[i]) > desired[i]

    # 2. over-shared partitions give up members, over-filled members first
    for tp in targets:
        holders = by_partition[tp]
        for prefer_overfilled in (True, False):
            for i in list(holders):
                if len(holders) <= sharing:
                    break
                if overfilled(i) == prefer_overfilled:
                    holders.remove(i)
                    by_member[i].remove(tp)

    # 3. over-filled members give up partitions
    for i in range(count):
        while len(by_member[i]) > desired[i]:
            tp = by_member[i].pop()
            by_partition[tp].remove(i)

    # 4. under-shared partitions go round-robin to under-filled members
    unfilled = [i for i in range(count) if len(by_member[i]) < desired[i]]
    cursor = 0
    for tp in targets:
        if not unfilled:
            break
        holders = by_partition[tp]
        tried = 0
        while len(holders) < sharing and unfilled and tried < len(unfilled):
            cursor %= len(unfilled)
            i = unfilled[cursor]
            if i in holders:
                cursor += 1
                tried += 1
                continue
            holders.append(i)
            by_member[i].append(tp)
            tried = 0
            if len(by_member[i]) >= desired[i]:
                unfilled.pop(cursor)
            else:
                cursor += 1

    out: dict[str, Assignment] = {}
    for index, member_id in enumerate(member_ids):
        grouped: dict[uuid.UUID, set[int]] = {}
        for topic_id, partition in by_member[index]:
            grouped.setdefault(topic_id, set()).add(partition)
        out[member_id] = {t: frozenset(ps) for t, ps in grouped.items()}
    return out
