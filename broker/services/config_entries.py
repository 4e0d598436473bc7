"""The config entries DescribeConfigs (and CreateTopics v5+) report: value, source, synonyms."""

from __future__ import annotations

from typing import Any

from kafkette.storage.topic_config import BOOLEAN, INT, LONG, STRING, TOPIC_CONFIGS, effective_value

from ..config import DEFAULTS

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
