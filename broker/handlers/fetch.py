"""Fetch (key 1), versions 4-17: long-poll for data and send log bytes straight from the files.

The body is encoded here around the records, which stay in their segment files: the answer is a
``SplicedResponse`` that the connection writes with ``os.sendfile``. Fetch sessions are not kept:
every response carries session id 0, which clients treat as "no session, send full fetches".
"""

from __future__ import annotations

import asyncio
import struct
import uuid
from typing import Any

from kafkette.protocol.varint import encode_uvarint
from kafkette.storage.log_read import LogSlice

from ..context import RequestContext
from ..responses import SplicedResponse
from ..routes import api
from ..security.acl import CLUSTER_NAME, AclOperation, ResourceType
from ..services.record_service import FetchSession, PartitionRead
from ._quota import fetch_under_quota

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_PART_FIXED = struct.Struct(">ihqqq")  # index, error, high watermark, last stable, log start
_ABORTED = struct.Struct(">qq")  # producer id, first offset
_FETCH_SESSION_ID_NOT_FOUND = 70


class _Body:
    """Encodes one Fetch response version; records are kept as LogSlices."""

    def __init__(self, version: int) -> None:
        self.flexible = version >= 12
        self.parts: list[bytes | LogSlice] = []
        self.buf = bytearray()
        self.size = 0

    def raw(self, data: bytes) -> None:
        self.buf += data

    def array_len(self, n: int) -> None:
        self.buf += encode_uvarint(n + 1) if self.flexible else _I32.pack(n)

    def string(self, s: str) -> None:
        b = s.encode()
        self.buf += (encode_uvarint(len(b) + 1) if self.flexible else _I16.pack(len(b))) + b

    def records(self, slice_: LogSlice | None) -> None:
        n = 0 if slice_ is None else slice_.size
        self.buf += encode_uvarint(n + 1) if self.flexible else _I32.pack(n)
        if slice_ is not None and n:
            self._flush()
            self.parts.append(slice_)
            self.size += n

    def tags(self) -> None:
        if self.flexible:
            self.buf.append(0)

    def _flush(self) -> None:
        if self.buf:
            self.parts.append(bytes(self.buf))
            self.size += len(self.buf)
            self.buf = bytearray()

    def finish(self) -> SplicedResponse:
        self._flush()
        return SplicedResponse(self.parts, self.size)


def _encode(version: int, keys: list[Any], reads: list[list[PartitionRead]],
            read_committed: bool) -> SplicedResponse:
    b = _Body(version)
    b.raw(_I32.pack(0))  # throttle time
    if version >= 7:
        b.raw(_I16.pack(0) + _I32.pack(0))  # error code, session id (no session)
    b.array_len(len(keys))
    for key, parts in zip(keys, reads, strict=True):
        if version >= 13:
            b.raw(key.bytes if isinstance(key, uuid.UUID) else bytes(16))
        else:
            b.string(key)
        b.array_len(len(parts))
        for r in parts:
            hw = r.high_watermark
            lso = hw if r.last_stable_offset < 0 else r.last_stable_offset
            b.raw(_PART_FIXED.pack(r.partition, r.error.value, hw, lso,
                                   r.log_start_offset)[: 22 if version < 5 else 30])
            if read_committed:
                aborted = r.aborted or ()
                b.array_len(len(aborted))
                for txn in aborted:
                    b.raw(_ABORTED.pack(txn.producer_id, txn.first_offset))
                    b.tags()
            else:
                b.raw(b"\x00" if b.flexible else b"\xff\xff\xff\xff")  # null aborted txns
            if version >= 11:
                b.raw(_I32.pack(-1))  # preferred read replica
            b.records(r.records)
            b.tags()
        b.tags()
    b.tags()
    return b.finish()


@api(1, 4, 17)
def handle_fetch(ctx: RequestContext, req: Any):
    version = ctx.api_version
    if getattr(req, "session_id", 0) != 0:
        return _session_not_found(version)
    if version >= 13:
        keys = [t.topic_id for t in req.topics]
        wanted = [(None, t.topic_id, t.partitions) for t in req.topics]
    else:
        keys = [t.topic for t in req.topics]
        wanted = [(t.topic, None, t.partitions) for t in req.topics]
    max_bytes = min(req.max_bytes, ctx.services.records.fetch_max_bytes)
    quotas = ctx.services.quotas
    # some client quota is set: this client's may throttle it (never a follower's, as in Kafka)
    if quotas.active and _replica_id(req) < 0:
        return fetch_under_quota(ctx, quotas, max_bytes,
                                 lambda limit: _fetch(ctx, req, keys, wanted, limit),
                                 lambda throttle_ms: _throttled(version, throttle_ms))
    return _fetch(ctx, req, keys, wanted, max_bytes)


def _fetch(ctx: RequestContext, req: Any, keys: list[Any], wanted: list[Any],
           max_bytes: int) -> Any:
    version = ctx.api_version
    # ctx.authorizing, inlined: the hot path
    session = ctx.services.records.fetch(
        wanted, None if ctx.services.acls is None else _readable(ctx, req))
    read_committed = getattr(req, "isolation_level", 0) == 1

    def answer() -> tuple[SplicedResponse, int, bool]:
        reads, total, error = session.read(max_bytes, read_committed)
        return _encode(version, keys, reads, read_committed), total, error

    response, total, error = answer()
    max_wait = req.max_wait.total_seconds()
    if error or total >= req.min_bytes or max_wait <= 0 or not session.logs:
        session.sent()
        return response
    return _long_poll(session, answer, max_wait, req.min_bytes)


def _replica_id(req: Any) -> int:
    """The fetching replica's id; -1 for a consumer."""
    replica_id = getattr(req, "replica_id", -1)
    if getattr(req, "replica_state", None) is not None:
        replica_id = req.replica_state.replica_id if replica_id < 0 else replica_id
    return replica_id


def _readable(ctx: RequestContext, req: Any) -> Any:
    """Which topics this Fetch may read: a consumer needs READ on each; a follower (replica id
    >= 0) CLUSTER_ACTION on the cluster, for all of them."""
    if _replica_id(req) >= 0:
        allowed = ctx.authorize(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)
        return lambda _name: allowed
    return lambda name: ctx.authorize(AclOperation.READ, ResourceType.TOPIC, name)


async def _long_poll(session: FetchSession, answer: Any, max_wait: float,
                     min_bytes: int) -> SplicedResponse:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max_wait
    while True:
        await session.wait(deadline - loop.time())
        response, total, error = answer()
        if error or total >= min_bytes or loop.time() >= deadline or session.any_closed:
            session.sent()
            return response


def _throttled(version: int, throttle_ms: int) -> SplicedResponse:
    """The answer to a Fetch over its client's quota: no data, the throttle time (Kafka's
    getThrottledResponse)."""
    b = _Body(version)
    b.raw(_I32.pack(throttle_ms))
    if version >= 7:
        b.raw(_I16.pack(0) + _I32.pack(0))  # error code, session id (no session)
    b.array_len(0)
    b.tags()
    return b.finish()


def _session_not_found(version: int) -> SplicedResponse:
    b = _Body(version)
    b.raw(_I32.pack(0) + _I16.pack(_FETCH_SESSION_ID_NOT_FOUND) + _I32.pack(0))
    b.array_len(0)
    b.tags()
    return b.finish()
