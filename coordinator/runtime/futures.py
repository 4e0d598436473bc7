"""The futures the runtime hands out: ``DurableFuture`` for a write's answer, ``ParkedFuture`` for
a parked request's answer that a state machine completes at a transition."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger("kafkette.coordinator")


class DurableFuture(asyncio.Future):
    """The future ``write`` returns: its op is applied to the shard already; it waits only for
    records (its own or earlier ones) to be durable. A connection may handle the next
    OffsetCommit meanwhile (broker/connection.py); any other future means "not handled yet"."""

    __slots__ = ()


class ParkedFuture(asyncio.Future):
    """The future of a parked request's answer (``new_future``): completed by the state machine
    at a transition (a join phase ends, an assignment is stored), as Kafka completes every
    awaiting member in one pass. Besides asyncio's callbacks, which run in a later loop turn, it
    has listeners that run synchronously inside ``set_result`` / ``set_exception`` / ``cancel``:
    a connection that writes the answer from a listener has it on the wire before anything read
    after the transition is answered. A listener must not run ops on the runtime (it is called
    from inside one); its exceptions are logged, never raised into the state machine."""

    _listeners: list[Callable[[asyncio.Future], None]] | None = None

    def add_listener(self, listener: Callable[[asyncio.Future], None]) -> None:
        """Call ``listener(self)`` when the future completes; at once if it is done already."""
        if self.done():
            _run_listener(listener, self)
        elif self._listeners is None:
            self._listeners = [listener]
        else:
            self._listeners.append(listener)

    def set_result(self, result: Any) -> None:
        super().set_result(result)
        self._completed()

    def set_exception(self, exception: Any) -> None:
        super().set_exception(exception)
        self._completed()

    def cancel(self, msg: Any = None) -> bool:
        cancelled = super().cancel(msg)
        if cancelled:
            self._completed()
        return cancelled

    def _completed(self) -> None:
        listeners = self._listeners
        if listeners:
            self._listeners = None
            for listener in listeners:
                _run_listener(listener, self)


def _run_listener(listener: Callable[[asyncio.Future], None], fut: asyncio.Future) -> None:
    try:
        listener(fut)
    except Exception:
        log.exception("a parked answer's listener failed")
