"""The coordinator's view of the broker's topics, for the consumer group protocol: name -> (id,
partition count), id -> name, every name (regex resolution), and a metadata version the broker
bumps whenever a topic is created, deleted or grows (stale regex resolutions and subscription
metadata are recomputed on the next heartbeat)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable


class TopicView:
    def __init__(self, lookup: Callable[[str], tuple[uuid.UUID, int] | None] | None = None,
                 name_of: Callable[[uuid.UUID], str | None] | None = None,
                 names: Callable[[], Iterable[str]] | None = None) -> None:
        self.lookup = lookup or (lambda _name: None)
        self.name_of = name_of or (lambda _id: None)
        self.names = names or (lambda: ())
        self.metadata_version = 0

    def changed(self) -> None:
        self.metadata_version += 1
