"""One client connection: framing, in-order request processing, response writing.

Requests on one connection are processed one at a time, as Kafka does (it mutes a channel
until its response is sent); a request that waits (long-poll Fetch, parked JoinGroup) holds
back only its own connection. Handlers that answer synchronously take a fast path with no task.

One exception, invisible to the client: a route may declare its API pipelined (broker/routes.py;
OffsetCommit). Its op is applied to the coordinator's memory when it is handled and its future
only waits for the offset record to be durable, so the requests of that API that follow it are
handled meanwhile (the runtime batches their records into one append). Responses still leave in
request order, and any other request is handled only once everything before it is answered: it
sees what the commits before it wrote (reads also wait behind pending writes in the runtime), as
with one request at a time. The connection knows no API by its key: pipelining, memoised
repeats (request_memo) and the answer to an unsupported version are properties of the route.

What a handler may return is listed in ``responses``; framing happens there. A Future (completed
by a callback) needs no task; only other awaitables run as one. A parked JoinGroup/SyncGroup
response (``ParkedResponse``) is written the moment the coordinator completes it, inside the
transition that completes it, as Kafka answers every awaiting member in one pass: a request read
afterwards, on any connection, is never answered first.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from collections import deque
from typing import TYPE_CHECKING, Any, Protocol, cast

from kafkette.protocol.codec import DecodeError, UnencodableResponse, codec
from kafkette.protocol.framing import FrameError, FrameReader
from kafkette.protocol.headers import HeaderError, HeaderParser

from . import request_log, request_memo, request_quota
from .cluster.faults import FaultRegistry
from .connection_limits import ConnectionLimits
from .context import ConnectionClosing, RequestContext
from .registry import ROUTES
from .responses import (
    CLOSE_CONNECTION,
    NO_RESPONSE,
    ParkedResponse,
    SplicedResponse,
    frame_response,
    write_spliced,
)
from .routes import PIPELINED, REPEATS

if TYPE_CHECKING:
    from .security.authenticator import SaslGate
    from .security.listener import ListenerSecurity
    from .services import Services
    from .stats import BrokerStats

log = logging.getLogger("kafkette.connection")

# The first two bytes (the api key) of a request of a pipelined API: see the module docstring.
_PIPELINED_PREFIXES = tuple(struct.pack(">h", key) for key in sorted(PIPELINED))


class ConnectionOwner(Protocol):
    """What a connection needs from the server that accepted it."""

    config: Any
    services: Services
    connections: set[KafkaConnection]
    connection_limits: ConnectionLimits
    faults: FaultRegistry
    stats: BrokerStats
    # the listener's authentication (TLS client certificates, SASL); None: none
    security: ListenerSecurity | None


class KafkaConnection(asyncio.Protocol):
    # _dispatch's per-connection state, made on first use (see _dispatch).
    _header: HeaderParser | None = None
    _memos: dict[int, request_memo.RequestMemo] | None = None
    # A SASL listener's authentication (broker/security/authenticator.py) sees every frame
    # until the connection is authenticated (and while its session expires); None after.
    _gate: SaslGate | None = None
    # _send's one-slot memo: the last small response object framed, and its frame from byte 8
    # (after size and correlation id) on.
    _sent_body: Any = None
    _sent_codec: Any = None
    _sent_size = 0
    _sent_tail = b""

    def __init__(self, broker: ConnectionOwner) -> None:
        self.broker = broker
        config = broker.config
        self._reader = FrameReader(config.get_int("socket.request.max.bytes"))
        # Backpressure (Kafka mutes a channel while its request is handled and its response
        # unsent): reading stops while too many requests or request bytes wait, or while the
        # client leaves too many response bytes unread.
        self._max_queued = max(config.get_int("queued.max.requests"), 1)
        max_bytes = config.get_int("queued.max.request.bytes")
        self._max_queued_bytes = max_bytes if max_bytes > 0 else 1 << 62
        # uvloop takes write-buffer limits as a C int.
        self._max_unsent = min(max(config.get_int("queued.max.response.bytes"), 1), 0x7FFFFFFF)
        self._max_elements = max(config.get_int("request.max.elements"), 1)
        self._queue: deque[bytes] = deque()
        self._queued_bytes = 0
        self._barrier = False  # an unanswered request that is not pipelined: handle no more
        self._paused = False  # reading paused
        self._write_blocked = False  # unsent responses over queued.max.response.bytes
        self._limits = broker.connection_limits
        self._admitted_ip: str | None = None  # counted by the limits (until connection_lost)
        self._unsent = 0  # the write buffer's size when last looked at (the limits sum them)
        self._closed = False
        self._muted = False  # throttled (mute_for): neither read nor handle requests
        self._unmute_at = 0.0
        self._unmute_handle: asyncio.TimerHandle | None = None
        self._mute, self._request_quota = self.mute_for, broker.services.quotas.request
        self._task: asyncio.Task | None = None
        # Handled requests not answered yet, in request order: (correlation id, codec, response
        # or None, future of it or None, perf_counter when read). Only OffsetCommits are handled
        # while it is not empty; a request of any other api ends it and sets _barrier.
        self._waiting: deque[tuple[int, Any, Any, asyncio.Future | None, float]] = deque()
        self._out: list[bytes] = []  # responses ready in this drain, written with one syscall
        self._idle_handle: asyncio.TimerHandle | None = None
        self._idle_ms = broker.config.get_int("connections.max.idle.ms")
        self._last_active = time.monotonic()
        self._started = 0.0  # perf_counter() when the request being processed was read
        self._stats = broker.stats if broker.stats.per_request else None
        self._faults = broker.faults
        self._fault_map = broker.faults.by_api  # empty (falsy) unless a fault is registered
        self._node_id = broker.services.cluster.node_id
        # Several nodes share one group coordinator: it is told which node a request came to.
        self._serve_as = broker.services.cluster.serving_node_setter()
        # isEnabledFor(DEBUG) of the request log, read again at most once a second (_refresh_debug)
        self._debug = False
        self._debug_read_at = -1.0
        self._refresh_debug(time.monotonic())
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.client_host = "/?"
        # the authenticated identity of this connection and the listener it came in on
        self.principal = "User:ANONYMOUS"
        self.listener = "PLAINTEXT"
        # callbacks handlers registered to run when this connection closes
        self.closing = ConnectionClosing()

    @property
    def _busy(self) -> bool:
        """A request is handled but not answered yet."""
        return bool(self._waiting)

    # asyncio.Protocol -------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a stream server's transport (uvloop's need not subclass asyncio.Transport)
        self.transport = stream = cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        if peer:
            self.peer = f"{peer[0]}:{peer[1]}"
            self.client_host = f"/{peer[0]}"
        ip = str(peer[0]) if peer else "?"
        if not self._limits.admit(ip):  # max.connections(.per.ip): refused by closing
            self._closed = True
            stream.abort()
            return
        self._admitted_ip = ip
        self.broker.connections.add(self)
        stream.set_write_buffer_limits(high=self._max_unsent)
        security = self.broker.security
        if security is not None:  # sets the principal, and the gate of a SASL listener
            self._gate = gate = security.on_connect(self, stream)
            if gate is not None:  # Kafka reads at most sasl.server.max.receive.size till then
                self._reader.max_size = min(self._reader.max_size, security.max_receive_size)
        if self._idle_ms > 0:
            self._idle_handle = asyncio.get_running_loop().call_later(
                self._idle_ms / 1000, self._check_idle
            )

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self.broker.connections.discard(self)
        if self._admitted_ip is not None:
            self._limits.release(self._admitted_ip, self, self._unsent)
            self._admitted_ip = None
            self._unsent = 0
        if self._task is not None:
            self._task.cancel()
        if self._idle_handle is not None:
            self._idle_handle.cancel()
        if self._unmute_handle is not None:
            self._unmute_handle.cancel()
        self._queue.clear()
        self._waiting.clear()
        self.closing.run()

    def pause_writing(self) -> None:
        self._write_blocked = True
        self.refresh_unsent()
        self._update_reading()

    def resume_writing(self) -> None:
        self._write_blocked = False
        self.refresh_unsent()
        if not self._barrier:
            self._drain()
        self._update_reading()

    def data_received(self, data: bytes) -> None:
        now = self._last_active = time.monotonic()
        if now - self._debug_read_at >= 1.0:
            self._refresh_debug(now)
        try:
            frames = self._reader.feed(data)
        except FrameError as exc:
            self.close(f"bad frame: {exc}")
            return
        if frames:
            self._queue.extend(frames)
            self._queued_bytes += sum(map(len, frames))
            if not self._barrier:
                self._drain()  # ends with _update_reading
                return
        self._update_reading()

    def _refresh_debug(self, now: float) -> None:
        """Whether the request log is at DEBUG (one line per request): read at most once a
        second, not per request, so a level change reaches open connections within a second."""
        self._debug_read_at = now
        self._debug = _request_log.isEnabledFor(logging.DEBUG)

    def _update_reading(self) -> None:
        """Pause or resume reading from the socket as the queues and the write buffer say."""
        if self._closed or self.transport is None:
            return
        # Pipelined requests still unanswered count as queued, but for the one in process.
        queued = len(self._queue) + max(len(self._waiting) - 1, 0)
        full = (self._write_blocked or self._muted or queued >= self._max_queued
                or self._queued_bytes >= self._max_queued_bytes)
        if not full and self._unsent and self._held_by_budget():
            full = True
        if full and not self._paused:
            self._paused = True
            self.transport.pause_reading()
        elif self._paused and not full:
            self._paused = False
            self.transport.resume_reading()

    def mute_for(self, ms: int) -> None:
        """Neither read nor handle this client's requests for ``ms`` milliseconds (a quota's
        throttle time: Kafka mutes the channel). Responses already due are still written; a
        longer mute during one extends it."""
        if ms <= 0 or self._closed:
            return
        loop = asyncio.get_running_loop()
        until = loop.time() + ms / 1000
        if self._muted and until <= self._unmute_at:
            return
        if self._unmute_handle is not None:
            self._unmute_handle.cancel()
        self._muted = True
        self._unmute_at = until
        self._unmute_handle = loop.call_at(until, self._unmute)
        self._update_reading()

    def _unmute(self) -> None:
        self._muted = False
        self._unmute_handle = None
        if self._queue and not self._barrier:
            self._drain()  # ends with _update_reading
        else:
            self._update_reading()

    # Request processing -----------------------------------------------------------------
    def _drain(self) -> None:
        queue = self._queue
        waiting = self._waiting
        while queue and not self._closed and not self._write_blocked and not self._barrier \
                and not self._muted:
            if self._unsent and self._held_by_budget():
                break  # answered once the broker's unsent bytes are back under their bound
            frame = queue[0]
            if waiting and not frame.startswith(_PIPELINED_PREFIXES):
                break  # handled once every request before it is answered
            queue.popleft()
            self._queued_bytes -= len(frame)
            outcome = self._dispatch(frame)
            if outcome is None:
                if self._closed:
                    return
                continue  # consumed by the authentication gate
            corr, api_codec, result = outcome
            kind = _RESULT_KINDS.get(type(result))
            if kind is None:
                kind = _result_kind(type(result))
            if kind is _PLAIN:
                if waiting:
                    self._wait(corr, api_codec, result, None)
                elif result is self._sent_body and api_codec is self._sent_codec \
                        and self._stats is None:
                    # _send's memo case, inline: a steady heartbeat's answer
                    self._out.append(_SIZE_CORR.pack(self._sent_size, corr) + self._sent_tail)
                else:
                    self._send(corr, api_codec, result)
                continue
            if kind is _FUTURE:
                # A pipelined API's future waits for durability only: keep handling requests
                # behind it. Anything else waits for its answer before the next one.
                if api_codec.api_key not in PIPELINED:
                    self._barrier = True
                self._wait(corr, api_codec, None, result)
                continue
            self._barrier = True  # another awaitable: run as a task
            self._task = asyncio.ensure_future(result)
            self._wait(corr, api_codec, None, self._task)
        self._flush()
        self._update_reading()

    def _wait(self, corr: int, api_codec: Any, result: Any, fut: asyncio.Future | None) -> None:
        """Queue a response behind the unanswered ones (``fut`` gives it when done)."""
        waiting = self._waiting
        waiting.append((corr, api_codec, result, fut, self._started))
        if len(waiting) == 1 and fut is not None:
            if type(fut) is ParkedResponse:
                fut.add_listener(self._parked_answered)
            else:
                fut.add_done_callback(self._answered)

    def _answered(self, _fut: asyncio.Future | None = None) -> None:
        """The first unanswered request has its response (a callback in its own loop turn):
        send every response ready, then handle what waited behind them."""
        if self._send_answered():
            self._drain()

    def _parked_answered(self, fut: asyncio.Future) -> None:
        """A parked response is completed: called synchronously by whatever completed it (a
        coordinator transition, inside another connection's request or the runtime's flush).
        Its frame, and those ready behind it, are written now, so nothing read afterwards is
        answered first; the requests queued behind it are handled in a later loop turn, never
        re-entrantly inside the completer."""
        if not self._send_answered():
            return
        if self._queue and not self._barrier:
            fut.get_loop().call_soon(self._drain)
        else:
            self._update_reading()

    def _send_answered(self) -> bool:
        """Send, in order and with one socket write, every response ready at the head of the
        unanswered ones; False if a handler failed (the connection is closed)."""
        waiting = self._waiting
        while waiting:
            corr, api_codec, result, fut, started = waiting[0]
            if fut is not None:
                if not fut.done():
                    if type(fut) is ParkedResponse:
                        fut.add_listener(self._parked_answered)
                    else:
                        fut.add_done_callback(self._answered)
                    break
                try:
                    result = fut.result()
                except BaseException:  # noqa: BLE001 - cancelled or failed: logged, closed
                    waiting.clear()
                    self._barrier = False
                    if not self._closed:
                        log.error("handler for api %d failed; closing %s", api_codec.api_key,
                                  self.peer,
                                  exc_info=None if fut.cancelled() else fut.exception())
                        self.close(None)
                    return False
                if fut is self._task:
                    self._task = None
            waiting.popleft()
            self._started = started
            self._send(corr, api_codec, result)
        if not waiting:
            self._barrier = False
        self._flush()
        return True

    def _dispatch(self, frame: bytes) -> tuple[int, Any, Any] | None:
        gate = self._gate
        if gate is not None:  # not authenticated yet (or a session that expires)
            verdict = gate.admit(frame)
            if verdict is not True:
                return verdict  # answered by the gate, or consumed (None)
        if self._stats is not None:  # latency is measured only for the admin server's metrics
            self._started = time.perf_counter()
        if len(frame) < 8:
            self.close(f"bad request header: request header truncated ({len(frame)} bytes)")
            return None
        key, version, corr = _PEEK.unpack_from(frame)
        # A repeat of the last request of a hot API (a heartbeat: byte-identical but for the
        # correlation id; a commit of the same partitions: but for its offsets too) reuses its
        # decoded header, body and context (see request_memo).
        # A fault injected for the api needs the decoded request: no windowed repeat then.
        faulted = self._fault_map and key in self._fault_map
        memos = self._memos
        memo = memos.get(key) if memos is not None else None
        if memo is not None and memo.version == version and memo.size == len(frame) \
                and frame.startswith(memo.tail, 8) \
                and (memo.rest is None or (not faulted and memo.rest_matches(frame))):
            api_codec = memo.api_codec
            ctx = memo.ctx
            ctx.correlation_id = corr
            handler = memo.handler
            body = memo.body if memo.rest is None else memo.values(frame)
        else:
            route = ROUTES.get(key)
            if route is None:
                self.close(f"unknown api key {key} (version {version})")
                return None
            if not route.min_accepted <= version <= route.max_version:
                refuse = route.refuse_version
                if refuse is not None:  # ApiVersions: answered so the client can downgrade
                    refusal_codec, refusal = refuse()
                    return corr, refusal_codec, refusal
                self.close(f"unsupported version {version} of api key {key}")
                return None
            api_codec = codec(key, version)
            parser = self._header
            if parser is None:
                parser = self._header = HeaderParser()
            try:
                client_id, offset = parser.parse(frame, api_codec.flexible)
                body = api_codec.decode(frame, offset, self._max_elements)
            except (HeaderError, DecodeError) as exc:
                self.close(f"undecodable api {key} v{version} request: {exc}")
                return None
            # positional: keyword arguments cost a slots dataclass twice as much to build
            ctx = RequestContext(key, version, corr, client_id, self.client_host,
                                 self.broker.services, None, self.principal, self.listener,
                                 self.closing, self._mute)
            handler = route.handler
            if (route.identical_repeats or key in REPEATS) and len(frame) <= _MEMO_MAX_FRAME:
                memo = self._memo_of(route.identical_repeats, key, version, frame, api_codec,
                                     body, ctx, handler)
                if memos is None:
                    memos = self._memos = {}
                memos[key] = memo
                if memo.rest is not None and not faulted:
                    handler = memo.handler  # the plan just made runs this request too
                    body = memo.values(frame)
        if faulted:  # fault injection (broker/cluster/faults.py)
            handler = self._faults.handler_for(key, self._node_id, handler)
        if self._serve_as is not None:
            self._serve_as(self._node_id)
        if self._request_quota.enabled:  # a request_percentage is set: see request_quota
            handler = request_quota.metered(handler)
        try:  # DEBUG: one line a request
            result = request_log.handle(handler, ctx, body) if self._debug else handler(ctx, body)
        except Exception:
            log.exception("handler for api %d v%d failed; closing %s", key, version, self.peer)
            self.close(None)
            return None
        return corr, api_codec, result

    @staticmethod
    def _memo_of(identical: bool, key: int, version: int, frame: bytes, api_codec: Any,
                 body: Any, ctx: RequestContext, handler: Any) -> request_memo.RequestMemo:
        """The memo of a hot API's request, if it can have one (see request_memo)."""
        if not identical:
            values, runner = REPEATS[key](ctx, body)
            windows = request_memo.windows_of(frame, values)
            if windows is not None:
                return request_memo.RequestMemo(version, frame, api_codec, None, ctx, runner,
                                                windows)
            # the fields are not found: only an identical repeat is recognised
        return request_memo.RequestMemo(version, frame, api_codec, body, ctx, handler)

    def _send(self, corr: int, api_codec: Any, result: Any) -> None:
        if self._stats is not None:
            self._stats.request_done(api_codec, self._started, result)
        if result is NO_RESPONSE or self._closed or self.transport is None:
            return
        if result is CLOSE_CONNECTION:
            self._flush()
            log.info("closing connection from %s after api %d request %d", self.peer,
                     api_codec.api_key, corr)
            self.close(None)
            return
        if result is self._sent_body and api_codec is self._sent_codec:
            # The same (immutable) response object as the last one: its frame but for the
            # correlation id (a steady heartbeat's answer).
            self._out.append(_SIZE_CORR.pack(self._sent_size, corr) + self._sent_tail)
            return
        if type(result) is SplicedResponse:
            self._flush()
            write_spliced(self.transport, api_codec, corr, result)
            self.refresh_unsent()
            return
        try:
            data = frame_response(api_codec, corr, result)
        except UnencodableResponse as exc:
            self.close(f"api {api_codec.api_key} v{api_codec.version} response cannot be "
                       f"encoded: {exc}")
            return
        except Exception:
            log.exception("encoding api %d v%d response failed; closing %s",
                          api_codec.api_key, api_codec.version, self.peer)
            self.close(None)
            return
        if len(data) <= _SENT_MEMO_MAX and type(result) not in _FRAMED_FRESH:
            self._sent_body = result
            self._sent_codec = api_codec
            self._sent_size = len(data) - 4
            self._sent_tail = data[8:]
        self._out.append(data)

    # What the authentication gate calls ---------------------------------------------------
    def send_raw(self, data: bytes) -> None:
        """Write an already framed answer after every response before it."""
        self._out.append(data)
        self._flush()

    def authenticated(self, principal: str, gate: SaslGate | None) -> None:
        """Authenticated as ``principal``; ``gate`` stays only if the session expires."""
        self.principal = principal
        self._gate = gate
        self._reader.max_size = self.broker.config.get_int("socket.request.max.bytes")

    def _flush(self) -> None:
        out = self._out
        transport = self.transport
        if out and transport is not None and not self._closed:
            transport.write(out[0] if len(out) == 1 else b"".join(out))
            out.clear()
            size = transport.get_write_buffer_size()  # 0 unless the client reads slowly
            if size != self._unsent:
                self._limits.unsent += size - self._unsent
                self._unsent = size
            return
        out.clear()

    def refresh_unsent(self) -> int:
        """The response bytes the client has not read yet, as the limits count them."""
        transport = self.transport
        size = transport.get_write_buffer_size() if transport is not None and not self._closed \
            else 0
        if size != self._unsent:
            self._limits.unsent += size - self._unsent
            self._unsent = size
        return size

    def _held_by_budget(self) -> bool:
        """This connection has unread responses while all connections' together exceed
        queued.max.response.total.bytes: it is served no further (the limits wake it)."""
        if self._limits.over():
            self._limits.wait(self)
            return True
        return False

    def budget_freed(self) -> None:
        """The broker-wide unsent bytes are back under their bound: serve and read again."""
        if not self._barrier and self._queue:
            self._drain()  # ends with _update_reading
        else:
            self._update_reading()

    # Lifecycle ---------------------------------------------------------------------------
    def _check_idle(self) -> None:
        idle = time.monotonic() - self._last_active
        if self._waiting or idle * 1000 < self._idle_ms:
            remaining = max(self._idle_ms / 1000 - idle, 0.05)
            self._idle_handle = asyncio.get_running_loop().call_later(remaining, self._check_idle)
            return
        self.close(f"idle for more than connections.max.idle.ms={self._idle_ms}")

    def close(self, reason: str | None) -> None:
        if self._closed:
            return
        self._closed = True
        if reason:
            log.warning("closing connection from %s: %s", self.peer, reason)
        self._queue.clear()
        self._queued_bytes = 0
        if self.transport is not None:
            self.transport.close()


# Hot-path helpers of _dispatch -----------------------------------------------------------------

_PEEK = struct.Struct(">hhi")  # api_key, api_version, correlation_id: common to every header
_request_log = request_log.log
_MEMO_MAX_FRAME = request_memo.MAX_FRAME

_SIZE_CORR = struct.Struct(">ii")  # response frame size, correlation id
_SENT_MEMO_MAX = 256  # responses framed at most this long are remembered by _send

# What _drain does with a handler's result, by its type: send it (a response object, NO_RESPONSE,
# CLOSE_CONNECTION), wait for the future, or run the awaitable as a task.
_PLAIN, _FUTURE, _AWAITABLE = "plain", "future", "awaitable"
_RESULT_KINDS: dict[type, str] = {}
# Responses whose frame is not a function of the object alone (none today; fast encoders with
# their own framing would be listed here).
_FRAMED_FRESH: frozenset[type] = frozenset()


def _result_kind(cls: type) -> str:
    kind = (_FUTURE if issubclass(cls, asyncio.Future)
            else _AWAITABLE if hasattr(cls, "__await__") else _PLAIN)
    _RESULT_KINDS[cls] = kind
    return kind
