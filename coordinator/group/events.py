"""The coordinator's own account of what happens to its groups, for people watching it live.

A shard ``emit``s an event when a member joins, leaves or misses its session, when a rebalance
starts, when a generation forms and when a rebalance completes. Each group keeps its latest
events in a bounded ring, stamped with the coordinator's clock and numbered in one sequence, and
listeners (the admin console's live timeline) are called synchronously on the event loop.
Rebalance counts and durations and offset-commit counts are kept as plain numbers, read at
scrape time by the metrics. Nothing here does I/O.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

log = logging.getLogger("kafkette.coordinator.events")

EVENTS_PER_GROUP = 200
# Groups whose events are kept; past that the group that was quiet longest is forgotten
# (a deleted group's events go that way too).
MAX_GROUPS = 10_000

# Event kinds (the ``kind`` of an emit).
MEMBER_JOINED = "member-joined"
STATIC_MEMBER_REPLACED = "static-member-replaced"
MEMBER_LEFT = "member-left"
SESSION_EXPIRED = "session-expired"
SYNC_EXPIRED = "sync-expired"
REBALANCE_STARTED = "rebalance-started"
GENERATION = "generation"
REBALANCE_COMPLETED = "rebalance-completed"

# One sequence across every log of the process, so a reader can ask for "events after N".
_sequence = itertools.count(1)


@dataclass(frozen=True, slots=True)
class GroupEvent:
    seq: int
    at_ms: int
    group_id: str
    kind: str
    details: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "at_ms": self.at_ms, "group_id": self.group_id,
                "kind": self.kind, **self.details}


@dataclass(slots=True)
class RebalanceStats:
    """Rebalances of one group: completed count, their summed and last duration."""

    count: int = 0
    total_ms: int = 0
    last_ms: int | None = None
    started_at_ms: int | None = None  # set while a rebalance is under way


Listener = Callable[[GroupEvent], None]


class _Now(Protocol):
    """Where event times come from (a coordinator context or its clock)."""

    def now_ms(self) -> int: ...


@dataclass(slots=True)
class GroupEventLog:
    clock: _Now
    per_group: int = EVENTS_PER_GROUP
    max_groups: int = MAX_GROUPS
    events: dict[str, deque[GroupEvent]] = field(default_factory=dict)  # least recent first
    rebalances: dict[str, RebalanceStats] = field(default_factory=dict)
    commits: dict[str, int] = field(default_factory=dict)
    listeners: list[Listener] = field(default_factory=list)
    created_at: float = field(default_factory=time.monotonic)
    load_seconds: float | None = None

    def emit(self, group_id: str, kind: str, **details: Any) -> None:
        now = self.clock.now_ms()
        if kind in (REBALANCE_STARTED, REBALANCE_COMPLETED, GENERATION):
            duration = self._track_rebalance(group_id, kind, now, details)
            if duration is not None:
                details["duration_ms"] = duration
        event = GroupEvent(next(_sequence), now, group_id, kind, details)
        ring = self.events.pop(group_id, None)
        if ring is None:
            ring = deque(maxlen=self.per_group)
            if len(self.events) >= self.max_groups:
                self._forget(next(iter(self.events)))
        self.events[group_id] = ring  # (re)inserted last: dicts keep insertion order
        ring.append(event)
        for listener in list(self.listeners):
            try:
                listener(event)
            except Exception:
                log.exception("group event listener failed; removing it")
                self.unsubscribe(listener)

    def _track_rebalance(self, group_id: str, kind: str, now: int,
                         details: dict[str, Any]) -> int | None:
        """Update the group's rebalance numbers; the duration of a rebalance this event ends."""
        stats = self.rebalances.get(group_id)
        if stats is None:
            stats = self.rebalances[group_id] = RebalanceStats()
        if kind == REBALANCE_STARTED:
            if stats.started_at_ms is None:
                stats.started_at_ms = now
            return None
        # A rebalance ends when the group is Stable again, or when it formed an empty generation.
        if (kind == GENERATION and details.get("members")) or stats.started_at_ms is None:
            return None
        duration = max(now - stats.started_at_ms, 0)
        stats.started_at_ms = None
        stats.count += 1
        stats.total_ms += duration
        stats.last_ms = duration
        return duration

    def _forget(self, group_id: str) -> None:
        self.events.pop(group_id, None)
        self.rebalances.pop(group_id, None)
        self.commits.pop(group_id, None)

    def committed(self, group_id: str, count: int) -> None:
        """Count offsets committed by a group (one OffsetCommit of ``count`` partitions)."""
        commits = self.commits
        if group_id not in commits and len(commits) >= self.max_groups:
            del commits[next(iter(commits))]
        commits[group_id] = commits.get(group_id, 0) + count

    def loaded(self) -> None:
        """The shard finished replaying its log: its load time ends now."""
        self.load_seconds = time.monotonic() - self.created_at

    def recent(self, group_id: str, after_seq: int = 0) -> list[GroupEvent]:
        ring = self.events.get(group_id)
        if not ring:
            return []
        return [e for e in ring if e.seq > after_seq]

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` with every event from now on; returns the unsubscribe function."""
        self.listeners.append(listener)
        return lambda: self.unsubscribe(listener)

    def unsubscribe(self, listener: Listener) -> None:
        if listener in self.listeners:
            self.listeners.remove(listener)
