"""The compiled encoder writes kio's bytes, and refuses what kio refuses.

For every response (and request) schema kio knows — every version kafkette advertises among
them — random values are encoded by kio's ``entity_writer`` and by ``entity_encoder``; the bytes
must be equal, or both must refuse (OutOfBoundValue in both or in neither). Values are drawn around the edges of
the wire format: varint lengths at 127/128, nulls, non-default tagged fields, multi-byte UTF-8,
strings and ints past their wire range, None where the version has no null.
"""

from __future__ import annotations

import datetime as dt
import io
import random
import struct
import uuid
from dataclasses import MISSING, fields, is_dataclass
from typing import Any

import pytest
from kio.index import load_payload_module
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer
from kio.serial.errors import OutOfBoundValue
from kio.static.constants import EntityType

from kafkette.broker import handlers  # noqa: F401  (registers every API route)
from kafkette.broker.registry import ROUTES
from kafkette.protocol.codec import UnencodableResponse, codec
from kafkette.protocol.encoder import entity_encoder
from kafkette.protocol.validate import unwrap

_BITS = {"int8": (-8, 8), "int16": (-16, 16), "int32": (-32, 32), "int64": (-64, 64),
         "uint8": (0, 8), "uint16": (0, 16), "uint32": (0, 32), "uint64": (0, 64)}
_STRINGS = ["", "g", "é", "ü" * 63, "x" * 126, "x" * 127, "ab" * 100, "€" * 50]
_ERRORS = list(ErrorCode)


class Drawer:
    """Random values of one schema; ``wild`` also draws values outside the wire's range."""

    def __init__(self, rng: random.Random, wild: bool) -> None:
        self.rng = rng
        self.wild = wild

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def entity(self, cls: type, depth: int = 0) -> Any:
        values = {}
        for fld in fields(cls):
            has_default = (fld.default is not MISSING
                           or fld.default_factory is not MISSING)  # type: ignore[misc]
            if "tag" in fld.metadata and has_default and self.chance(0.4):
                continue  # the default: not written
            values[fld.name] = self.field(fld, depth)
        return cls(**values)

    def field(self, fld: Any, depth: int) -> Any:
        inner, is_array, nullable = unwrap(fld.type)
        if (nullable or is_array) and self.chance(0.12):
            return None
        if self.wild and self.chance(0.01):
            return None  # where the version has no null: kio raises, so must we
        if is_array:
            count = self.rng.choice([0, 1, 2, 3] + ([127, 128] if depth == 0 else []))
            if depth > 2:
                count = min(count, 1)
            if is_dataclass(inner):
                return tuple(self.entity(inner, depth + 1) for _ in range(count))
            return tuple(self.primitive(fld.metadata["kafka_type"]) for _ in range(count))
        if is_dataclass(inner):
            return self.entity(inner, depth + 1)
        return self.primitive(fld.metadata["kafka_type"])

    def primitive(self, kafka_type: str) -> Any:
        rng = self.rng
        if kafka_type in _BITS:
            low, high = _BITS[kafka_type]
            lo, hi = (-(1 << (-low - 1)), (1 << (-low - 1)) - 1) if low else (0, (1 << high) - 1)
            if self.wild and self.chance(0.02):
                return rng.choice([lo - 1, hi + 1])
            return rng.choice([lo, hi, 0, -1 if lo else 1, rng.randint(lo, hi)])
        if kafka_type == "bool":
            return self.chance(0.5)
        if kafka_type == "string":
            if self.wild and self.chance(0.03):
                return rng.choice(["y" * 32767, "y" * 32768, "é" * 16384])
            return rng.choice(_STRINGS + ["".join(rng.choices("abc-é_", k=rng.randint(0, 300)))])
        if kafka_type in ("bytes", "records"):
            data = rng.randbytes(rng.choice([0, 1, 8, 126, 127, 128, 300, 20000]))
            return bytearray(data) if self.chance(0.1) else data
        if kafka_type == "uuid":
            return rng.choice([uuid.UUID(int=0), uuid.UUID(int=rng.getrandbits(128))])
        if kafka_type == "error_code":
            return rng.choice(_ERRORS)
        if kafka_type in ("timedelta_i32", "timedelta_i64"):
            return dt.timedelta(microseconds=rng.choice([0, 1500, 2500, -1000, 999_999,
                                                         rng.randint(0, 10**10)]))
        if kafka_type == "datetime_i64":
            return dt.datetime.fromtimestamp(rng.randint(0, 2 * 10**9) + rng.random(), tz=dt.UTC)
        if kafka_type == "float64":
            return rng.choice([0.0, -1.5, rng.random(), float("inf")])
        raise ValueError(kafka_type)


def _outcome(write: Any) -> tuple[str, Any]:
    """The bytes, or whether the refusal is an OutOfBoundValue (the connection closes with
    "cannot be encoded") or another error (logged as an encoder failure). With two bad values
    in fixed-size fields packed together, which of them is reported first may differ."""
    try:
        return "ok", write()
    except OutOfBoundValue:
        return "raised", "out of bound"
    except Exception:
        return "raised", "other"


def _kio(entity_type: type, value: Any) -> bytes:
    buf = io.BytesIO()
    entity_writer(entity_type)(buf, value)
    return buf.getvalue()


def _schemas(kind: EntityType) -> list[tuple[int, int, type]]:
    found = []
    for api_key in range(0, 100):
        for version in range(0, 20):
            try:
                module = load_payload_module(api_key, version, kind)
            except Exception:
                continue
            for value in vars(module).values():
                if isinstance(value, type) and getattr(value, "__type__", None) is kind:
                    found.append((api_key, version, value))
    return found


RESPONSES = _schemas(EntityType.response)
REQUESTS = _schemas(EntityType.request)


def _compare(entity_type: type, seed: int, cases: int) -> None:
    try:
        entity_writer(entity_type)
    except (NotImplementedError, TypeError, ValueError):
        pytest.skip("kio cannot write this schema")
    ours = entity_encoder(entity_type)
    for case in range(cases):
        rng = random.Random(seed * 1000 + case)
        value = Drawer(rng, wild=case % 3 == 2).entity(entity_type)
        expected = _outcome(lambda v=value: _kio(entity_type, v))
        got = _outcome(lambda v=value: ours(v))
        assert got == expected, (entity_type, case, value)


def test_every_advertised_response_version_has_a_kio_schema():
    known = {(k, v) for k, v, _ in RESPONSES}
    for key, route in ROUTES.items():
        for version in range(route.min_accepted, route.max_version + 1):
            assert (key, version) in known


@pytest.mark.parametrize(("api_key", "version", "entity_type"), RESPONSES,
                         ids=[f"{k}v{v}" for k, v, _ in RESPONSES])
def test_responses_encode_as_kio_does(api_key: int, version: int, entity_type: type):
    _compare(entity_type, api_key * 100 + version, 60)


@pytest.mark.parametrize(("api_key", "version", "entity_type"), REQUESTS,
                         ids=[f"{k}v{v}" for k, v, _ in REQUESTS])
def test_requests_encode_as_kio_does(api_key: int, version: int, entity_type: type):
    _compare(entity_type, 7 + api_key * 100 + version, 15)


def test_a_legacy_string_past_32767_bytes_is_unencodable():
    c = codec(11, 5)  # JoinGroup v5: non-flexible, member ids are legacy strings
    response = c.response_type(
        throttle_time=dt.timedelta(0), error_code=ErrorCode.none, generation_id=1,
        protocol_name="range", leader="m", member_id="m" * 32768, members=())
    with pytest.raises(UnencodableResponse):
        c.encode_body(response)
    ok = c.response_type(
        throttle_time=dt.timedelta(0), error_code=ErrorCode.none, generation_id=1,
        protocol_name="range", leader="m", member_id="é" * 16383, members=())
    assert c.encode_body(ok) == _kio(c.response_type, ok)
    with pytest.raises(OutOfBoundValue):
        entity_encoder(c.response_type)(c.response_type(
            throttle_time=dt.timedelta(0), error_code=ErrorCode.none, generation_id=1,
            protocol_name="range", leader="m", member_id="é" * 16384, members=()))


def test_an_int_out_of_range_raises_struct_error_as_kio_does():
    c = codec(12, 4)
    response = c.response_type(throttle_time=dt.timedelta(0), error_code=ErrorCode.none)
    assert c.encode_body(response) == _kio(c.response_type, response)
    bad = c.response_type(throttle_time=dt.timedelta(milliseconds=2**31),
                          error_code=ErrorCode.none)
    with pytest.raises(struct.error):
        c.encode_body(bad)
