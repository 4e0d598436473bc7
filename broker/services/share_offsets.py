"""The share-group offsets admin APIs (KIP-932): DescribeShareGroupOffsets (90),
AlterShareGroupOffsets (91) and DeleteShareGroupOffsets (92), as Kafka's
GroupCoordinatorService answers them.

The group side (a share group's state, epoch and initialised partitions) comes from the group
coordinator through a ``ShareGroupLookup``; the start offsets from the share-state coordinator
(the ``Persister``). Results are plain values; broker/handlers/share_offsets.py puts them on
the wire.

- Describe: with no topics, every partition the group has share state for (Kafka: its
  initialised partitions), GROUP_ID_NOT_FOUND for an unknown or non-share group; with topics,
  no group check (Kafka's describeShareGroupOffsets): an unknown topic answers start offset -1.
  Lag (v1) = log end offset - start offset - records at or past it already delivered; -1 when
  the start offset is not known.
- Alter: the group must exist and be Empty; each partition is re-initialised (fresh snapshot,
  no batches) at the given start offset with a state epoch above the old one, so a share
  partition still holding the old state is fenced (FENCED_STATE_EPOCH) on its next write.
- Delete: the group must exist and be Empty; each topic's share state is deleted (tombstones);
  the next subscription starts again by ``share.auto.offset.reset``.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kafkette.coordinator.share.persister import Persister, SharePartitionKey

from .errors import UNKNOWN_PARTITION_MESSAGE

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_GROUP_ID = 24
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
UNINITIALIZED_START_OFFSET = -1
DEFAULT_LEADER_EPOCH = 0  # Kafka's PartitionFactory.DEFAULT_LEADER_EPOCH for absent state
UNINITIALIZED_LAG = -1

# Kafka's Errors messages for the codes these APIs answer themselves
MESSAGES = {
    UNKNOWN_TOPIC_OR_PARTITION: UNKNOWN_PARTITION_MESSAGE,
    INVALID_GROUP_ID: "The configured groupId is invalid.",
    NON_EMPTY_GROUP: "The group is not empty.",
    GROUP_ID_NOT_FOUND: "The group id does not exist.",
    14: "The coordinator is loading and hence can't process requests.",
    15: "The coordinator is not available.",
    16: "This is not the correct coordinator.",
    35: "The version of API is not supported.",
    124: "The share coordinator rejected the request because the share-group state epoch did "
         "not match.",
}


def message_for(code: int) -> str | None:
    return None if code == NONE else MESSAGES.get(code)


class ShareGroupView(Protocol):
    """What these APIs read of a share group (the group coordinator's DescribedShareGroup)."""

    @property
    def group_state(self) -> str: ...  # "Empty" / "Stable"

    @property
    def group_epoch(self) -> int: ...

    @property
    def initialized(self) -> Mapping[uuid.UUID, Sequence[int]]: ...


# group id -> (error, message, group): the group coordinator's view of a share group
ShareGroupLookup = Callable[[str], Awaitable[tuple[int, "str | None", "ShareGroupView | None"]]]


class TopicLookup(Protocol):
    def get(self, name: str) -> Any: ...  # TopicInfo: name, topic_id, partitions, internal

    def get_by_id(self, topic_id: uuid.UUID) -> Any: ...


@dataclass(frozen=True, slots=True)
class PartitionOffset:
    partition: int
    start_offset: int
    leader_epoch: int
    lag: int = UNINITIALIZED_LAG


@dataclass(frozen=True, slots=True)
class TopicOffsets:
    name: str
    topic_id: uuid.UUID | None
    partitions: list[PartitionOffset]


@dataclass(slots=True)
class GroupOffsets:
    group_id: str
    error: int = NONE
    message: str | None = None
    topics: list[TopicOffsets] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class PartitionResult:
    partition: int
    error: int
    message: str | None = None


@dataclass(frozen=True, slots=True)
class TopicResult:
    name: str
    topic_id: uuid.UUID | None
    error: int = NONE
    message: str | None = None
    partitions: list[PartitionResult] = field(default_factory=list)


@dataclass(slots=True)
class AdminResult:
    """Alter/Delete: a top-level error, else one result per requested topic."""

    error: int = NONE
    message: str | None = None
    topics: list[TopicResult] = field(default_factory=list)


def _known(topics: TopicLookup, name: str) -> Any:
    info = topics.get(name)
    return None if info is None or info.internal else info


class ShareOffsets:
    """The three APIs over the group lookup, the topics, the log end offsets and the
    persister (``group_keys``: the share-partitions the share-state coordinator holds for a
    group, which also count as its initialised partitions)."""

    def __init__(self, lookup: ShareGroupLookup, topics: TopicLookup, persister: Persister,
                 end_offset: Callable[[str, int], Awaitable[int | None]],
                 group_keys: Callable[[str], Awaitable[list[SharePartitionKey]]]) -> None:
        self._lookup = lookup
        self._topics = topics
        self._persister = persister
        self._end_offset = end_offset
        self._group_keys = group_keys

    async def _group(self, group_id: str) -> tuple[int, str | None, ShareGroupView | None]:
        if not group_id:
            return INVALID_GROUP_ID, message_for(INVALID_GROUP_ID), None
        code, message, group = await self._lookup(group_id)
        if code != NONE:
            return code, message or message_for(code), None
        return NONE, None, group

    # DescribeShareGroupOffsets -----------------------------------------------------------------
    async def describe(self, group_id: str,
                       topics: Sequence[tuple[str, Sequence[int]]] | None) -> GroupOffsets:
        code, message, group = await self._group(group_id)
        if topics is None:
            if code != NONE or group is None:
                return GroupOffsets(group_id, code, message)
            wanted = await self._initialized(group_id, group)
        elif code not in (NONE, GROUP_ID_NOT_FOUND):  # not this coordinator, loading, disabled
            return GroupOffsets(group_id, code, message)
        else:
            wanted = [(name, list(parts)) for name, parts in topics]
        out = GroupOffsets(group_id)
        for name, partitions in wanted:
            info = _known(self._topics, name)
            if info is None:
                out.topics.append(TopicOffsets(name, None, [
                    PartitionOffset(p, UNINITIALIZED_START_OFFSET, DEFAULT_LEADER_EPOCH)
                    for p in partitions]))
                continue
            rows = [await self._offset(group_id, info, p) for p in partitions]
            out.topics.append(TopicOffsets(name, info.topic_id, rows))
        return out

    async def _initialized(self, group_id: str, group: ShareGroupView
                           ) -> list[tuple[str, list[int]]]:
        by_topic: dict[uuid.UUID, set[int]] = {t: set(ps) for t, ps in group.initialized.items()}
        for key in await self._group_keys(group_id):
            by_topic.setdefault(key.topic_id, set()).add(key.partition)
        out = []
        for topic_id, partitions in by_topic.items():
            info = self._topics.get_by_id(topic_id)
            if info is not None:
                out.append((info.name, sorted(p for p in partitions if p < info.partitions)))
        return sorted(out)

    async def _offset(self, group_id: str, info: Any, partition: int) -> PartitionOffset:
        if not 0 <= partition < info.partitions:
            return PartitionOffset(partition, UNINITIALIZED_START_OFFSET, DEFAULT_LEADER_EPOCH)
        code, summary = await self._persister.read_summary(
            SharePartitionKey(group_id, info.topic_id, partition))
        if code != NONE or summary is None:
            return PartitionOffset(partition, UNINITIALIZED_START_OFFSET, DEFAULT_LEADER_EPOCH)
        lag = UNINITIALIZED_LAG
        end = await self._end_offset(info.name, partition)
        if (end is not None and summary.start_offset != UNINITIALIZED_START_OFFSET
                and summary.delivery_complete_count >= 0):
            lag = end - summary.start_offset - summary.delivery_complete_count
        return PartitionOffset(partition, summary.start_offset, summary.leader_epoch, lag)

    # AlterShareGroupOffsets ------------------------------------------------------------------
    async def alter(self, group_id: str,
                    topics: Sequence[tuple[str, Sequence[tuple[int, int]]]]) -> AdminResult:
        group = await self._empty_group(group_id)
        if isinstance(group, AdminResult):
            return group
        out = AdminResult()
        for name, partitions in topics:
            info = _known(self._topics, name)
            results = []
            for partition, start_offset in partitions:
                if info is None or not 0 <= partition < info.partitions:
                    code = UNKNOWN_TOPIC_OR_PARTITION
                else:
                    code = await self._reinitialize(group_id, group, info.topic_id, partition,
                                                    start_offset)
                results.append(PartitionResult(partition, code, message_for(code)))
            out.topics.append(TopicResult(name, None if info is None else info.topic_id,
                                          partitions=results))
        return out

    async def _reinitialize(self, group_id: str, group: ShareGroupView, topic_id: uuid.UUID,
                            partition: int, start_offset: int) -> int:
        key = SharePartitionKey(group_id, topic_id, partition)
        code, summary = await self._persister.read_summary(key)
        if code != NONE:
            return code
        state_epoch = group.group_epoch
        if summary is not None:
            state_epoch = max(state_epoch, summary.state_epoch + 1)
        return await self._persister.initialize(key, state_epoch, start_offset)

    async def _empty_group(self, group_id: str) -> ShareGroupView | AdminResult:
        code, message, group = await self._group(group_id)
        if code != NONE or group is None:
            return AdminResult(code, message)
        if group.group_state != "Empty":
            return AdminResult(NON_EMPTY_GROUP, message_for(NON_EMPTY_GROUP))
        return group

    # DeleteShareGroupOffsets -----------------------------------------------------------------
    async def delete(self, group_id: str, topic_names: Iterable[str]) -> AdminResult:
        group = await self._empty_group(group_id)
        if isinstance(group, AdminResult):
            return group
        held: dict[uuid.UUID, set[int]] = {t: set(ps) for t, ps in group.initialized.items()}
        for key in await self._group_keys(group_id):
            held.setdefault(key.topic_id, set()).add(key.partition)
        out = AdminResult()
        for name in topic_names:
            info = _known(self._topics, name)
            if info is None:
                out.topics.append(TopicResult(name, None, UNKNOWN_TOPIC_OR_PARTITION,
                                              message_for(UNKNOWN_TOPIC_OR_PARTITION)))
                continue
            code = NONE
            for partition in sorted(held.get(info.topic_id, ())):
                result = await self._persister.delete(
                    SharePartitionKey(group_id, info.topic_id, partition))
                code = code or result
            out.topics.append(TopicResult(name, info.topic_id, code, message_for(code)))
        return out

    # DeleteGroups ----------------------------------------------------------------------------
    async def delete_group_state(self, group_id: str) -> int:
        """Before DeleteGroups removes an Empty share group, its share state goes (Kafka's
        deleteShareGroups: the persister first, then the group's tombstones). NONE for any
        other group, which the group coordinator answers for; else the deletion's error."""
        code, _message, group = await self._group(group_id) if group_id else (1, None, None)
        if code != NONE or group is None or group.group_state != "Empty":
            return NONE
        keys = {SharePartitionKey(group_id, t, p) for t, ps in group.initialized.items()
                for p in ps}
        keys.update(await self._group_keys(group_id))
        result = NONE
        for key in sorted(keys, key=lambda k: (str(k.topic_id), k.partition)):
            result = result or await self._persister.delete(key)
        return result
