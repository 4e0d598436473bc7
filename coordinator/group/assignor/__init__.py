"""Server-side partition assignors of the consumer group protocol (KIP-848)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .range import RangeAssignor
from .uniform import UniformAssignor

if TYPE_CHECKING:
    from .spec import PartitionAssignor

_BY_NAME: dict[str, type] = {"uniform": UniformAssignor, "range": RangeAssignor}
# Kafka's group.consumer.assignors takes class names; accept those too
_KAFKA_CLASSES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}
DEFAULT_ASSIGNORS = "uniform,range"


def assignors_from_config(value: str | list[str]) -> list[PartitionAssignor]:
    """``group.consumer.assignors`` as assignor objects, first = default. ValueError on an
    unknown name or an empty list."""
    names = value.split(",") if isinstance(value, str) else list(value)
    result: list[PartitionAssignor] = []
    for raw in (n.strip() for n in names):
        if not raw:
            continue
        name = _KAFKA_CLASSES.get(raw, raw)
        if name not in _BY_NAME:
            raise ValueError(f"unknown consumer group assignor {raw!r} "
                             f"(known: {', '.join(sorted(_BY_NAME))})")
        if all(a.name != name for a in result):
            result.append(_BY_NAME[name]())
    if not result:
        raise ValueError("group.consumer.assignors must name at least one assignor")
    return result


def __getattr__(name: str) -> Any:
    if name == "PartitionAssignor":  # spec.py only when asked (see uniform.py)
        from .spec import PartitionAssignor

        return PartitionAssignor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["DEFAULT_ASSIGNORS", "RangeAssignor", "UniformAssignor", "assignors_from_config"]
