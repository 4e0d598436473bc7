"""Share sessions (Kafka's ShareSessionCache): one per (group, member) on each broker.

A ShareFetch with epoch 0 opens a session (replacing the member's previous one) holding the
partitions it names; each later request must carry the next epoch (1, 2, ... wrapping to 1 after
INT32_MAX) and may add partitions (Topics) or drop them (ForgottenTopicsData). Epoch -1 closes
it. The cache holds at most ``max_sessions``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

NONE = 0
SHARE_SESSION_NOT_FOUND = 122
INVALID_SHARE_SESSION_EPOCH = 123
SHARE_SESSION_LIMIT_REACHED = 133

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
_INT32_MAX = 2**31 - 1

TopicPartition = tuple[uuid.UUID, int]


@dataclass(eq=False, slots=True)
class ShareSession:
    group_id: str
    member_id: str
    next_epoch: int = 1
    # the partitions fetched, in the order they were added (dict as an ordered set)
    partitions: dict[TopicPartition, None] = field(default_factory=dict)

    def add(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self.partitions.setdefault(tp, None)

    def forget(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self.partitions.pop(tp, None)

    def bump(self) -> None:
        self.next_epoch = 1 if self.next_epoch >= _INT32_MAX else self.next_epoch + 1


class ShareSessionCache:
    def __init__(self, max_sessions: int = 2000) -> None:
        self.max_sessions = max_sessions
        self._sessions: dict[tuple[str, str], ShareSession] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.get((group_id, member_id))

    def open(self, group_id: str, member_id: str) -> ShareSession | None:
        """A new session for the member (its old one, if any, is dropped without releasing its
        records, as Kafka does); None when the cache is full."""
        key = (group_id, member_id)
        if key not in self._sessions and len(self._sessions) >= self.max_sessions:
            return None
        session = self._sessions[key] = ShareSession(group_id, member_id)
        return session

    def has_group(self, group_id: str) -> bool:
        return any(g == group_id for g, _ in self._sessions)

    def check(self, group_id: str, member_id: str, epoch: int
              ) -> tuple[int, ShareSession | None]:
        """The session a request with ``epoch`` (not 0) continues: (error code, session)."""
        session = self._sessions.get((group_id, member_id))
        if session is None:
            return SHARE_SESSION_NOT_FOUND, None
        if epoch != FINAL_EPOCH and epoch != session.next_epoch:
            return INVALID_SHARE_SESSION_EPOCH, None
        return NONE, session

    def remove(self, session: ShareSession) -> bool:
        """Drop ``session`` if it is still the member's; whether it was."""
        key = (session.group_id, session.member_id)
        if self._sessions.get(key) is session:
            del self._sessions[key]
            return True
        return False
