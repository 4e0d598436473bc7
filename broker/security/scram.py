"""SASL/SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802 / 7677) as Kafka's ScramSaslServer, and the
stored credential (salt, StoredKey, ServerKey, iterations: never the password).

Kafka's grammar (ScramMessages): GS2 header ``n,[a=<authzid>],`` (no channel binding); the
authzid, if any, must equal the user; an optional reserved ``m=`` field; extensions
``<letters>=<value>`` (``tokenauth=true`` for delegation tokens; the others are ignored); the
user name is ASCII with ``=2C`` / ``=3D`` escapes; nonces are printable ASCII but ``,``. Any
failure but the authzid one is a ``ScramFailure``, which the client sees as Kafka's deliberately
vague "Authentication failed during authentication due to invalid credentials with SASL
mechanism SCRAM-SHA-512". Standard library only.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from typing import NamedTuple

from .mechanisms import AuthFailure

HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MECHANISM_CODES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}  # ScramMechanism.type() on the wire
MECHANISM_NAMES = {code: name for name, code in MECHANISM_CODES.items()}
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384  # AlterUserScramCredentials' bound
DEFAULT_ITERATIONS = 4096


class ScramCredential(NamedTuple):
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


class ScramFailure(AuthFailure):
    """A SCRAM failure whose detail the client never sees (Kafka's SaslException)."""

    generic = True


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """Hi(password, salt, i): PBKDF2-HMAC with the mechanism's hash (no SASLprep, as Kafka)."""
    return hashlib.pbkdf2_hmac(HASHES[mechanism], password.encode(), salt, iterations)


def credential_from_salted(mechanism: str, salted: bytes, salt: bytes,
                           iterations: int) -> ScramCredential:
    """What the broker keeps of an AlterUserScramCredentials upsertion."""
    digest = HASHES[mechanism]
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    stored_key = hashlib.new(digest, client_key).digest()
    server_key = hmac.new(salted, b"Server Key", digest).digest()
    return ScramCredential(salt, stored_key, server_key, iterations)


def random_salt() -> bytes:
    """Kafka's generated salt: the UTF-8 of a random base-36 string."""
    return _base36(secrets.randbits(130)).encode()


def new_credential(mechanism: str, password: str,
                   iterations: int = DEFAULT_ITERATIONS) -> ScramCredential:
    salt = random_salt()
    return credential_from_salted(mechanism, salted_password(mechanism, password, salt,
                                                             iterations), salt, iterations)


def _base36(value: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while value:
        value, rest = divmod(value, 36)
        out = digits[rest] + out
    return out or "0"


_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"
_VALUE = r"[\x01-\x2b\x2d-\x7f]+"
_EXTENSIONS = rf"(?:,[A-Za-z]+={_VALUE})*"
_BASE64 = r"[A-Za-z0-9+/]*={0,2}"
_CLIENT_FIRST = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,(?P<bare>(?:m={_VALUE},)?n=(?P<saslname>{_SASLNAME}),"
    rf"r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXTENSIONS}))")
_CLIENT_FINAL = re.compile(
    rf"(?P<without_proof>c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS}),"
    rf"p=(?P<proof>{_BASE64})")


def _username(saslname: str) -> str:
    return saslname.replace("=2C", ",").replace("=3D", "=")


CredentialLookup = Callable[[str, str], "ScramCredential | None"]


class ScramExchange:
    """One SCRAM server exchange: client-first -> server-first, client-final -> server-final."""

    credential_expiry: float | None = None

    def __init__(self, mechanism: str, lookup: CredentialLookup) -> None:
        self.mechanism = mechanism
        self._digest = HASHES[mechanism]
        self._lookup = lookup
        self.done = False
        self.authorization_id = ""
        self._credential: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""

    def step(self, token: bytes) -> bytes:
        if self.done:
            raise ScramFailure("Unexpected SCRAM message after completion")
        if self._credential is None:
            return self._client_first(token)
        return self._client_final(token)

    def _client_first(self, token: bytes) -> bytes:
        try:
            text = token.decode("ascii")
        except UnicodeDecodeError:
            raise ScramFailure("Invalid SCRAM client first message format") from None
        match = _CLIENT_FIRST.fullmatch(text)
        if match is None:
            raise ScramFailure("Invalid SCRAM client first message format")
        user = _username(match["saslname"])
        if "tokenauth=true" in (match["extensions"] or "").lower().split(",")[1:]:
            raise ScramFailure("Delegation tokens are not enabled")
        credential = self._lookup(user, self.mechanism)
        if credential is None:
            raise ScramFailure("Authentication failed: Invalid user credentials")
        authzid = match["authzid"]
        if authzid and _username(authzid) != user:
            raise AuthFailure("Authentication failed: Client requested an authorization id "
                              "that is different from username")
        if credential.iterations < MIN_ITERATIONS:
            raise ScramFailure(f"Iterations {credential.iterations} is less than the minimum "
                               f"{MIN_ITERATIONS} for {self.mechanism}")
        self.authorization_id = user
        self._credential = credential
        self._client_first_bare = match["bare"]
        self._nonce = match["nonce"] + _base36(secrets.randbits(130))
        self._server_first = (f"r={self._nonce},s={base64.b64encode(credential.salt).decode()},"
                              f"i={credential.iterations}")
        return self._server_first.encode()

    def _client_final(self, token: bytes) -> bytes:
        credential = self._credential
        assert credential is not None
        try:
            text = token.decode("ascii")
        except UnicodeDecodeError:
            raise ScramFailure("Invalid SCRAM client final message format") from None
        match = _CLIENT_FINAL.fullmatch(text)
        if match is None:
            raise ScramFailure("Invalid SCRAM client final message format")
        if match["nonce"] != self._nonce:
            raise ScramFailure("Invalid client nonce in the final client message.")
        try:
            proof = base64.b64decode(match["proof"], validate=True)
        except ValueError:
            raise ScramFailure("Invalid SCRAM client final message format") from None
        auth_message = ",".join((self._client_first_bare, self._server_first,
                                 match["without_proof"])).encode()
        client_signature = hmac.new(credential.stored_key, auth_message, self._digest).digest()
        if len(proof) != len(client_signature):
            raise ScramFailure("Invalid client credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self._digest, client_key).digest(),
                                   credential.stored_key):
            raise ScramFailure("Invalid client credentials")
        server_signature = hmac.new(credential.server_key, auth_message, self._digest).digest()
        self.done = True
        self._credential = None
        return b"v=" + base64.b64encode(server_signature)
