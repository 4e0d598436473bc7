"""SASL/OAUTHBEARER (RFC 7628, KIP-255) with Kafka's default server validator for unsecured
JWTs (OAuthBearerUnsecuredValidatorCallbackHandler): ``alg`` "none", an empty signature, a
string principal claim (``sub``), a numeric ``exp`` in the future, an optional ``iat`` not in the
future, and the required scope.

A bad token is two round trips, as in Kafka: the server answers the token with a JSON error
(``{"status":"invalid_token"}`` or ``{"status":"insufficient_scope", "scope":"<missing>"}``)
and no error code; the client replies one ``\\x01``; the server then fails the exchange with
that JSON as the message. Options come from the listener's OAUTHBEARER JAAS config:
``unsecuredValidatorPrincipalClaimName``, ``unsecuredValidatorScopeClaimName``,
``unsecuredValidatorRequiredScope`` (space-separated), ``unsecuredValidatorAllowableClockSkewMs``.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
from collections.abc import Callable, Mapping
from typing import Any

from .mechanisms import AuthFailure
from .scram import ScramFailure

_CONTROL_A = b"\x01"
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_KEY = r"[A-Za-z]+"
_VALUE = r"[\x21-\x7e \t\r\n]+"
_INITIAL = re.compile(rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,\x01(?P<pairs>(?:{_KEY}={_VALUE}\x01)*)\x01",
                      re.S)
_AUTH = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_~+/.a-zA-Z0-9]+=*)")


class InvalidToken(Exception):
    """The token fails validation; ``scope``: the missing required scope element, if that."""

    def __init__(self, message: str, scope: str | None = None) -> None:
        super().__init__(message)
        self.scope = scope


def _b64url_json(part: str) -> dict[str, Any]:
    try:
        raw = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
        value = json.loads(raw)
    except (binascii.Error, ValueError) as exc:
        raise InvalidToken(f"Invalid unsecured JWS part: {exc}") from None
    if not isinstance(value, dict):
        raise InvalidToken("Invalid unsecured JWS part: not a JSON object")
    return value


class UnsecuredJws:
    """An unsecured JWT: ``header.claims.`` with ``alg`` none (OAuthBearerUnsecuredJws)."""

    def __init__(self, token: str, principal_claim: str, scope_claim: str) -> None:
        parts = token.split(".")
        if len(parts) != 3:
            raise InvalidToken("Unsecured JWS compact serializations must have 3 dot-separated "
                               f"Base64URL-encoded values rather than {len(parts)}")
        if parts[2]:
            raise InvalidToken("Unsecured JWS compact serializations must have an empty "
                               "signature")
        header = _b64url_json(parts[0])
        if header.get("alg") != "none":
            raise InvalidToken("Unsecured JWS must have an 'alg' header value of 'none'")
        self.claims = _b64url_json(parts[1])
        principal = self.claims.get(principal_claim)
        if principal is None:
            raise InvalidToken(f"Required claim missing: {principal_claim}")
        if not isinstance(principal, str) or not principal.strip():
            raise InvalidToken(f"The {principal_claim} claim had the incorrect type: "
                               f"{type(principal).__name__}")
        self.principal = principal
        scope = self.claims.get(scope_claim)
        if isinstance(scope, str):
            self.scope = {scope.strip()} if scope.strip() else set()
        elif isinstance(scope, list):
            self.scope = {str(s) for s in scope}
        else:
            self.scope = set()
        self.exp = self._number("exp", required=True)
        self.iat = self._number("iat", required=False)

    def _number(self, claim: str, *, required: bool) -> float | None:
        value = self.claims.get(claim)
        if value is None:
            if required:
                raise InvalidToken(f"Required claim missing: {claim}")
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidToken(f"The {claim} claim had the incorrect type: "
                               f"{type(value).__name__}")
        return float(value)


def validate(token: UnsecuredJws, now_ms: int, skew_ms: int, required_scope: list[str]) -> None:
    """OAuthBearerValidationUtils' checks, in Kafka's order."""
    if token.iat is not None and token.iat * 1000 > now_ms + skew_ms:
        raise InvalidToken(f"The Issued At value ({int(token.iat * 1000)}) is after the current "
                           f"time ({now_ms}) plus the allowable clock skew ({skew_ms})")
    exp_ms = int((token.exp or 0) * 1000)
    if now_ms - skew_ms >= exp_ms:
        raise InvalidToken(f"The indicated time ({now_ms}) minus allowable clock skew "
                           f"({skew_ms}) is on or after the Expiration Time value ({exp_ms})")
    if token.iat is not None and exp_ms <= token.iat * 1000:
        raise InvalidToken(f"The Expiration Time time ({exp_ms}) is not after the Issued At "
                           f"time ({int(token.iat * 1000)})")
    for element in required_scope:
        if element not in token.scope:
            raise InvalidToken(f"The provided scope ({sorted(token.scope)}) was missing a "
                               f"required scope ({element}).  All required scope elements: "
                               f"{required_scope}", scope=element)


def json_error(error: InvalidToken) -> str:
    """Kafka's JSON error reply (OAuthBearerSaslServer.jsonErrorResponse)."""
    if error.scope is not None:
        return f'{{"status":"insufficient_scope", "scope":"{error.scope}"}}'
    return '{"status":"invalid_token"}'


class OAuthBearerExchange:
    mechanism = "OAUTHBEARER"

    def __init__(self, options: Mapping[str, str],
                 clock_ms: Callable[[], int] = lambda: int(time.time() * 1000)) -> None:
        self.done = False
        self.authorization_id = ""
        self.credential_expiry: float | None = None
        self._principal_claim = options.get("unsecuredValidatorPrincipalClaimName") or "sub"
        self._scope_claim = options.get("unsecuredValidatorScopeClaimName") or "scope"
        self._required_scope = (options.get("unsecuredValidatorRequiredScope") or "").split()
        self._skew_ms = int(options.get("unsecuredValidatorAllowableClockSkewMs") or 0)
        self._clock_ms = clock_ms
        self._error: str | None = None

    def step(self, token: bytes) -> bytes:
        if token == _CONTROL_A and self._error is not None:
            raise AuthFailure(self._error)  # the client acknowledged our JSON error
        self._error = None
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise ScramFailure("Invalid OAUTHBEARER client first message") from None
        match = _INITIAL.fullmatch(text)
        if match is None:
            raise ScramFailure("Invalid OAUTHBEARER client first message")
        pairs = dict(pair.split("=", 1) for pair in match["pairs"].split("\x01") if pair)
        auth = pairs.get("auth")
        if auth is None:
            raise ScramFailure("Invalid OAUTHBEARER client first message: 'auth' not specified")
        auth_match = _AUTH.fullmatch(auth)
        if auth_match is None or auth_match["scheme"].lower() != "bearer":
            raise ScramFailure("Invalid OAUTHBEARER client first message: invalid 'auth' format")
        try:
            jws = UnsecuredJws(auth_match["token"], self._principal_claim, self._scope_claim)
            validate(jws, self._clock_ms(), self._skew_ms, self._required_scope)
        except InvalidToken as exc:
            self._error = json_error(exc)
            return self._error.encode()
        authzid = match["authzid"]
        if authzid and authzid != jws.principal:
            raise AuthFailure(
                f"Authentication failed: Client requested an authorization id ({authzid}) that "
                f"is different from the token's principal name ({jws.principal})")
        self.authorization_id = jws.principal
        self.credential_expiry = jws.exp
        self.done = True
        return b""
