"""The config entries DescribeConfigs (and CreateTopics v5+) report: value, source, synonyms."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafkette.storage.topic_config import BOOLEAN, INT, LONG, STRING, TOPIC_CONFIGS, effective_value

from ..config import DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC
from ..config_def import DEFAULTS
from ..security.config_keys import is_password
from .broker_configs import is_dynamic

# ConfigSource values (DescribeConfigsResponse.ConfigSource).
DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 1, 2, 3
STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 4, 5
PASSWORD_TYPE = 9  # DescribeConfigsResponse.ConfigType
_SOURCE = {DYNAMIC_BROKER: DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT: DYNAMIC_DEFAULT_BROKER_CONFIG,
           STATIC: STATIC_BROKER_CONFIG}


def _broker_synonyms(key: str, broker_config: Any,
                     own: Mapping[str, str] | None) -> list[tuple[str, str, int]]:
    """(name, value, source) of ``key`` at every level that sets it, most specific first (Kafka's
    ConfigHelper.configSynonyms). ``own``: the described broker's per-broker dynamic layer (None:
    the cluster default is described, which has no per-broker level). A static value equal to
    Kafka's default is reported as the default."""
    out = []
    if own is not None and key in own:
        out.append((key, own[key], DYNAMIC_BROKER_CONFIG))
    for level, value in broker_config.layers(key):
        if level == DYNAMIC_DEFAULT:
            out.append((key, value, DYNAMIC_DEFAULT_BROKER_CONFIG))
        elif level == STATIC and (key not in DEFAULTS or value != DEFAULTS[key]):
            out.append((key, value, STATIC_BROKER_CONFIG))
    if key in DEFAULTS:
        out.append((key, DEFAULTS[key], DEFAULT_CONFIG))
    return out


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
        if d.synonym:
            applied = dict(broker_config.layers(d.synonym)).get(DYNAMIC_BROKER)
            own = {d.synonym: applied} if applied is not None else {}
            broker_levels = _broker_synonyms(d.synonym, broker_config, own)
            if not any(s == DEFAULT_CONFIG for _, _, s in broker_levels):
                broker_levels.append((d.synonym, d.default, DEFAULT_CONFIG))
            synonyms += broker_levels
        if where == "topic":
            source = DYNAMIC_TOPIC_CONFIG
        elif where == "broker":
            source = synonyms[0][2] if synonyms else DEFAULT_CONFIG
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


def broker_config_entries(broker_config: Any, keys: set[str] | None,
                          own: Mapping[str, str] | None,
                          cluster_default: Mapping[str, str]) -> list[dict[str, Any]]:
    """The configs of one broker (``own``: its per-broker dynamic layer) or, with ``own`` None,
    of the cluster-wide default resource "", which lists only its dynamic values (Kafka)."""
    names = set(cluster_default) if own is None else set(broker_config) | set(own)
    out = []
    for key in sorted(names):
        if keys is not None and key not in keys:
            continue
        synonyms = _broker_synonyms(key, broker_config, own)
        source = synonyms[0][2] if synonyms else DEFAULT_CONFIG
        if source in (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG):
            value = synonyms[0][1]
        else:
            value = broker_config.get(key, synonyms[0][1] if synonyms else "")
        if is_password(key):  # Kafka never returns a sensitive value (JAAS, key passwords)
            out.append(dict(name=key, value=None, source=source, type=PASSWORD_TYPE,
                            synonyms=[(n, None, s) for n, _v, s in synonyms],
                            read_only=True, sensitive=True))
            continue
        out.append(dict(name=key, value=value, source=source, type=_guess_type(value),
                        synonyms=synonyms, read_only=not is_dynamic(key)))
    return out
