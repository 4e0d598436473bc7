"""DescribeConfigs (key 32), versions 1-4, for topics and the broker."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make
from kafkette.storage.topic_config import BOOLEAN, INT, LONG, STRING, TOPIC_CONFIGS, effective_value

from ..config import DEFAULTS
from ..context import RequestContext
from ..registry import api

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
# ConfigSource values.
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5


def _broker_source(key: str, broker_config: Any) -> int:
    value = broker_config.get(key)
    return STATIC_BROKER_CONFIG if key in DEFAULTS and value != DEFAULTS[key] or (
        key not in DEFAULTS and value is not None) else DEFAULT_CONFIG


def topic_config_entries(overrides: dict[str, str], broker_config: Any,
                         keys: set[str] | None = None) -> list[dict[str, Any]]:
    """Every topic config: name, value, source, type and synonyms (most specific first)."""
    out = []
    for name, d in sorted(TOPIC_CONFIGS.items()):
        if keys is not None and name not in keys:
            continue
        value, where = effective_value(name, overrides, broker_config)
        synonyms = []
        if name in overrides:
            synonyms.append((name, overrides[name], DYNAMIC_TOPIC_CONFIG))
        if d.synonym and d.synonym in broker_config and _broker_source(d.synonym, broker_config) == STATIC_BROKER_CONFIG:
            synonyms.append((d.synonym, broker_config[d.synonym], STATIC_BROKER_CONFIG))
        if d.synonym:
            synonyms.append((d.synonym, DEFAULTS.get(d.synonym, d.default), DEFAULT_CONFIG))
        if where == "topic":
            source = DYNAMIC_TOPIC_CONFIG
        elif where == "broker":
            source = _broker_source(d.synonym or "", broker_config)
        else:
            source = DEFAULT_CONFIG
        out.append(dict(name=name, value=value, source=source, type=d.type, synonyms=synonyms,
                        read_only=False))
    return out


def _guess_type(value: str) -> int:
    if value in ("true", "false"):
        return BOOLEAN
    try:
        n = int(value)
    except ValueError:
        return STRING
    return INT if -(2**31) <= n < 2**31 else LONG


def broker_config_entries(broker_config: Any, keys: set[str] | None) -> list[dict[str, Any]]:
    out = []
    for key in sorted(broker_config):
        if keys is not None and key not in keys:
            continue
        value = broker_config[key]
        source = _broker_source(key, broker_config)
        synonyms = [(key, value, source)]
        if source != DEFAULT_CONFIG and key in DEFAULTS:
            synonyms.append((key, DEFAULTS[key], DEFAULT_CONFIG))
        out.append(dict(name=key, value=value, source=source, type=_guess_type(value),
                        synonyms=synonyms, read_only=True))
    return out


@api(32, 1, 4)
def handle_describe_configs(ctx: RequestContext, req: Any):
    cls = ctx.response_type
    result_cls = item_type(cls, "results")
    entry_cls = item_type(result_cls, "configs")
    syn_cls = item_type(entry_cls, "synonyms")
    broker = ctx.broker
    results = []
    for res in req.resources:
        keys = set(res.configuration_keys) if res.configuration_keys is not None else None
        error, message, entries = ErrorCode.none, None, []
        if res.resource_type == TOPIC:
            info = broker.logs.topic(res.resource_name)
            if info is None:
                error, message = ErrorCode.unknown_topic_or_partition, \
                    f"The topic '{res.resource_name}' does not exist."
            else:
                entries = topic_config_entries(dict(info.configs), broker.config, keys)
        elif res.resource_type == BROKER:
            if res.resource_name not in ("", str(broker.config.node_id)):
                error, message = ErrorCode.invalid_request, (
                    f"Unexpected broker id, expected {broker.config.node_id} or empty string, "
                    f"but received {res.resource_name}")
            else:
                entries = broker_config_entries(broker.config, keys)
        elif res.resource_type == BROKER_LOGGER:
            entries = []
        else:
            error, message = ErrorCode.invalid_request, \
                f"Unsupported resource type {res.resource_type}"
        configs = tuple(
            make(entry_cls, name=e["name"], value=e["value"], read_only=e["read_only"],
                 config_source=e["source"], is_sensitive=False, is_default=e["source"] == DEFAULT_CONFIG,
                 synonyms=tuple(make(syn_cls, name=n, value=v, source=s) for n, v, s in e["synonyms"])
                 if req.include_synonyms else (),
                 config_type=e["type"], documentation=None)
            for e in entries
        )
        results.append(make(result_cls, error_code=error, error_message=message,
                            resource_type=res.resource_type, resource_name=res.resource_name,
                            configs=configs))
    return make(cls, throttle_time=timedelta(0), results=tuple(results))


__all__ = ["topic_config_entries", "LONG"]
