"""Topic catalog: names, ids, partition counts and configs.

PLACEHOLDER (spine): in-memory only. The storage issue replaces this with the durable
LogManager that also owns the partition logs; keep these method names.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    partitions: int
    configs: Mapping[str, str] = field(default_factory=dict)
    internal: bool = False


class TopicExistsError(Exception):
    pass


class LogManager:
    def __init__(self, config: Mapping[str, str]) -> None:
        self._config = config
        self._topics: dict[str, TopicInfo] = {}

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    def topics(self) -> list[TopicInfo]:
        return list(self._topics.values())

    def topic(self, name: str) -> TopicInfo | None:
        return self._topics.get(name)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        return next((t for t in self._topics.values() if t.topic_id == topic_id), None)

    async def create_topic(self, name: str, partitions: int,
                           configs: Mapping[str, str] | None = None,
                           internal: bool = False) -> TopicInfo:
        if name in self._topics:
            raise TopicExistsError(name)
        info = TopicInfo(name, uuid.uuid4(), partitions, dict(configs or {}), internal)
        self._topics[name] = info
        return info

    async def delete_topic(self, name: str) -> None:
        self._topics.pop(name, None)
