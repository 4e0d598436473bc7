"""The ``range`` server assignor (Kafka's RangeAssignor).

Per topic, its subscribers get consecutive ranges: ``partitions // subscribers`` each, the first
``partitions % subscribers`` one more. Subscribers are ordered static members first (by instance
id), then dynamic members (by member id), so topics with the same partition count and the same
subscribers are co-partitioned. A pure function of the member list: not sticky, by design.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (spec.py loads with the first assignment, see uniform.py)
    from .spec import GroupAssignment, GroupSpec, TopicDescriber


def _order(spec: GroupSpec) -> list[str]:
    def key(member_id: str) -> tuple[int, str]:
        instance_id = spec.members[member_id].instance_id
        return (0, instance_id) if instance_id is not None else (1, member_id)
    return sorted(spec.members, key=key)


class RangeAssignor:
    name = "range"

    def assign(self, spec: GroupSpec, topics: TopicDescriber) -> GroupAssignment:
        from .spec import partition_counts

        counts = partition_counts(spec, topics)
        members = _order(spec)
        result: dict[str, dict[uuid.UUID, frozenset[int]]] = {m: {} for m in members}
        for tid, num_partitions in counts.items():
            subscribers = [m for m in members if tid in spec.members[m].subscribed_topic_ids]
            quota, extra = divmod(num_partitions, len(subscribers))
            start = 0
            for i, member_id in enumerate(subscribers):
                end = start + quota + (1 if i < extra else 0)
                if end > start:
                    result[member_id][tid] = frozenset(range(start, end))
                start = end
        return dict(result)
