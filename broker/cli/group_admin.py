"""The admin calls behind ``kafkette groups``, each sent where Kafka's Admin client sends it:
group calls to the group's coordinator (found with FindCoordinator, found again and retried when
it moved or is loading), ListOffsets to each partition's leader, ListGroups to every broker.
So the tool works against one broker, ``kafkette serve --nodes N`` and a multi-broker Kafka.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from .admin_client import COORDINATOR_ERRORS, AdminClient, AdminError, CoordinatorMoved
from .node_connections import NodeConnections

T = TypeVar("T")
RETRIES, BACKOFF_S = 10, 0.2


class ClusterAdmin(NodeConnections):
    def __init__(self, bootstrap: str, timeout: float = 15, client_id: str = "kafkette-admin",
                 security: Mapping[str, str] | None = None):
        """``security``: the ``--command-config`` login, used on every connection (the
        bootstrap one and each coordinator's and leader's)."""
        super().__init__(bootstrap, timeout, client_id, security)
        self._coordinators: dict[str, tuple[int, str, int]] = {}

    # Connections --------------------------------------------------------------------------
    def coordinator(self, group: str) -> tuple[str, int, int]:
        """(host, port, node id) of the group's coordinator."""
        if group not in self._coordinators:
            self._coordinators[group] = self.bootstrap.find_coordinator(group)
        node, host, port = self._coordinators[group]
        return host, port, node

    def _on_coordinator(self, group: str, call: Callable[[AdminClient], T]) -> T:
        for attempt in range(RETRIES):
            host, port, node = self.coordinator(group)
            try:
                return call(self.connect(node, host, port))
            except CoordinatorMoved:
                if attempt == RETRIES - 1:
                    raise
                self._coordinators.pop(group, None)
                time.sleep(BACKOFF_S)
        raise AssertionError("unreachable")

    # Groups -------------------------------------------------------------------------------
    def list_groups(self) -> list[tuple[str, str, str, str]]:
        """(group id, protocol type, state, type) of every group of every broker."""
        rows: dict[str, tuple[str, str, str, str]] = {}
        for node in sorted(self.addresses()):
            for row in self.node(node).list_typed_groups():
                rows[row[0]] = row
        return sorted(rows.values())

    def describe_group(self, group: str) -> Any:
        return self._on_coordinator(group, lambda c: c.describe_group(group))

    def describe_consumer_group(self, group: str) -> Any | None:
        return self._on_coordinator(group, lambda c: c.describe_consumer_group(group))

    def committed(self, group: str) -> dict[tuple[str, int], int]:
        return self._on_coordinator(group, lambda c: c.committed(group))

    def commit(self, group: str, offsets: dict[tuple[str, int], int]) -> dict[tuple[str, int], str]:
        def call(client: AdminClient) -> dict[tuple[str, int], str]:
            errors = client.commit(group, offsets)
            moved = [e for e in errors.values() if e in COORDINATOR_ERRORS]
            if moved:
                raise CoordinatorMoved(f"OffsetCommit {group!r} failed: {moved[0]}")
            return errors
        return self._on_coordinator(group, call)

    def delete_offsets(self, group: str, tps: Iterable[tuple[str, int]]
                       ) -> tuple[str, dict[tuple[str, int], str]]:
        wanted = list(tps)

        def call(client: AdminClient) -> tuple[str, dict[tuple[str, int], str]]:
            top, results = client.delete_offsets(group, wanted)
            if top in COORDINATOR_ERRORS:
                raise CoordinatorMoved(f"OffsetDelete {group!r} failed: {top}")
            return top, results
        return self._on_coordinator(group, call)

    def delete_groups(self, groups: Sequence[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for group in groups:
            def call(client: AdminClient, group: str = group) -> str:
                error = client.delete_groups([group])[group]
                if error in COORDINATOR_ERRORS:
                    raise CoordinatorMoved(f"DeleteGroups {group!r} failed: {error}")
                return error
            out[group] = self._on_coordinator(group, call)
        return out

    # Topics -------------------------------------------------------------------------------
    def partitions(self, topics: Iterable[str]) -> dict[str, int]:
        return self.bootstrap.partitions(topics)

    def list_offsets(self, tps: Iterable[tuple[str, int]], timestamp: int
                     ) -> dict[tuple[str, int], int]:
        """ListOffsets of each partition, asked of its leader."""
        wanted = list(tps)
        leaders = self.bootstrap.leaders(t for t, _ in wanted)
        by_leader: dict[int, list[tuple[str, int]]] = {}
        for tp in wanted:
            leader = leaders.get(tp, -1)
            if leader < 0:
                raise AdminError(f"ListOffsets {tp[0]}-{tp[1]} failed: LEADER_NOT_AVAILABLE")
            by_leader.setdefault(leader, []).append(tp)
        out: dict[tuple[str, int], int] = {}
        for leader, part in sorted(by_leader.items()):
            out.update(self.node(leader).list_offsets(part, timestamp))
        return out
