"""A member's assignment as ConsumerGroupDescribe and ShareGroupDescribe answer it: one entry a
topic, by id and name, in topic id order, with its partitions sorted; a topic that is gone
(no name) is left out."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from .assignor.spec import Assignment

# topic id -> topic name, None when the topic is gone (its partitions are left out)
TopicNamer = Callable[[uuid.UUID], "str | None"]


@dataclass(frozen=True, slots=True)
class DescribedTopicPartitions:
    topic_id: uuid.UUID
    topic_name: str
    partitions: tuple[int, ...]


def described_partitions(assignment: Assignment, name_of: TopicNamer
                         ) -> tuple[DescribedTopicPartitions, ...]:
    out = []
    for topic_id in sorted(assignment):
        name = name_of(topic_id)
        if name is not None:
            out.append(DescribedTopicPartitions(topic_id, name, tuple(sorted(assignment[topic_id]))))
    return tuple(out)
