"""Who this node is: node id, cluster id and the address clients are told to use."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    node_id: int
    cluster_id: str
    # The advertised (host, port); known only once the listener is bound.
    address: Callable[[], tuple[str, int]]

    @property
    def advertised(self) -> tuple[str, int]:
        return self.address()
