"""Fault injection for testing clients: answer the next requests of an API with a Kafka error,
late, throttled, or by closing the connection.

One ``FaultRegistry`` per broker. The connection consults it at one point of its dispatch
(``KafkaConnection._dispatch``), and only when ``by_api`` is non-empty, so a broker with no fault
registered pays one dict check a request. A matching fault swaps the request's handler for one
that applies it (``handler_for``).

An error answer is built from the kio response type of the request's version: every
``error_code`` field at every level carries the error, and arrays that answer per topic,
partition or group mirror the request's entries (as Kafka's ``getErrorResponse`` does), so a
commit of three partitions is answered with three failed partitions. The request itself is not
handled.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import itertools
import logging
import struct
import types
import typing
from collections.abc import Iterator
from functools import cache
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import field_names
from kafkette.protocol.codec import request_type, response_type
from kafkette.protocol.validate import is_entity

from ..registry import ROUTES, Handler
from ..responses import CLOSE_CONNECTION, NO_RESPONSE, SplicedResponse

log = logging.getLogger("kafkette.faults")

PRODUCE_KEY = 0
FOREVER = -1  # a fault's count: every matching request until cleared
_I32 = struct.Struct(">i")

# Fields that identify an entry (topic, partition, group...): copied from the request's entry
# into the error answer's, under the response's name for them.
_KEY_ALIASES: dict[str, tuple[str, ...]] = {
    "name": ("name", "topic", "topic_name"),
    "topic": ("topic", "name", "topic_name"),
    "topic_name": ("topic_name", "name", "topic"),
    "topic_id": ("topic_id",),
    "partition_index": ("partition_index", "partition", "index"),
    "partition": ("partition", "partition_index", "index"),
    "index": ("index", "partition_index", "partition"),
    "group_id": ("group_id",),
    "resource_type": ("resource_type",),
    "resource_name": ("resource_name",),
}


class FaultError(ValueError):
    """A fault that cannot be registered (unknown API or error name, bad count...)."""


# Names ------------------------------------------------------------------------------------------

@cache
def api_names() -> dict[str, int]:
    """``"OffsetCommit"`` -> 8 for every API this broker serves."""
    return {request_type(key, route.max_version).__name__.removesuffix("Request"): key
            for key, route in ROUTES.items()}


def api_name(key: int) -> str:
    return next((name for name, k in api_names().items() if k == key), str(key))


def resolve_api(api: str | int) -> int:
    """An API key from its name (``OffsetCommit``, any case) or number."""
    if isinstance(api, bool):
        raise FaultError(f"unknown api {api!r}")
    if isinstance(api, int) or (isinstance(api, str) and api.strip().isdigit()):
        key = int(api)
        if key not in ROUTES:
            raise FaultError(f"api key {key} is not served by this broker")
        return key
    if not isinstance(api, str):
        raise FaultError(f"api must be a name or a number, got {api!r}")
    wanted = api.strip().lower().replace("_", "")
    for name, key in api_names().items():
        if name.lower() == wanted:
            return key
    raise FaultError(f"unknown api {api!r} (e.g. OffsetCommit, Heartbeat, JoinGroup, Fetch)")


def resolve_error(error: str | int | None) -> ErrorCode | None:
    """A Kafka error from its name (``REBALANCE_IN_PROGRESS``, any case) or code; None = none."""
    if error is None:
        return None
    if isinstance(error, bool):
        raise FaultError(f"unknown error {error!r}")
    if isinstance(error, int) or (isinstance(error, str) and error.strip().lstrip("-").isdigit()):
        try:
            code = ErrorCode(int(error))
        except ValueError:
            raise FaultError(f"unknown error code {error}") from None
    elif isinstance(error, str):
        try:
            code = ErrorCode[error.strip().lower()]
        except KeyError:
            raise FaultError(f"unknown error {error!r} (e.g. NOT_COORDINATOR)") from None
    else:
        raise FaultError(f"error must be a name or a code, got {error!r}")
    return None if code == ErrorCode.none else code


# Faults -----------------------------------------------------------------------------------------

@dataclasses.dataclass(slots=True)
class Fault:
    id: int
    api_key: int
    error: ErrorCode | None = None
    remaining: int = 1  # requests still to fault; FOREVER until cleared
    delay_ms: int = 0  # hold the answer this long (the loop keeps serving)
    drop: bool = False  # close the connection instead of answering
    throttle_ms: int = 0  # throttle_time_ms of the answer
    node: int | None = None  # only requests to this node; None = every node

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "api": api_name(self.api_key), "api_key": self.api_key,
                "error": None if self.error is None else self.error.name.upper(),
                "error_code": 0 if self.error is None else int(self.error),
                "count": self.remaining, "delay_ms": self.delay_ms, "drop": self.drop,
                "throttle_ms": self.throttle_ms, "node": self.node}


INT32_MAX = 2**31 - 1  # throttle_time_ms is an int32 on the wire; a delay as long is 24 days


def _non_negative(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT32_MAX:
        raise FaultError(f"{name} must be an integer from 0 to {INT32_MAX}, got {value!r}")
    return value


class FaultRegistry:
    """The faults of one broker (every node of it). Used on the broker's event loop."""

    def __init__(self) -> None:
        # api key -> its faults, first registered first; a key is removed with its last fault,
        # so an empty dict means "no fault" to the connection's one check.
        self.by_api: dict[int, list[Fault]] = {}
        self._ids = itertools.count(1)

    def add(self, api: str | int, error: str | int | None = None, *, count: int = 1,
            delay_ms: int = 0, drop: bool = False, throttle_ms: int = 0,
            node: int | None = None) -> Fault:
        """Fault the next ``count`` requests of ``api`` (``count=-1``: all until cleared)."""
        key = resolve_api(api)
        code = resolve_error(error)
        if isinstance(count, bool) or not isinstance(count, int) or (count < 1 and count != FOREVER):
            raise FaultError(f"count must be a positive integer or -1 (until cleared), got {count!r}")
        delay_ms = _non_negative("delay_ms", delay_ms)
        throttle_ms = _non_negative("throttle_ms", throttle_ms)
        if not isinstance(drop, bool):
            raise FaultError(f"drop must be true or false, got {drop!r}")
        if node is not None and (isinstance(node, bool) or not isinstance(node, int)):
            raise FaultError(f"node must be a node id, got {node!r}")
        if code is None and not (delay_ms or drop or throttle_ms):
            raise FaultError("a fault needs an error, delay_ms, throttle_ms or drop")
        fault = Fault(next(self._ids), key, code, count, delay_ms, drop, throttle_ms, node)
        self.by_api.setdefault(key, []).append(fault)
        return fault

    def __iter__(self) -> Iterator[Fault]:
        for faults in self.by_api.values():
            yield from faults

    def list(self) -> list[dict[str, Any]]:
        return [fault.to_json() for fault in sorted(self, key=lambda f: f.id)]

    def clear(self) -> int:
        """Remove every fault; returns how many there were."""
        n = sum(len(faults) for faults in self.by_api.values())
        self.by_api.clear()
        return n

    def take(self, api_key: int, node_id: int) -> Fault | None:
        """The first fault for a request of ``api_key`` to ``node_id``, counted as used."""
        faults = self.by_api.get(api_key)
        if not faults:
            return None
        for fault in faults:
            if fault.node is None or fault.node == node_id:
                break
        else:
            return None
        if fault.remaining != FOREVER:
            fault.remaining -= 1
            if fault.remaining == 0:
                faults.remove(fault)
                if not faults:
                    del self.by_api[api_key]
        return fault

    def handler_for(self, api_key: int, node_id: int, handler: Handler) -> Handler:
        """``handler``, or one applying the fault this request takes."""
        fault = self.take(api_key, node_id)
        return handler if fault is None else _faulty(fault, handler)


def _faulty(fault: Fault, handler: Handler) -> Handler:
    def faulty(ctx: Any, request: Any) -> Any:
        log.info("fault %d applied to %s request %d from %s", fault.id, api_name(ctx.api_key),
                 ctx.correlation_id, ctx.client_id)
        if fault.error is not None:
            if ctx.api_key == PRODUCE_KEY and request.acks == 0:
                result: Any = CLOSE_CONNECTION  # Kafka's only signal to an acks=0 producer
            else:
                result = error_response(ctx.api_version, ctx.api_key, request, fault.error)
        else:
            result = handler(ctx, request)
        if fault.delay_ms or fault.drop or fault.throttle_ms or hasattr(result, "__await__"):
            return _finish(fault, ctx.api_version, result)
        return result

    return faulty


async def _finish(fault: Fault, version: int, result: Any) -> Any:
    if hasattr(result, "__await__"):
        result = await result
    if fault.delay_ms:
        await asyncio.sleep(fault.delay_ms / 1000)
    if fault.drop:
        return CLOSE_CONNECTION
    if fault.throttle_ms:
        result = with_throttle(result, version, fault.throttle_ms)
    return result


def with_throttle(result: Any, version: int, throttle_ms: int) -> Any:
    """``result`` with throttle_time_ms set (where its version has the field)."""
    if result is NO_RESPONSE or result is CLOSE_CONNECTION:
        return result
    if type(result) is SplicedResponse:  # Fetch: throttle_time_ms leads the body from v1
        first = result.parts[0] if result.parts else None
        if version >= 1 and isinstance(first, bytes) and len(first) >= 4:
            result.parts[0] = _I32.pack(throttle_ms) + first[4:]
        return result
    if (dataclasses.is_dataclass(result) and not isinstance(result, type)
            and "throttle_time" in field_names(type(result))):
        return dataclasses.replace(result, throttle_time=datetime.timedelta(milliseconds=throttle_ms))
    return result


# Error answers ----------------------------------------------------------------------------------

def error_response(version: int, api_key: int, request: Any, error: ErrorCode) -> Any:
    """The response of ``api_key`` v``version`` answering ``request`` with ``error``."""
    return _build(response_type(api_key, version), request, error)


def _entity_of(hint: Any) -> type | None:
    """The entity class of an array-of-entities field's type hint, else None."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and args:
        return _entity_of(args[0])
    if typing.get_origin(hint) is tuple and args and is_entity(args[0]):
        return args[0]
    return None


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _request_arrays(request: Any) -> list[tuple[str, Any]]:
    """(name, entries) of the request's array fields (entities or primitives)."""
    if not dataclasses.is_dataclass(request):
        return []
    return [(f.name, getattr(request, f.name)) for f in dataclasses.fields(request)
            if isinstance(getattr(request, f.name), tuple)]


def _build(cls: type, source: Any, error: ErrorCode) -> Any:
    """A ``cls`` answering ``source`` (a request entity, or a primitive key such as a partition
    index or group id) with ``error``."""
    hints = _hints(cls)
    arrays = dict(_request_arrays(source))
    unmatched = [name for name in arrays if name not in hints]
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        kind = f.metadata.get("kafka_type")
        entity = _entity_of(hint) if kind is None else None
        if entity is not None:
            entries = arrays.get(f.name)
            if entries is None and unmatched:
                entries = arrays[unmatched.pop(0)]
            values[f.name] = tuple(_build(entity, entry, error) for entry in entries or ())
        elif kind is None and f.default is not dataclasses.MISSING:
            values[f.name] = f.default
        elif kind is None and is_entity(hint):
            values[f.name] = _build(hint, None, error)
        elif kind is None:
            values[f.name] = None if type(None) in typing.get_args(hint) else ()
        elif kind == "error_code":
            values[f.name] = error
        else:
            values[f.name] = _key_value(f.name, source, hint)
            if values[f.name] is _MISSING:
                values[f.name] = _empty(f, kind, hint)
    return cls(**values)


_MISSING = object()


def _key_value(name: str, source: Any, hint: Any) -> Any:
    aliases = _KEY_ALIASES.get(name)
    if aliases is None:
        return _MISSING
    if not dataclasses.is_dataclass(source) or isinstance(source, type):
        # A primitive entry of the request (a topic name, a partition index, a group id).
        if isinstance(source, str) and name in ("name", "topic", "topic_name", "group_id",
                                                "resource_name"):
            return source
        if isinstance(source, int) and name in ("partition_index", "partition", "index"):
            return source
        return _MISSING
    for alias in aliases:
        if alias in field_names(type(source)):
            return getattr(source, alias)
    return _MISSING


def _empty(f: dataclasses.Field, kind: str, hint: Any) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    optional = type(None) in typing.get_args(hint)
    if typing.get_origin(hint) is tuple:
        return ()
    if kind == "string":
        return None if optional else ""
    if kind in ("bytes", "records"):
        return None if optional else b""
    if kind == "bool":
        return False
    if kind.startswith("timedelta"):
        return datetime.timedelta(0)
    if kind.startswith("datetime") or kind == "uuid":
        return None
    if kind.startswith(("int", "uint", "float")):
        return hint(-1)  # Kafka's "unknown" for offsets, ids, epochs and counts in error answers
    return None
