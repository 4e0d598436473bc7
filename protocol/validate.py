"""Bounds check of a request body before kio decodes it.

kio's native readers allocate from counts and lengths read off the wire; a 22-byte request
announcing 2^31 array elements makes the allocation fail, and Rust aborts the whole process.
``body_checker(request_type)`` walks the schema of one request version (kio's dataclasses and
their field metadata) and compiles a checker that reads only lengths, counts and varints:

* an array's count times the smallest encoding of one element must fit in the bytes left,
* a string's or bytes' length must fit in the bytes left, a string at most 32,767 bytes
  (Kafka's generated readers reject longer ones: "string field X had invalid length"),
* null only where the version declares the field nullable,
* varints at most 5 bytes, tagged fields inside their declared size,
* at most ``max_elements`` array elements and tagged fields in one request: the work a
  request may cause on the event loop (decoding, handling, encoding the answer) is bounded.

Fixed-size fields next to each other are merged into one skip, so a heartbeat costs a few
steps. The checker raises ``MalformedRequest``; the connection closes as for any bad request.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import Field, fields, is_dataclass
from functools import cache
from types import EllipsisType, NoneType, UnionType
from typing import Any, TypeGuard, Union, get_args, get_origin


def is_entity(value: Any) -> TypeGuard[type[Any]]:
    """A kio entity class (a generated dataclass), as opposed to a primitive field type."""
    return isinstance(value, type) and is_dataclass(value)


def is_flexible(entity: type[Any]) -> bool:
    """Whether a kio entity's version is flexible (compact strings, tagged fields)."""
    return bool(entity.__flexible__)


_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
MAX_STRING = 0x7FFF

_FIXED_SIZES = {
    "bool": 1, "int8": 1, "int16": 2, "uint16": 2, "error_code": 2, "int32": 4, "uint32": 4,
    "timedelta_i32": 4, "int64": 8, "uint64": 8, "timedelta_i64": 8, "datetime_i64": 8,
    "float64": 8, "uuid": 16,
}

# check(buf, pos, end, budget) -> pos; ``budget`` is a one-item list of elements still allowed.
Check = Callable[[bytes, int, int, list[int]], int]


class MalformedRequest(Exception):
    """The request's lengths or counts do not fit its frame, or it asks for too much work."""


def check_body(request_type: type, buf: bytes, pos: int, max_elements: int) -> None:
    """Raise ``MalformedRequest`` unless ``buf[pos:]`` is safe to hand to kio's reader."""
    body_checker(request_type)(buf, pos, len(buf), [max_elements])


@cache
def body_checker(request_type: type) -> Check:
    compiler = _Compiler()
    return compiler.namespace[compiler.entity(request_type)]


# Primitive readers ---------------------------------------------------------------------------

def _uvarint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    if pos >= end:
        raise MalformedRequest("truncated varint")
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    value = b & 0x7F
    shift = 7
    pos += 1
    while True:
        if pos >= end:
            raise MalformedRequest("truncated varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise MalformedRequest("varint longer than 5 bytes")


# Code generation: one straight-line function per entity (a closure per field cost twice as much).

_TRUNCATED = "raise Malformed('truncated request body')"


def _null_lines(kind: str, name: str, var: str, flexible: bool, nullable: bool) -> list[str]:
    """The branch taken when a length or count is negative: null where allowed, else malformed."""
    if nullable and flexible:
        return ["    pass"]
    if nullable:
        return [f"    if {var} != -1: raise Malformed('{kind} {name} has invalid length %d' % {var})"]
    return [f"    raise Malformed('non-nullable {kind} {name} was serialized as null')"]


def _string_lines(name: str, flexible: bool, nullable: bool, limit: int | None) -> list[str]:
    """Lines checking one string/bytes field at ``pos``."""
    if flexible:
        lines = ["if pos >= end: " + _TRUNCATED,
                 "n = buf[pos]",
                 "if n < 0x80: pos += 1",
                 "else: n, pos = uvarint(buf, pos, end)",
                 "n -= 1"]
    else:
        width, unpack = (2, "i16") if limit is not None else (4, "i32")
        lines = [f"if pos + {width} > end: " + _TRUNCATED,
                 f"n = {unpack}(buf, pos)[0]",
                 f"pos += {width}"]
    lines += ["if n < 0:", *_null_lines("field", name, "n", flexible, nullable), "else:"]
    if limit is not None:
        lines.append(f"    if n > {limit}: raise Malformed("
                     f"'string field {name} had invalid length %d' % n)")
    return lines + ["    pos += n",
                    f"    if pos > end: raise Malformed('field {name} runs past the request')"]


def _array_lines(name: str, flexible: bool, nullable: bool, item: str | None,
                 item_size: int) -> list[str]:
    """Lines checking one array at ``pos``: ``item`` checks one element, None: fixed size."""
    if flexible:
        lines = ["if pos >= end: " + _TRUNCATED,
                 "count = buf[pos]",
                 "if count < 0x80: pos += 1",
                 "else: count, pos = uvarint(buf, pos, end)",
                 "count -= 1"]
    else:
        lines = ["if pos + 4 > end: " + _TRUNCATED, "count = i32(buf, pos)[0]", "pos += 4"]
    lines += [
        "if count < 0:", *_null_lines("array", name, "count", flexible, nullable), "else:",
        f"    if count * {item_size} > end - pos: raise Malformed("
        f"'array {name} of %d elements needs at least %d bytes, %d left'"
        f" % (count, count * {item_size}, end - pos))",
        "    budget[0] -= count",
        f"    if budget[0] < 0: raise Malformed('array {name} exceeds the element limit')",
    ]
    if item is None:
        return lines + [f"    pos += count * {item_size}"]
    return lines + ["    for _ in range(count):", f"        pos = {item}(buf, pos, end, budget)"]


class _Compiler:
    def __init__(self) -> None:
        self.namespace: dict[str, Any] = {
            "Malformed": MalformedRequest, "uvarint": _uvarint, "i16": _I16.unpack_from,
            "i32": _I32.unpack_from,
        }
        self.names: dict[type[Any], str] = {}

    def entity(self, entity: type[Any]) -> str:
        """Name of the generated checker of ``entity`` (compiled on first use)."""
        name = self.names.get(entity)
        if name is not None:
            return name
        name = f"check_{len(self.names)}_{entity.__name__}"
        self.names[entity] = name
        flexible = bool(entity.__flexible__)
        body: list[str] = []
        fixed = 0
        tagged: dict[int, Check] = {}
        for fld in fields(entity):
            tag = fld.metadata.get("tag")
            if tag is not None:
                inner, is_array, _nullable = unwrap(fld.type)
                tagged[tag] = self.namespace[self._function(
                    f"tag_{name}_{fld.name}",
                    # Null allowed in a tag's value, except a struct: it has no null marker.
                    self._field_lines(fld, flexible, inner, is_array, not is_entity(inner))
                    if is_array or is_entity(inner) or _fixed_size(fld) is None
                    else [f"pos += {_fixed_size(fld)}", "if pos > end: " + _TRUNCATED])]
                continue
            inner, is_array, nullable = unwrap(fld.type)
            size = _fixed_size(fld) if not is_array and not is_entity(inner) else None
            if size is not None:
                fixed += size
                continue
            lines = self._field_lines(fld, flexible, inner, is_array, nullable)
            if fixed:
                # The next field's own bound check (pos >= end, pos + n > end) covers the skip.
                bounded = lines[0].startswith("if pos ")
                body += [f"pos += {fixed}"] + ([] if bounded else ["if pos > end: " + _TRUNCATED])
                fixed = 0
            body += lines
        if fixed:
            body += [f"pos += {fixed}", "if pos > end: " + _TRUNCATED]
        if flexible:
            tags_name = f"tags_{name}"
            self.namespace[tags_name] = _tagged_fields_checker(tagged)
            body += ["if pos < end and buf[pos] == 0: pos += 1",
                     f"else: pos = {tags_name}(buf, pos, end, budget)"]
        return self._function(name, body)

    def _function(self, name: str, body: list[str]) -> str:
        source = "\n".join([f"def {name}(buf, pos, end, budget):"]
                           + ["    " + line for line in body] + ["    return pos"])
        exec(compile(source, f"<validate {name}>", "exec"), self.namespace)  # noqa: S102
        return name

    def _field_lines(self, fld: Field, flexible: bool, inner: Any, is_array: bool,
                     nullable: bool) -> list[str]:
        if is_array:
            if is_entity(inner):
                return _array_lines(fld.name, flexible, nullable, self.entity(inner),
                                    _min_size(inner))
            size = _fixed_size(fld)
            if size is not None:
                return _array_lines(fld.name, flexible, nullable, None, size)
            string_name = self._function(
                f"item_{fld.name}_{len(self.namespace)}",
                _string_lines(fld.name, flexible, False, _string_limit(fld)))
            return _array_lines(fld.name, flexible, nullable, string_name,
                                1 if flexible else (2 if _string_limit(fld) else 4))
        if is_entity(inner):
            call = f"pos = {self.entity(inner)}(buf, pos, end, budget)"
            if not nullable:
                return [call]
            return ["if pos >= end: " + _TRUNCATED,
                    "if buf[pos] == 0xFF: pos += 1",  # KIP-893 nullable struct: int8 -1 = null
                    "else:", "    pos += 1", "    " + call]
        return _string_lines(fld.name, flexible, nullable, _string_limit(fld))


def unwrap(field_type: Any) -> tuple[Any, bool, bool]:
    """(inner type, is array, nullable) of a kio field annotation."""
    nullable = False
    if get_origin(field_type) in (UnionType, Union):
        args = [a for a in get_args(field_type) if a is not NoneType]
        nullable = len(args) < len(get_args(field_type))
        field_type = args[0]
    if get_origin(field_type) is tuple:
        inner, ellipsis = get_args(field_type)
        assert isinstance(ellipsis, EllipsisType) or ellipsis is Ellipsis
        return inner, True, nullable
    return field_type, False, nullable


def _min_size(entity: type[Any]) -> int:
    """Smallest encoding of one ``entity``: what each of its array elements takes at least."""
    flexible = bool(entity.__flexible__)
    size = 1 if flexible else 0  # the tagged-field count
    for fld in fields(entity):
        if "tag" in fld.metadata:
            continue
        inner, is_array, nullable = unwrap(fld.type)
        if is_array:
            size += 1 if flexible else 4
        elif not is_entity(inner) and _fixed_size(fld) is None:
            size += 1 if flexible else (2 if _string_limit(fld) else 4)
        elif is_entity(inner):
            size += 1 if nullable else _min_size(inner)
        else:
            size += _fixed_size(fld) or 0
    return max(size, 1)


def _fixed_size(fld: Field) -> int | None:
    return _FIXED_SIZES.get(fld.metadata.get("kafka_type", ""))


def _string_limit(fld: Field) -> int | None:
    return MAX_STRING if fld.metadata.get("kafka_type") == "string" else None


def _tagged_fields_checker(known: dict[int, Check]) -> Check:
    def check(buf: bytes, pos: int, end: int, budget: list[int]) -> int:
        if pos < end and buf[pos] == 0:  # no tagged fields: the common case
            return pos + 1
        count, pos = _uvarint(buf, pos, end)
        if count * 2 > end - pos:  # a tag and a size: two bytes at least
            raise MalformedRequest(f"{count} tagged fields need at least {count * 2} bytes, "
                                   f"{end - pos} left")
        budget[0] -= count
        if budget[0] < 0:
            raise MalformedRequest("tagged fields exceed the element limit")
        for _ in range(count):
            tag, pos = _uvarint(buf, pos, end)
            size, pos = _uvarint(buf, pos, end)
            field_end = pos + size
            if field_end > end:
                raise MalformedRequest(f"tagged field {tag} runs past the request")
            inner = known.get(tag)
            if inner is not None and inner(buf, pos, field_end, budget) > field_end:
                raise MalformedRequest(f"tagged field {tag} runs past its size")
            pos = field_end
        return pos
    return check
