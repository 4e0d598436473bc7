"""Request decoding and response encoding for any (api_key, version) kio knows."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from kio.index import load_payload_module
from kio.serial import entity_reader
from kio.serial.errors import OutOfBoundValue
from kio.static.constants import EntityType

from .encoder import entity_encoder
from .validate import MalformedRequest, body_checker, is_flexible

DEFAULT_MAX_ELEMENTS = 20_000  # broker config request.max.elements

API_VERSIONS_KEY = 18
_I32 = struct.Struct(">i")
_SIZE_CORR = struct.Struct(">ii")  # frame size, correlation id


class DecodeError(Exception):
    """A request body could not be decoded with the schema of its version."""


class UnencodableResponse(Exception):
    """A response value does not fit its wire type (e.g. a member id grown past 32,767 bytes
    from a client id of that length); the connection is closed, as for a malformed request."""


@dataclass(frozen=True, slots=True)
class ApiCodec:
    api_key: int
    version: int
    request_type: type
    response_type: type
    flexible: bool
    _read: Any
    _encode: Any  # compiled response encoder (protocol/encoder.py): kio's bytes, faster
    _check: Any
    # One-slot memo (body object, encoded bytes): handlers that answer with the same immutable
    # response object (ApiVersions, empty Heartbeat answers) skip re-encoding it.
    _memo: list = field(default_factory=lambda: [None, b""])

    def decode(self, frame: bytes, offset: int, max_elements: int = DEFAULT_MAX_ELEMENTS) -> Any:
        """Decode the body at ``offset``; trailing bytes are tolerated (librdkafka sends them).

        Lengths and counts are checked against the frame first (protocol/validate.py): kio's
        reader would abort the process on an allocation a hostile count asks for.
        """
        try:
            self._check(frame, offset, len(frame), [max_elements])
        except MalformedRequest as exc:
            raise DecodeError(str(exc)) from None
        try:
            value, _size = self._read(memoryview(frame), offset)
        except Exception as exc:  # kio raises several types for malformed input
            raise DecodeError(f"{type(exc).__name__}: {exc}") from exc
        return value

    def encode_response(self, correlation_id: int, body: Any) -> bytes:
        """Frame (size prefix) + response header + body."""
        return self.frame(correlation_id, self.encode_body(body))

    def encode_body(self, body: Any) -> bytes:
        memo = self._memo
        if memo[0] is body:
            return memo[1]
        try:
            encoded = self._encode(body)
        except OutOfBoundValue as exc:
            raise UnencodableResponse(str(exc)) from None
        memo[0], memo[1] = body, encoded
        return encoded

    def frame(self, correlation_id: int, encoded_body: bytes) -> bytes:
        """Frame (size prefix) + response header + an already encoded body."""
        # KIP-511: the ApiVersions response always uses header v0. Header v1 is the
        # correlation id and an empty tag section: one pack with the size (hot path).
        if self.flexible and self.api_key != API_VERSIONS_KEY:
            return _SIZE_CORR.pack(len(encoded_body) + 5, correlation_id) + b"\x00" + encoded_body
        return _SIZE_CORR.pack(len(encoded_body) + 4, correlation_id) + encoded_body

    def encode_request_body(self, body: Any) -> bytes:
        return entity_encoder(self.request_type)(body)


@cache
def codec(api_key: int, version: int) -> ApiCodec:
    """Codec for one API version; raises KeyError when kio has no schema for it."""
    try:
        req_mod = load_payload_module(api_key, version, EntityType.request)
        resp_mod = load_payload_module(api_key, version, EntityType.response)
    except Exception as exc:
        raise KeyError((api_key, version)) from exc
    req_type = _payload_type(req_mod, EntityType.request)
    resp_type = _payload_type(resp_mod, EntityType.response)
    return ApiCodec(
        api_key=api_key,
        version=version,
        request_type=req_type,
        response_type=resp_type,
        flexible=is_flexible(req_type),
        _read=entity_reader(req_type),
        _check=body_checker(req_type),
        _encode=entity_encoder(resp_type),
    )


def _payload_type(module: Any, kind: EntityType) -> type:
    for value in vars(module).values():
        if isinstance(value, type) and getattr(value, "__type__", None) is kind:
            return value
    raise KeyError(module.__name__)


def request_type(api_key: int, version: int) -> type:
    return codec(api_key, version).request_type


def response_type(api_key: int, version: int) -> type:
    return codec(api_key, version).response_type


def encode_request(api_key: int, version: int, correlation_id: int, client_id: str | None,
                   body: Any) -> bytes:
    """A complete request frame; used by tests and the CLI's admin commands."""
    c = codec(api_key, version)
    cid = b"\xff\xff" if client_id is None else struct.pack(">h", len(client_id.encode())) + client_id.encode()
    head = struct.pack(">hhi", api_key, version, correlation_id) + cid
    if c.flexible:
        head += b"\x00"
    payload = head + c.encode_request_body(body)
    return _I32.pack(len(payload)) + payload


def decode_response(api_key: int, version: int, frame: bytes) -> tuple[int, Any]:
    """Decode a response frame (without size prefix): correlation id and body."""
    c = codec(api_key, version)
    (correlation_id,) = _I32.unpack_from(frame, 0)
    pos = 4
    if c.flexible and api_key != API_VERSIONS_KEY:
        from .varint import skip_tagged_fields

        pos = skip_tagged_fields(frame, pos)
    value: Any
    value, _ = entity_reader(c.response_type)(memoryview(frame), pos)
    return correlation_id, value
