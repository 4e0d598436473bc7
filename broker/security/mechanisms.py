"""SASL mechanisms as pure state machines: no I/O, no clock of their own.

Each server exchange takes the client's tokens one at a time through ``step`` and returns the
server's reply; ``done`` turns true when the client is authenticated, with ``authorization_id``
set. A failure raises :class:`AuthFailure` with the message Kafka sends the client (error 58).
PLAIN is here; SCRAM and OAUTHBEARER in their own modules.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Protocol


class AuthFailure(Exception):
    """Authentication failed: ``str(exc)`` is the message the client gets."""


class SaslExchange(Protocol):
    mechanism: str
    done: bool
    authorization_id: str
    # seconds since the epoch when the credential expires (OAUTHBEARER's exp), else None
    credential_expiry: float | None

    def step(self, token: bytes) -> bytes: ...


class PlainExchange:
    """SASL/PLAIN (RFC 4616), as Kafka's PlainSaslServer: one message, an empty reply. Users
    are the ``user_<name>="<password>"`` options of the listener's PLAIN JAAS config."""

    mechanism = "PLAIN"
    credential_expiry: float | None = None

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self.done = False
        self.authorization_id = ""

    def step(self, token: bytes) -> bytes:
        text = token.decode("utf-8", "replace")
        tokens = text.split("\0", 3)
        if len(tokens) != 3:
            raise AuthFailure(f"Invalid SASL/PLAIN response: expected 3 tokens, got "
                              f"{len(tokens)}")
        authzid, username, password = tokens
        if not username:
            raise AuthFailure("Authentication failed: username not specified")
        if not password:
            raise AuthFailure("Authentication failed: password not specified")
        expected = self._users.get(username)
        # compare_digest on equal-length inputs either way: no early exit on a wrong user
        matches = hmac.compare_digest((expected or "\0").encode(), password.encode())
        if expected is None or not matches:
            raise AuthFailure("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise AuthFailure("Authentication failed: Client requested an authorization id "
                              "that is different from username")
        self.authorization_id = username
        self.done = True
        return b""
