"""GROUP config resources (Kafka 4.0's GroupConfig): DescribeConfigs and (Incremental)AlterConfigs
on resource type 32, named by a group id that need not exist.

A group's own values override the broker's group defaults (``group.consumer.session.timeout.ms``
...). They are checked as Kafka checks them (names, types, the broker's min/max bounds, session
above heartbeat; INVALID_CONFIG with Kafka's message), stored durably in ``log.dirs`` and, for
``consumer.session.timeout.ms`` / ``consumer.heartbeat.interval.ms``, handed to the group
coordinator through ``consumer_overrides``: a consumer-protocol member's next heartbeat gets the
group's interval and session timeout, as in Kafka; likewise ``share.session.timeout.ms`` /
``share.heartbeat.interval.ms`` through ``share_overrides`` for share group members.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from kio.schema.errors import ErrorCode

from kafkette.storage.topic_config import INT, STRING

from .config_file import read_config_file, write_config_file
from .errors import ServiceError

log = logging.getLogger("kafkette.config")

GROUP_CONFIGS_FILE = "kafkette-group-configs.json"
GROUP_CONFIG_SOURCE, DEFAULT_CONFIG = 8, 5  # DescribeConfigsResponse.ConfigSource

# Kafka's share group defaults (GroupCoordinatorConfig / ShareGroupConfig), used when the broker
# config does not set them.
_SHARE_DEFAULTS = {
    "group.share.session.timeout.ms": "45000",
    "group.share.min.session.timeout.ms": "45000",
    "group.share.max.session.timeout.ms": "60000",
    "group.share.heartbeat.interval.ms": "5000",
    "group.share.min.heartbeat.interval.ms": "5000",
    "group.share.max.heartbeat.interval.ms": "15000",
    "group.share.record.lock.duration.ms": "30000",
    "group.share.min.record.lock.duration.ms": "15000",
    "group.share.max.record.lock.duration.ms": "60000",
}


class GroupConfigKey(NamedTuple):
    type: int  # DescribeConfigs ConfigType
    default_key: str | None  # the broker config that gives the default
    low_key: str | None  # the broker configs that bound it
    high_key: str | None
    at_least: int = 1
    default: str = ""
    choices: tuple[str, ...] = ()


GROUP_CONFIG_KEYS: dict[str, GroupConfigKey] = {
    "consumer.session.timeout.ms": GroupConfigKey(
        INT, "group.consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms",
        "group.consumer.max.session.timeout.ms"),
    "consumer.heartbeat.interval.ms": GroupConfigKey(
        INT, "group.consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms",
        "group.consumer.max.heartbeat.interval.ms"),
    "share.session.timeout.ms": GroupConfigKey(
        INT, "group.share.session.timeout.ms", "group.share.min.session.timeout.ms",
        "group.share.max.session.timeout.ms"),
    "share.heartbeat.interval.ms": GroupConfigKey(
        INT, "group.share.heartbeat.interval.ms", "group.share.min.heartbeat.interval.ms",
        "group.share.max.heartbeat.interval.ms"),
    "share.record.lock.duration.ms": GroupConfigKey(
        INT, "group.share.record.lock.duration.ms", "group.share.min.record.lock.duration.ms",
        "group.share.max.record.lock.duration.ms", at_least=1000),
    "share.auto.offset.reset": GroupConfigKey(
        STRING, None, None, None, default="latest", choices=("latest", "earliest")),
    "share.delivery.count.limit": GroupConfigKey(
        INT, "group.share.delivery.count.limit", None, None, at_least=2),
    "share.isolation.level": GroupConfigKey(
        STRING, None, None, None, default="read_uncommitted",
        choices=("read_committed", "read_uncommitted")),
}
# Kafka's validateValues order: each bounded key, then session above heartbeat.
_BOUNDED = ("consumer.heartbeat.interval.ms", "consumer.session.timeout.ms",
            "share.heartbeat.interval.ms", "share.session.timeout.ms",
            "share.record.lock.duration.ms")
_SESSION_ABOVE_HEARTBEAT = (("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"),
                            ("share.session.timeout.ms", "share.heartbeat.interval.ms"))


def _invalid(message: str) -> ServiceError:
    return ServiceError(ErrorCode.invalid_config, message)


class GroupConfigService:
    """Every group's own configs, durable in ``log.dirs``."""

    def __init__(self, config: Any) -> None:
        self._config = config
        self._path = Path(config.log_dirs) / GROUP_CONFIGS_FILE
        self.overrides: dict[str, dict[str, str]] = {}
        # group id -> (session timeout ms, heartbeat interval ms) of groups that set either: the
        # group coordinator reads this map (CoordinatorConfig.group_overrides)
        self.consumer_overrides: dict[str, tuple[int, int]] = {}
        # the same for share groups (share.session.timeout.ms, share.heartbeat.interval.ms)
        self.share_overrides: dict[str, tuple[int, int]] = {}

    def load(self) -> None:
        """The stored group configs (before the group coordinator loads)."""
        data = read_config_file(self._path)
        if data is None:
            return
        self.overrides = {str(g): {str(k): str(v) for k, v in values.items()}
                          for g, values in data.get("groups", {}).items()}
        for group_id in self.overrides:
            self._publish(group_id)

    # Values --------------------------------------------------------------------------------------
    def _broker(self, key: str) -> str:
        value = self._config.get(key)
        return value if value is not None else _SHARE_DEFAULTS[key]

    def default(self, name: str) -> str:
        spec = GROUP_CONFIG_KEYS[name]
        return self._broker(spec.default_key) if spec.default_key else spec.default

    def effective(self, group_id: str) -> dict[str, str]:
        own = self.overrides.get(group_id, {})
        return {name: own.get(name, self.default(name)) for name in GROUP_CONFIG_KEYS}

    def _publish(self, group_id: str) -> None:
        own = self.overrides.get(group_id, {})
        if "consumer.session.timeout.ms" in own or "consumer.heartbeat.interval.ms" in own:
            values = self.effective(group_id)
            self.consumer_overrides[group_id] = (int(values["consumer.session.timeout.ms"]),
                                                 int(values["consumer.heartbeat.interval.ms"]))
        else:
            self.consumer_overrides.pop(group_id, None)
        if "share.session.timeout.ms" in own or "share.heartbeat.interval.ms" in own:
            values = self.effective(group_id)
            self.share_overrides[group_id] = (int(values["share.session.timeout.ms"]),
                                              int(values["share.heartbeat.interval.ms"]))
        else:
            self.share_overrides.pop(group_id, None)

    # Describe ------------------------------------------------------------------------------------
    def entries(self, group_id: str, keys: set[str] | None) -> list[dict[str, Any]]:
        if not group_id:
            raise ServiceError(ErrorCode.invalid_request, "Group name must not be empty")
        own = self.overrides.get(group_id, {})
        out = []
        for name, spec in sorted(GROUP_CONFIG_KEYS.items()):
            if keys is not None and name not in keys:
                continue
            synonyms = [(name, own[name], GROUP_CONFIG_SOURCE)] if name in own else []
            value = own.get(name, self.default(name))
            out.append(dict(name=name, value=value, type=spec.type, read_only=False,
                            source=GROUP_CONFIG_SOURCE if name in own else DEFAULT_CONFIG,
                            synonyms=synonyms))
        return out

    # Alter ---------------------------------------------------------------------------------------
    async def alter(self, group_id: str,
                    change: Callable[[dict[str, str]], Mapping[str, str | None]],
                    *, validate_only: bool) -> None:
        if not group_id:
            raise ServiceError(ErrorCode.invalid_request, "Group name must not be empty")
        proposed = {k: v for k, v in change(dict(self.overrides.get(group_id, {}))).items()}
        own = self._validate(proposed)
        if validate_only:
            return
        if own:
            self.overrides[group_id] = own
        else:
            self.overrides.pop(group_id, None)
        data = {"version": 1, "groups": dict(sorted(self.overrides.items()))}
        await write_config_file(self._path, data)
        self._publish(group_id)
        log.info("group %s configs: %s", group_id, own)

    def _validate(self, proposed: Mapping[str, str | None]) -> dict[str, str]:
        """Kafka's GroupConfig.validate over the group's new configs and the defaults."""
        for name in proposed:
            if name not in GROUP_CONFIG_KEYS:
                raise _invalid(f"Unknown group config name: {name}")
        own: dict[str, str] = {}
        for name, raw in proposed.items():
            spec = GROUP_CONFIG_KEYS[name]
            if raw is None:
                raise ServiceError(ErrorCode.invalid_request,
                                   f"Null value not supported for : {name}")
            value = raw.strip()
            if spec.type == INT:
                try:
                    number = int(value)
                except ValueError:
                    raise _invalid(f"Invalid value {raw} for configuration {name}: "
                                   "Not a number of type INT") from None
                if not -(2**31) <= number < 2**31:
                    raise _invalid(f"Invalid value {raw} for configuration {name}: "
                                   "Not a number of type INT")
                if number < spec.at_least:
                    raise _invalid(f"Invalid value {raw} for configuration {name}: "
                                   f"Value must be at least {spec.at_least}")
            elif spec.choices and value not in spec.choices:
                raise _invalid(f"Invalid value {raw} for configuration {name}: "
                               f"String must be one of: {', '.join(spec.choices)}")
            own[name] = value
        values = {name: own.get(name, self.default(name)) for name in GROUP_CONFIG_KEYS}
        for name in _BOUNDED:
            spec = GROUP_CONFIG_KEYS[name]
            number = int(values[name])
            assert spec.low_key is not None and spec.high_key is not None
            if number < int(self._broker(spec.low_key)):
                raise _invalid(f"{name} must be greater than or equal to {spec.low_key}")
            if number > int(self._broker(spec.high_key)):
                raise _invalid(f"{name} must be less than or equal to {spec.high_key}")
        for session, heartbeat in _SESSION_ABOVE_HEARTBEAT:
            if int(values[session]) <= int(values[heartbeat]):
                raise _invalid(f"{session} must be greater than {heartbeat}")
        return own
