"""Broker-wide bounds on connections and on the response bytes they leave unread.

Kafka's ``max.connections`` and ``max.connections.per.ip`` (both default 2147483647, no limit):
a connection over either is closed as soon as it is accepted, with one log line a while (Kafka
closes a connection over the per-IP limit the same way; over ``max.connections`` Kafka's
acceptor waits for a slot instead, which an event loop cannot do without stalling every
listener).

``queued.max.response.bytes`` bounds the responses one connection leaves unread (reading stops
past it). ``queued.max.response.total.bytes`` bounds them for the whole broker: while the
connections' unsent bytes add up to more, a connection that has unsent bytes reads no further
request until its client reads or the total falls back under the bound; clients that read
their answers keep being served. The broker's buffered responses therefore stay under
``queued.max.response.total.bytes`` plus, for each connection, one response (at most
``fetch.max.bytes`` plus a batch for a Fetch). With ``max.connections`` set, the whole is bounded:
total + max.connections x (fetch.max.bytes + message.max.bytes).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from typing import Any, Protocol

from kafkette.storage.rate_limited_log import RateLimitedLog

log = logging.getLogger("kafkette.connection")
refusals = RateLimitedLog(log)

INT_MAX = 2**31 - 1
RECOUNT_INTERVAL_S = 0.05  # the exact total is summed at most this often
WAKE_INTERVAL_S = 0.1  # paused connections look again this often while over the bound


class Unsent(Protocol):
    def refresh_unsent(self) -> int: ...

    def budget_freed(self) -> None: ...


class ConnectionLimits:
    def __init__(self, config: Any, connections: Iterable[Unsent]) -> None:
        self.max_connections = config.get_int("max.connections")
        self.max_per_ip = config.get_int("max.connections.per.ip")
        self.max_unsent = config.get_int("queued.max.response.total.bytes")
        self._connections = connections
        self.count = 0
        self.per_ip: dict[str, int] = {}
        # Unsent response bytes of every connection, as each last saw its write buffer: an
        # upper bound (buffers only shrink in between), summed exactly when it goes over.
        self.unsent = 0
        self._counted_at = 0.0
        self._waiting: set[Unsent] = set()
        self._wake_handle: asyncio.TimerHandle | None = None

    # Connections -------------------------------------------------------------------------
    def admit(self, ip: str) -> bool:
        """Count a new connection from ``ip``; False (not counted) when a limit refuses it."""
        from_ip = self.per_ip.get(ip, 0)
        if from_ip >= self.max_per_ip:
            refusals.info(("per-ip", ip), "Rejected connection from %s, address already has the "
                          "configured maximum of %d connections (max.connections.per.ip)",
                          ip, self.max_per_ip)
            return False
        if self.count >= self.max_connections:
            refusals.info("max", "Rejected connection from %s: the broker has the configured "
                          "maximum of %d connections (max.connections)", ip, self.max_connections)
            return False
        self.per_ip[ip] = from_ip + 1
        self.count += 1
        return True

    def release(self, ip: str, conn: Unsent, unsent: int) -> None:
        self.count -= 1
        left = self.per_ip.get(ip, 1) - 1
        if left > 0:
            self.per_ip[ip] = left
        else:
            self.per_ip.pop(ip, None)
        self.unsent -= unsent
        self._waiting.discard(conn)

    # Unsent bytes ------------------------------------------------------------------------
    def over(self) -> bool:
        """Whether the connections' unsent response bytes exceed the broker-wide bound."""
        if self.unsent <= self.max_unsent:
            return False
        now = time.monotonic()
        if now - self._counted_at >= RECOUNT_INTERVAL_S:
            self._counted_at = now
            self.unsent = sum(c.refresh_unsent() for c in list(self._connections))
        return self.unsent > self.max_unsent

    def wait(self, conn: Unsent) -> None:
        """``conn`` stopped reading for the bound: tell it when the total is back under."""
        self._waiting.add(conn)
        if self._wake_handle is None:
            self._wake_handle = asyncio.get_running_loop().call_later(WAKE_INTERVAL_S,
                                                                      self._wake)

    def _wake(self) -> None:
        self._wake_handle = None
        self._counted_at = 0.0
        if self.over():
            if self._waiting:
                self._wake_handle = asyncio.get_running_loop().call_later(WAKE_INTERVAL_S,
                                                                          self._wake)
            return
        waiting, self._waiting = self._waiting, set()
        for conn in waiting:
            conn.budget_freed()
