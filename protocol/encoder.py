"""Compiled entity encoders: the bytes of kio's ``entity_writer``, several times faster.

kio's writer walks a dict of per-field closures and writes every primitive through its own
``struct.pack`` into a ``BytesIO``; a 100-member JoinGroup answer costs ~50 µs that way. Like
``validate.py`` compiles a checker per request schema, ``entity_encoder(entity_type)`` walks one
schema (kio's dataclasses and their field metadata) and ``exec``s one straight-line function
``encode(value) -> bytes``:

* consecutive fixed-size fields are packed by one ``struct.pack`` (an empty tagged-field count
  is a pad byte of that pack);
* nested structs and array elements are written inline (no call per element), to a list of
  byte strings joined once at the end;
* arrays of fixed-size primitives are packed in one call.

The output is byte for byte kio's, including what kio refuses: a legacy string longer than
32,767 bytes, bytes or an array longer than 2^31 - 1 raise ``OutOfBoundValue`` (the codec turns
it into ``UnencodableResponse``); an int out of its range raises ``struct.error``; ``None``
where the version has no null raises ``TypeError``. tests/hostile/test_encoder.py compares the
two on random values of every response (and request) schema kio knows.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import MISSING, Field, fields
from functools import cache
from typing import Any

from kio.serial._implicit_defaults import get_tagged_field_default
from kio.serial.errors import OutOfBoundValue

from .validate import is_entity, unwrap
from .varint import ONE_BYTE_UVARINTS, encode_uvarint

Encoder = Callable[[Any], bytes]

_I16_MAX = 2**15 - 1
_I32_MAX = 2**31 - 1
_ZERO_UUID = b"\x00" * 16

# kafka_type -> (struct code, expression turning the value ``X`` into what is packed)
_FIXED: dict[str, tuple[str, str]] = {
    "bool": ("?", "X"), "int8": ("b", "X"), "int16": ("h", "X"), "int32": ("i", "X"),
    "int64": ("q", "X"), "uint8": ("B", "X"), "uint16": ("H", "X"), "uint32": ("I", "X"),
    "uint64": ("Q", "X"), "float64": ("d", "X"), "error_code": ("h", "X.value"),
    "timedelta_i32": ("i", "round(X.total_seconds() * 1000)"),
    "timedelta_i64": ("q", "round(X.total_seconds() * 1000)"),
    "datetime_i64": ("q", "round(X.timestamp() * 1000)"),
    "uuid": ("16s", "uuid_bytes(X)"),
}
_NULLABLE_FIXED = {"datetime_i64": ("q", "datetime_or_null(X)"), "uuid": _FIXED["uuid"]}
_BULK = {"b", "h", "i", "q", "B", "H", "I", "Q", "d", "?"}  # X itself is packed


def _uuid_bytes(value: Any) -> bytes:
    return _ZERO_UUID if value is None else value.bytes


def _datetime_or_null(value: Any) -> int:
    return -1 if value is None else round(value.timestamp() * 1000)


def _too_long(kind: str, n: int, limit: int) -> OutOfBoundValue:
    return OutOfBoundValue(f"{kind} is too long for legacy format ({n} > {limit})")


@cache
def entity_encoder(entity_type: type) -> Encoder:
    """``encode(value) -> bytes`` for one kio entity type (a request or response version)."""
    return _Compiler().compile(entity_type)


class _Compiler:
    def __init__(self) -> None:
        self.namespace: dict[str, Any] = {
            "uv": encode_uvarint, "UV1": ONE_BYTE_UVARINTS, "OOB": OutOfBoundValue, "too_long": _too_long,
            "uuid_bytes": _uuid_bytes, "datetime_or_null": _datetime_or_null,
            "pack": struct.pack,
        }
        self.counter = 0

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def const(self, value: Any, prefix: str = "K") -> str:
        name = self.fresh(prefix)
        self.namespace[name] = value
        return name

    def compile(self, entity_type: type) -> Encoder:
        em = _Emitter(self, "a", 1)
        self.entity(em, entity_type, "v")
        em.flush()
        source = "\n".join(["def encode(v):", "    out = []", "    a = out.append", *em.lines,
                            "    return b''.join(out)"])
        exec(compile(source, f"<encoder {entity_type.__qualname__}>", "exec"),  # noqa: S102
             self.namespace)
        encode = self.namespace.pop("encode")
        encode.source = source
        return encode

    # One entity, written inline ---------------------------------------------------------------

    def entity(self, em: _Emitter, entity_type: type[Any], var: str) -> None:
        flexible = bool(entity_type.__flexible__)
        tagged: list[tuple[int, Field]] = []
        for fld in fields(entity_type):
            tag = fld.metadata.get("tag")
            if tag is not None:
                tagged.append((int(tag), fld))
                continue
            self.field(em, fld, f"{var}.{fld.name}", flexible, tag=False)
        if not flexible:
            if tagged:
                raise ValueError("Found tagged fields on a non-flexible model")
            return
        if not tagged:
            em.fixed("x", None)  # zero tagged fields: one pad byte
            return
        self.tagged_fields(em, sorted(tagged, key=lambda t: t[0]), var, flexible)

    def tagged_fields(self, em: _Emitter, tagged: list[tuple[int, Field]], var: str,
                      flexible: bool) -> None:
        em.flush()
        tags, count = self.fresh("tags"), self.fresh("n")
        em.line(f"{tags} = []")
        em.line(f"{count} = 0")
        for tag, fld in tagged:
            implicit = get_tagged_field_default(fld)
            x = self.fresh("t")
            em.line(f"{x} = {var}.{fld.name}")
            checks = []
            if fld.default is not MISSING:
                checks.append(f"{x} == {self.const(fld.default, 'D')}")
            if fld.default == MISSING:
                checks.append(f"{x} == {self.const(implicit, 'I')}")
            em.line(f"if not ({' or '.join(checks)}):")
            sub, app = self.fresh("sub"), self.fresh("sa")
            inner = _Emitter(self, app, em.indent + 1)
            inner.line(f"{sub} = []")
            inner.line(f"{app} = {sub}.append")
            self.field(inner, fld, x, flexible, tag=True)
            inner.flush()
            data = self.fresh("d")
            inner.line(f"{data} = b''.join({sub})")
            inner.line(f"{tags}.append({self.const(encode_uvarint(tag), 'TAG')} + uv(len({data})) + {data})")
            inner.line(f"{count} += 1")
            em.lines += inner.lines
        em.line(f"{em.app}(uv({count}))")
        em.line(f"{em.app}(b''.join({tags}))")

    def field(self, em: _Emitter, fld: Field, expr: str, flexible: bool, tag: bool) -> None:
        inner, is_array, nullable = unwrap(fld.type)
        if tag:  # kio writes a tag's value with the non-nullable writer
            nullable = False
        kafka_type = fld.metadata.get("kafka_type")
        if is_array:
            self.array(em, inner, kafka_type, expr, flexible)
        elif is_entity(inner):
            if nullable:  # KIP-893: int8 -1 for null, 1 before the struct
                em.flush()
                x = self.fresh("s")
                em.line(f"{x} = {expr}")
                em.line(f"if {x} is None: {em.app}(b'\\xff')")
                em.line("else:")
                body = em.nested()
                body.fixed("b", "1")
                self.entity(body, inner, x)
                body.flush()
                em.lines += body.lines
            else:
                self.entity(em, inner, expr)
        else:
            self.primitive(em, str(kafka_type), expr, flexible, nullable)

    def primitive(self, em: _Emitter, kafka_type: str, expr: str, flexible: bool,
                  nullable: bool) -> None:
        if kafka_type in _FIXED:
            table = _NULLABLE_FIXED if nullable else _FIXED
            if kafka_type not in table:
                raise NotImplementedError(f"nullable {kafka_type}")
            code, conv = table[kafka_type]
            em.fixed(code, conv.replace("X", expr))
            return
        if kafka_type not in ("string", "bytes", "records"):
            raise NotImplementedError(kafka_type)
        em.flush()
        x, a = self.fresh("x"), em.app
        em.line(f"{x} = {expr}")
        if flexible:  # compact string / bytes: str is encoded, bytes-like written as is
            if nullable:
                em.line(f"if {x} is None: {a}(b'\\x00')")
                em.line("else:")
                body = em.nested()
            else:
                body = em
            body.line(f"if isinstance({x}, str): {x} = {x}.encode()")
            body.line(f"n = len({x}) + 1")
            body.line(f"{a}(UV1[n] if n < 128 else uv(n))")
            body.line(f"{a}({x})")
            if nullable:
                em.lines += body.lines
            return
        if kafka_type == "string":
            null, width, limit, kind, prepare = (b"\xff\xff", "h", _I16_MAX, "String",
                                                 f"{x} = {x}.encode()")
        else:
            null, width, limit, kind, prepare = b"\xff\xff\xff\xff", "i", _I32_MAX, "Bytes", ""
        if nullable:
            em.line(f"if {x} is None: {a}({null!r})")
        else:
            em.line(f"if {x} is None: raise TypeError('Unexpectedly received None value')")
        em.line("else:")
        body = em.nested()
        if prepare:
            body.line(prepare)
        body.line(f"n = len({x})")
        body.line(f"if n > {limit}: raise too_long({kind!r}, n, {limit})")
        body.line(f"{a}(pack('>{width}', n))")
        body.line(f"{a}({x})")
        em.lines += body.lines

    def array(self, em: _Emitter, inner: Any, kafka_type: str | None, expr: str,
              flexible: bool) -> None:
        em.flush()
        xs, a = self.fresh("xs"), em.app
        em.line(f"{xs} = {expr}")
        if flexible:
            em.line(f"if {xs} is None: {a}(b'\\x00')")
            em.line("else:")
            body = em.nested()
            body.line(f"n = len({xs}) + 1")
            body.line(f"{a}(UV1[n] if n < 128 else uv(n))")
        else:
            em.line(f"if {xs} is None: {a}(b'\\xff\\xff\\xff\\xff')")
            em.line("else:")
            body = em.nested()
            body.line(f"n = len({xs})")
            body.line(f"if n > {_I32_MAX}: raise too_long('Sequence', n, {_I32_MAX})")
            body.line(f"{a}(pack('>i', n))")
        if not is_entity(inner) and kafka_type in _FIXED and _FIXED[kafka_type][1] == "X":
            code = _FIXED[kafka_type][0]
            if code in _BULK:
                body.line(f"{a}(pack('>%d{code}' % len({xs}), *{xs}))")
                em.lines += body.lines
                return
        item = self.fresh("e")
        body.line(f"for {item} in {xs}:")
        loop = body.nested()
        if is_entity(inner):
            self.entity(loop, inner, item)
        else:
            self.primitive(loop, kafka_type or "", item, flexible, nullable=False)
        loop.flush()
        if not loop.lines:
            loop.line("pass")
        body.lines += loop.lines
        em.lines += body.lines


class _Emitter:
    """Lines of one block; consecutive fixed-size values are packed by one ``struct.pack``."""

    def __init__(self, compiler: _Compiler, app: str, indent: int) -> None:
        self.compiler = compiler
        self.app = app
        self.indent = indent
        self.lines: list[str] = []
        self.codes: list[str] = []
        self.args: list[str] = []

    def nested(self) -> _Emitter:
        return _Emitter(self.compiler, self.app, self.indent + 1)

    def line(self, text: str) -> None:
        self.flush()
        self.lines.append("    " * self.indent + text)

    def fixed(self, code: str, arg: str | None) -> None:
        self.codes.append(code)
        if arg is not None:
            self.args.append(arg)

    def flush(self) -> None:
        if not self.codes:
            return
        fmt = ">" + "".join(self.codes)
        codes, args = self.codes, self.args
        self.codes, self.args = [], []
        if not args:
            text = f"{self.app}({struct.pack(fmt)!r})"
        else:
            packer = self.compiler.const(struct.Struct(fmt).pack, "P")
            text = f"{self.app}({packer}({', '.join(args)}))"
        del codes
        self.lines.append("    " * self.indent + text)
