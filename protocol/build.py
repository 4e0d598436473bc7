"""Building kio entities generically across versions.

kio generates one dataclass per (message, version); nested structs are their own classes.
``make`` drops fields a version does not have, ``item_type`` finds the class of a nested field.
"""

from __future__ import annotations

import datetime
import types
import typing
from functools import cache
from typing import Any


@cache
def field_names(cls: type[Any]) -> frozenset[str]:
    """The field names of a kio entity class."""
    return frozenset(cls.__dataclass_fields__)


@cache
def _timedelta_fields(cls: type[Any]) -> frozenset[str]:
    return frozenset(
        name for name, f in cls.__dataclass_fields__.items()
        if str(f.metadata.get("kafka_type", "")).startswith("timedelta")
    )


def make(cls: type, **fields: Any) -> Any:
    """Build ``cls`` from the fields it has; plain ints become timedeltas (ms) where kio wants one."""
    names = field_names(cls)
    kept = {k: v for k, v in fields.items() if k in names}
    for name in _timedelta_fields(cls):
        value = kept.get(name)
        if isinstance(value, int):
            kept[name] = datetime.timedelta(milliseconds=value)
    return cls(**kept)


def has_field(cls_or_obj: Any, name: str) -> bool:
    cls = cls_or_obj if isinstance(cls_or_obj, type) else type(cls_or_obj)
    return name in field_names(cls)


@cache
def item_type(cls: type, name: str) -> type:
    """The entity class held by field ``name`` (unwrapping tuple[...] and Optional)."""
    hints = typing.get_type_hints(cls)
    tp = hints[name]
    while True:
        origin = typing.get_origin(tp)
        if origin is tuple:
            tp = typing.get_args(tp)[0]
        elif origin in (typing.Union, types.UnionType):
            tp = next(a for a in typing.get_args(tp) if a is not type(None))
        else:
            return tp
