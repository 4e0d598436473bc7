"""A SASL listener's connection until it is authenticated: Kafka's SaslServerAuthenticator.

The connection hands every frame to ``SaslGate.admit`` while it has a gate; the gate answers
ApiVersions through the broker (``PASS``), SaslHandshake (17) and SaslAuthenticate (36) itself,
and closes the connection on anything else, as Kafka does:

* before the handshake: ApiVersions once, then SaslHandshake; another API closes the
  connection without an answer ("Unexpected Kafka request of type X during SASL handshake");
  a second ApiVersions closes it at once;
* after a v1 handshake: SaslAuthenticate frames carry the mechanism's tokens; another API is
  answered with its own error response (ILLEGAL_SASL_STATE) and the connection closed;
* after a v0 handshake (legacy): raw tokens, 4-byte length + bytes, no header, both ways;
* authenticated: the gate is dropped (the connection's hot path is untouched), unless the
  session expires (``connections.max.reauth.ms``, an OAUTHBEARER token's ``exp``): then it stays
  to close the connection at the first request after expiry and to run a re-authentication
  (KIP-368) started by a SaslHandshake.

Every authentication failure is answered after ``connection.failed.authentication.delay.ms``
and the connection then closed; the broker logs one line "Failed authentication with /IP (...)"
(the message the client gets: never a password or token). A closing connection lingers up to a
second for the client to close first, so a client that reads the error only when its socket
closes (kafka-python) still sees it.
"""

from __future__ import annotations

import asyncio
import logging
import re
import struct
import time
from typing import Any, Protocol

from kio.schema.errors import ErrorCode

from kafkette.protocol.codec import DecodeError, codec
from kafkette.protocol.headers import HeaderError, HeaderParser

from .mechanisms import AuthFailure, SaslExchange

log = logging.getLogger("kafkette.security")

PASS = True  # admit(): handle the frame as usual
SASL_HANDSHAKE, API_VERSIONS, SASL_AUTHENTICATE = 17, 18, 36
API_VERSIONS_MAX = 4
_PEEK = struct.Struct(">hhi")
_SIZE = struct.Struct(">i")
_LINGER_S = 1.0
REAUTH_MIN_INTERVAL_S = 1.0  # Kafka re-authenticates at most once a second

# states
INITIAL, HANDSHAKE, AUTHENTICATE, LEGACY, COMPLETE, FAILED = range(6)

class GateSettings(Protocol):
    """The listener's SASL settings (broker/security/listener.py's ListenerSecurity)."""

    mechanisms: tuple[str, ...]
    max_receive_size: int
    failed_delay_ms: int

    def reauth_ms(self, mechanism: str) -> int: ...

    def exchange(self, mechanism: str) -> SaslExchange: ...


class AuthenticatedConnection(Protocol):
    """What the gate needs from its connection."""

    principal: str
    client_host: str  # "/127.0.0.1"

    def send_raw(self, data: bytes) -> None:
        """Write ``data`` (already framed) after every response before it."""

    def close(self, reason: str | None) -> None: ...

    def authenticated(self, principal: str, gate: SaslGate | None) -> None:
        """Authentication (or a re-authentication) succeeded; keep ``gate`` if not None."""


class SaslGate:
    def __init__(self, security: GateSettings, conn: AuthenticatedConnection) -> None:
        self.security = security
        self.conn = conn
        self.state = INITIAL
        self.exchange: SaslExchange | None = None
        self.mechanism: str | None = None
        self.expires_at: float | None = None  # monotonic deadline of the session
        self.reauth_started_at = 0.0
        self.reauthenticating = False
        self._bad_reauth_mechanism: str | None = None
        self._header = HeaderParser()
        self._loop = asyncio.get_running_loop()

    # The connection's hook ---------------------------------------------------------------
    def admit(self, frame: bytes) -> Any:
        """PASS, an answer (correlation id, api codec, response), or None when the frame was
        consumed (the connection may be closing: check its state)."""
        state = self.state
        if state == COMPLETE:
            return self._admit_authenticated(frame)
        if state == FAILED:
            return None  # lingering: read and drop until the client or the timer closes
        if len(frame) > self.security.max_receive_size:
            self._fail(None, "Failing SASL authentication due to invalid receive size")
            return None
        if state == LEGACY:
            return self._legacy_token(frame)
        if len(frame) < 8:
            self._fail(None, "Unexpected client packet during SASL handshake")
            return None
        key, version, corr = _PEEK.unpack_from(frame)
        if state == AUTHENTICATE:
            if key != SASL_AUTHENTICATE:
                return self._unexpected_during_authentication(frame, key, version, corr)
            return self._authenticate(frame, version, corr)
        # INITIAL or HANDSHAKE
        if key == API_VERSIONS:
            if state != INITIAL:
                self.conn.close("Unexpected ApiVersions request received during SASL "
                                "authentication state HANDSHAKE_REQUEST")
                return None
            if 0 <= version <= API_VERSIONS_MAX:  # an unsupported version may be retried
                self.state = HANDSHAKE
            return PASS
        if key == SASL_HANDSHAKE:
            return self._handshake(frame, version, corr)
        self._fail(None, f"Unexpected Kafka request of type {_api_name(key)} during SASL "
                         "handshake.")
        return None

    def _admit_authenticated(self, frame: bytes) -> Any:
        """An authenticated connection whose session expires."""
        key = _PEEK.unpack_from(frame)[0] if len(frame) >= 8 else -1
        now = time.monotonic()
        if key == SASL_HANDSHAKE and now - self.reauth_started_at >= REAUTH_MIN_INTERVAL_S:
            key, version, corr = _PEEK.unpack_from(frame)
            if version >= 1:
                self.reauth_started_at = now
                self.reauthenticating = True
                return self._handshake(frame, version, corr)
        if self.expires_at is not None and now >= self.expires_at:
            self.conn.close("Disconnecting expired channel")
            return None
        return PASS

    # SaslHandshake -------------------------------------------------------------------------
    def _decode(self, frame: bytes, key: int, version: int) -> tuple[Any, Any] | None:
        try:
            api_codec = codec(key, version)
        except Exception:  # noqa: BLE001 - a version kio does not know
            self.conn.close(f"unsupported version {version} of api key {key} during SASL "
                            "authentication")
            return None
        try:
            _client, offset = self._header.parse(frame, api_codec.flexible)
            return api_codec, api_codec.decode(frame, offset, 16)
        except (HeaderError, DecodeError) as exc:
            self.conn.close(f"undecodable api {key} v{version} request during SASL "
                            f"authentication: {exc}")
            return None

    def _handshake(self, frame: bytes, version: int, corr: int) -> Any:
        if version > 1:
            self.conn.close(f"unsupported version {version} of SaslHandshake")
            return None
        decoded = self._decode(frame, SASL_HANDSHAKE, version)
        if decoded is None:
            return None
        api_codec, request = decoded
        enabled = self.security.mechanisms
        mechanism = request.mechanism
        response_type = api_codec.response_type
        if mechanism not in enabled:
            answer = response_type(error_code=ErrorCode.unsupported_sasl_mechanism,
                                   mechanisms=enabled)
            self._fail((corr, api_codec, answer), f"Unsupported SASL mechanism {mechanism}")
            return None
        if self.reauthenticating and mechanism != self.mechanism:
            self._bad_reauth_mechanism = (
                f"SASL mechanism '{mechanism}' requested by client is not supported for "
                f"re-authentication of mechanism '{self.mechanism}'")
        else:
            self.mechanism = mechanism
            self.exchange = self.security.exchange(mechanism)
        self.state = AUTHENTICATE if version >= 1 else LEGACY
        return corr, api_codec, response_type(error_code=ErrorCode.none, mechanisms=enabled)

    # SaslAuthenticate ----------------------------------------------------------------------
    def _authenticate(self, frame: bytes, version: int, corr: int) -> Any:
        if version > 2:
            self.conn.close(f"unsupported version {version} of SaslAuthenticate")
            return None
        decoded = self._decode(frame, SASL_AUTHENTICATE, version)
        if decoded is None:
            return None
        api_codec, request = decoded
        response_type = api_codec.response_type
        try:
            reply = self._evaluate(request.auth_bytes)
        except AuthFailure as exc:
            answer = response_type(error_code=ErrorCode.sasl_authentication_failed,
                                   error_message=str(exc), auth_bytes=b"")
            self._fail((corr, api_codec, answer), str(exc))
            return None
        assert self.exchange is not None
        lifetime_ms = self._complete() if self.exchange.done else 0
        answer = response_type(error_code=ErrorCode.none, error_message=None, auth_bytes=reply,
                               **_lifetime_field(response_type, lifetime_ms))
        if self.exchange.done:
            self._authenticated()
        return corr, api_codec, answer

    def _evaluate(self, token: bytes) -> bytes:
        if self._bad_reauth_mechanism is not None:
            raise AuthFailure(self._bad_reauth_mechanism)
        exchange = self.exchange
        assert exchange is not None
        try:
            reply = exchange.step(token)
        except AuthFailure as exc:
            if getattr(exc, "generic", False):  # SCRAM: never say what was wrong
                raise AuthFailure(
                    "Authentication failed during "
                    f"{'re-authentication' if self.reauthenticating else 'authentication'} due "
                    f"to invalid credentials with SASL mechanism {exchange.mechanism}") from None
            raise
        if exchange.done and self.reauthenticating:
            principal = f"User:{exchange.authorization_id}"
            if principal != self.conn.principal:
                raise AuthFailure(
                    "Cannot change principals during re-authentication from "
                    f"{self.conn.principal.replace(':', '.', 1)}: "
                    f"{principal.replace(':', '.', 1)}")
        return reply

    def _complete(self) -> int:
        """The session's lifetime in ms (0: none), from connections.max.reauth.ms and the
        credential's expiry; sets the session deadline."""
        assert self.exchange is not None and self.mechanism is not None
        candidates = []
        reauth_ms = self.security.reauth_ms(self.mechanism)
        if reauth_ms > 0:
            candidates.append(reauth_ms)
        expiry = self.exchange.credential_expiry
        if expiry is not None:
            candidates.append(max(int((expiry - time.time()) * 1000), 0))
        lifetime = min(candidates) if candidates else 0
        self.expires_at = time.monotonic() + lifetime / 1000 if candidates else None
        return lifetime

    def _authenticated(self) -> None:
        assert self.exchange is not None
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s %s as User:%s with %s",
                      "Re-authenticated" if self.reauthenticating else "Authenticated",
                      self.conn.client_host, self.exchange.authorization_id, self.mechanism)
        self.state = COMPLETE
        self.reauthenticating = False
        self.conn.authenticated(f"User:{self.exchange.authorization_id}",
                                self if self.expires_at is not None else None)

    # Legacy framing (after a v0 handshake) --------------------------------------------------
    def _legacy_token(self, token: bytes) -> None:
        try:
            reply = self._evaluate(token)
        except AuthFailure as exc:
            self._fail(None, str(exc))
            return
        assert self.exchange is not None
        if self.exchange.done:
            self._complete()
        # Kafka answers every token, an empty one included (PLAIN's success)
        self.conn.send_raw(_SIZE.pack(len(reply)) + reply)
        if self.exchange.done:
            self._authenticated()

    # Failures ------------------------------------------------------------------------------
    def _unexpected_during_authentication(self, frame: bytes, key: int, version: int,
                                          corr: int) -> None:
        message = (f"Unexpected Kafka request of type {_api_name(key)} during SASL "
                   "authentication.")
        answer = None
        try:
            decoded = self._decode_any(frame, key, version)
        except Exception:  # noqa: BLE001 - not a request we can answer: close without one
            decoded = None
        if decoded is not None:
            from ..cluster.faults import error_response

            api_codec, request = decoded
            try:
                answer = (corr, api_codec,
                          error_response(version, key, request, ErrorCode.illegal_sasl_state))
            except Exception:  # noqa: BLE001 - no error form for it: close without one
                answer = None
        self._fail(answer, message)

    def _decode_any(self, frame: bytes, key: int, version: int) -> tuple[Any, Any]:
        api_codec = codec(key, version)
        _client, offset = self._header.parse(frame, api_codec.flexible)
        return api_codec, api_codec.decode(frame, offset, 10_000)

    def _fail(self, answer: tuple[int, Any, Any] | None, message: str) -> None:
        """Answer ``answer`` (if any) after the failed-authentication delay, then close."""
        self.state = FAILED
        log.info("Failed authentication with %s (%s)", self.conn.client_host, message)
        delay = self.security.failed_delay_ms / 1000
        self._loop.call_later(delay, self._send_failure, answer)

    def _send_failure(self, answer: tuple[int, Any, Any] | None) -> None:
        if answer is not None:
            from ..responses import frame_response

            corr, api_codec, response = answer
            try:
                self.conn.send_raw(frame_response(api_codec, corr, response))
            except Exception:  # noqa: BLE001 - the connection went away meanwhile
                log.debug("could not send the authentication failure", exc_info=True)
        # Linger: the client closes first once it has read the answer (or the timer does).
        self._loop.call_later(_LINGER_S, self.conn.close, None)


def _api_name(key: int) -> str:
    """Kafka's ApiKeys name: METADATA, OFFSET_COMMIT..."""
    from ..cluster.faults import api_name

    name = api_name(key)
    if name.isdigit():
        return f"api key {key}"
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()


def _lifetime_field(response_type: type, lifetime_ms: int) -> dict[str, Any]:
    import datetime

    if "session_lifetime" not in getattr(response_type, "__dataclass_fields__", {}):
        return {}
    return {"session_lifetime": datetime.timedelta(milliseconds=lifetime_ms)}
