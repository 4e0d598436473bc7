"""ApiVersions (key 18): the first request on every connection. Features: ``share.version`` is
supported at levels 0-1 and finalized at the broker's ``share.version`` (KIP-932 share groups);
``transaction.version`` is supported at levels 0-2 and finalized at the broker's
``transaction.version``; below 2 the
KIP-890 versions of the transaction APIs (AddPartitionsToTxn v4+, EndTxn v5+, TxnOffsetCommit
v5+) are not advertised, so clients choose transaction version 2 only when it is finalized.

Two encodings of the same answer: ``handle_api_versions`` returns kio response objects (the
connection frames them like any other response), and ``early_answer`` frames the answer by hand
from the route table, without kio, for the listener that is up before the broker is ready
(broker/boot.py). tests/spine/test_early_listener.py checks they agree byte for byte.
This module imports kio only when the handler first runs; its varints are protocol/varint.py's,
which imports nothing.
"""

from __future__ import annotations

import re
import struct
from functools import cache
from typing import TYPE_CHECKING, Any

from kafkette.protocol.varint import HeaderError, encode_uvarint, read_uvarint, skip_tagged_fields

from .routes import TABLE, api

if TYPE_CHECKING:
    from .context import RequestContext

API_VERSIONS_KEY = 18
MIN_VERSION, MAX_VERSION = TABLE[API_VERSIONS_KEY][:2]
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")

TRANSACTION_VERSION = "transaction.version"
MAX_TRANSACTION_VERSION = 2
SHARE_VERSION = "share.version"
MAX_SHARE_VERSION = 1
DEFAULT_SHARE_VERSION = 1  # Kafka 4.2 finalizes share.version=1 on new clusters
# The highest version of each transaction API before transaction version 2 (KIP-890 part 2).
_TV1_MAX = {24: 3, 26: 4, 28: 4}
FEATURES_EPOCH = 1  # the finalized features never change while the broker runs

# Error codes (kio.schema.errors.ErrorCode values).
NONE, UNSUPPORTED_VERSION, INVALID_REQUEST = 0, 35, 42


def _advertised(transaction_version: int) -> list[tuple[int, int, int]]:
    """(api key, min version, max version) of every API, by key."""
    capped = _TV1_MAX if transaction_version < 2 else {}
    return [(key, lo, min(hi, capped.get(key, hi)))
            for key, (lo, hi, _accepted, _module) in sorted(TABLE.items())]


# The kio path (the handler) -----------------------------------------------------------------

def _api_keys(version: int, transaction_version: int) -> tuple:
    from kafkette.protocol.build import item_type
    from kafkette.protocol.codec import response_type

    api_key_type = item_type(response_type(API_VERSIONS_KEY, version), "api_keys")
    return tuple(api_key_type(api_key=key, min_version=lo, max_version=hi)
                 for key, lo, hi in _advertised(transaction_version))


def unsupported_api_versions_response() -> Any:
    from kio.schema.errors import ErrorCode

    from kafkette.protocol.codec import response_type

    cls = response_type(API_VERSIONS_KEY, 0)
    api_keys = tuple(k for k in _api_keys(0, 0) if k.api_key == API_VERSIONS_KEY)
    return cls(error_code=ErrorCode.unsupported_version, api_keys=api_keys)


def unsupported_version_answer() -> tuple[Any, Any]:
    """(api codec, response) of a request of a version not served: answered as v0 with
    UNSUPPORTED_VERSION so the client can downgrade (KIP-511)."""
    from kafkette.protocol.codec import codec

    return codec(API_VERSIONS_KEY, 0), unsupported_api_versions_response()


@cache
def _response(version: int, error: Any, transaction_version: int,
              share_version: int = DEFAULT_SHARE_VERSION) -> Any:
    # The route table is static data, so each version's answer never changes.
    from datetime import timedelta

    from kafkette.protocol.build import item_type, make
    from kafkette.protocol.codec import response_type

    cls = response_type(API_VERSIONS_KEY, version)
    supported: tuple[Any, ...] = ()
    finalized: tuple[Any, ...] = ()
    if version >= 3:
        supported_type = item_type(cls, "supported_features")
        finalized_type = item_type(cls, "finalized_features")
        supported = (supported_type(name=SHARE_VERSION, min_version=0,
                                    max_version=MAX_SHARE_VERSION),
                     supported_type(name=TRANSACTION_VERSION, min_version=0,
                                    max_version=MAX_TRANSACTION_VERSION))
        # Kafka leaves out features finalized at level 0
        finalized = tuple(finalized_type(name=name, max_version_level=level,
                                         min_version_level=level)
                          for name, level in ((SHARE_VERSION, share_version),
                                              (TRANSACTION_VERSION, transaction_version))
                          if level > 0)
    return make(
        cls,
        error_code=error,
        api_keys=_api_keys(version, transaction_version),
        throttle_time=timedelta(0),
        supported_features=supported,
        finalized_features_epoch=FEATURES_EPOCH,
        finalized_features=finalized,
        zk_migration_ready=False,
    )


@api(API_VERSIONS_KEY, MIN_VERSION, MAX_VERSION)
def handle_api_versions(ctx: RequestContext, req: Any) -> Any:
    from kio.schema.errors import ErrorCode

    error = ErrorCode.none
    if ctx.api_version >= 3 and not valid_software(req.client_software_name,
                                                   req.client_software_version):
        error = ErrorCode.invalid_request
    return _response(ctx.api_version, error, ctx.config.get_int(TRANSACTION_VERSION),
                     ctx.config.get_int(SHARE_VERSION))


def valid_software(name: str | None, version: str | None) -> bool:
    """KIP-511: client software name and version are non-empty ``[a-zA-Z0-9.-]`` strings that
    start and end with a letter or digit."""
    return bool(_SOFTWARE.fullmatch(name or "") and _SOFTWARE.fullmatch(version or ""))


# The same answer encoded by hand (no kio) ----------------------------------------------------

_H = struct.Struct(">h")
_HHI = struct.Struct(">hhi")
_SIZE_CORR = struct.Struct(">ii")
_KEY3 = struct.Struct(">hhh")
_HH = struct.Struct(">hh")
_I = struct.Struct(">i")
_Q = struct.Struct(">q")


def _compact_string(s: str) -> bytes:
    raw = s.encode()
    return encode_uvarint(len(raw) + 1) + raw


def _tagged(tag: int, value: bytes) -> bytes:
    return encode_uvarint(tag) + encode_uvarint(len(value)) + value


@cache
def response_body(version: int, error: int, transaction_version: int,
                  share_version: int = DEFAULT_SHARE_VERSION) -> bytes:
    """The encoded ApiVersions response body of ``version`` (Kafka's ApiVersionsResponse
    schema; what kio encodes for ``_response(version, error, transaction_version,
    share_version)``)."""
    keys = _advertised(transaction_version)
    if error == UNSUPPORTED_VERSION:  # ApiVersionsRequest.getErrorResponse lists only itself
        keys = [key for key in keys if key[0] == API_VERSIONS_KEY]
    out = bytearray(_H.pack(error))
    if version < 3:
        out += _I.pack(len(keys))
        for key in keys:
            out += _KEY3.pack(*key)
        if version >= 1:
            out += b"\x00\x00\x00\x00"  # throttle_time_ms
        return bytes(out)
    out += encode_uvarint(len(keys) + 1)
    for key in keys:
        out += _KEY3.pack(*key) + b"\x00"  # no tagged fields
    out += b"\x00\x00\x00\x00"  # throttle_time_ms
    share, txn = _compact_string(SHARE_VERSION), _compact_string(TRANSACTION_VERSION)
    # Tag 0 SupportedFeatures, 1 FinalizedFeaturesEpoch, 2 FinalizedFeatures.
    tags = [_tagged(0, b"\x03" + share + _HH.pack(0, MAX_SHARE_VERSION) + b"\x00"
                    + txn + _HH.pack(0, MAX_TRANSACTION_VERSION) + b"\x00"),
            _tagged(1, _Q.pack(FEATURES_EPOCH))]
    # Kafka leaves out features finalized at level 0
    finalized = [name + _HH.pack(level, level) + b"\x00"
                 for name, level in ((share, share_version), (txn, transaction_version))
                 if level > 0]
    if finalized:
        tags.append(_tagged(2, encode_uvarint(len(finalized) + 1) + b"".join(finalized)))
    out += encode_uvarint(len(tags)) + b"".join(tags)
    return bytes(out)


def unsupported_body() -> bytes:
    """KIP-511: a version the broker does not know is answered as v0 with UNSUPPORTED_VERSION
    and, as Kafka's ApiVersionsRequest.getErrorResponse does, the versions of ApiVersions
    alone, so the client can retry with one both sides speak."""
    return response_body(0, UNSUPPORTED_VERSION, 0)


def frame(correlation_id: int, body: bytes) -> bytes:
    """Size + response header v0 (ApiVersions never uses header v1, KIP-511) + body."""
    return _SIZE_CORR.pack(len(body) + 4, correlation_id) + body


def early_answer(frame_: bytes, transaction_version: int,
                 share_version: int = DEFAULT_SHARE_VERSION) -> bytes | None:
    """The framed answer to ``frame_`` (a request without its size prefix) if it is an
    ApiVersions request that ``handle_api_versions`` would answer; None for any other request,
    and for one the connection would refuse or close on (left for it to handle)."""
    if len(frame_) < 8:
        return None
    key, version, corr = _HHI.unpack_from(frame_)
    if key != API_VERSIONS_KEY:
        return None
    if not MIN_VERSION <= version <= MAX_VERSION:  # checked before the rest of the header
        return frame(corr, unsupported_body())
    if len(frame_) < 10:
        return None
    client_len = _H.unpack_from(frame_, 8)[0]
    pos = 10
    if client_len >= 0:
        pos += client_len
        if pos > len(frame_):
            return None
        try:
            frame_[10:pos].decode()
        except UnicodeDecodeError:
            return None
    elif client_len != -1:
        return None
    error = NONE
    if version >= 3:
        try:
            pos = skip_tagged_fields(frame_, pos)  # request header v2
            name, pos = _read_compact_string(frame_, pos)
            software_version, pos = _read_compact_string(frame_, pos)
            skip_tagged_fields(frame_, pos)
        except (HeaderError, ValueError):  # UnicodeDecodeError is a ValueError
            return None
        if not valid_software(name, software_version):
            error = INVALID_REQUEST
    return frame(corr, response_body(version, error, transaction_version, share_version))


def _read_compact_string(buf: bytes, pos: int) -> tuple[str, int]:
    size, pos = read_uvarint(buf, pos)
    if size == 0:
        raise ValueError("null string")  # not nullable: kio refuses the request
    end = pos + size - 1
    if end > len(buf):
        raise ValueError("string runs past the frame")
    return buf[pos:end].decode(), end
